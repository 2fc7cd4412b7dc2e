// What a stack costs per allocation, to choose `memprof native --stack`'s default
// (docs/native.md): the three ways to walk 16 frames from 24 nested calls --
//   frame pointers: cheapest, but Debian builds its libraries without them (libc, libruby),
//                   so in a real process the walk stops (or goes wrong) at the first such frame;
//   unw_backtrace:  libunwind, with its per-thread cache of frame kinds (what memprof uses);
//   _Unwind_Backtrace: libgcc's, which parses the unwind tables on every call.
// Built with frame pointers so that the first one is measured on a stack where it works.
// Run: build/bench/native/stack_capture_bench
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <unwind.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

constexpr int kFrames = 16;
constexpr int kNesting = 24;
void* g_buffer[64];

__attribute__((noinline)) int frame_pointer_walk() {
  auto** frame = static_cast<void**>(__builtin_frame_address(0));
  int count = 0;
  while (count < kFrames && frame != nullptr) {
    g_buffer[count++] = frame[1];
    auto** next = static_cast<void**>(frame[0]);
    if (next <= frame) break;
    frame = next;
  }
  return count;
}

int (*g_unw_backtrace)(void**, int) = nullptr;

struct Walk {
  int count;
};
_Unwind_Reason_Code on_frame(_Unwind_Context* context, void* argument) {
  auto* walk = static_cast<Walk*>(argument);
  if (walk->count >= kFrames) return _URC_END_OF_STACK;
  g_buffer[walk->count++] = reinterpret_cast<void*>(_Unwind_GetIP(context));
  return _URC_NO_REASON;
}

int libgcc_walk() {
  Walk walk{0};
  _Unwind_Backtrace(on_frame, &walk);
  return walk.count;
}

// kNesting real frames above the walk.
template <typename Walker>
__attribute__((noinline)) int nested(int depth, Walker walker) {
  int count = depth == 0 ? walker() : nested(depth - 1, walker);
  benchmark::DoNotOptimize(count);
  return count;
}

template <typename Walker>
void measure(benchmark::State& state, Walker walker) {
  int frames = 0;
  for (auto _ : state) frames = nested(kNesting, walker);
  state.counters["frames"] = frames;
}

void BM_FramePointers(benchmark::State& state) { measure(state, frame_pointer_walk); }
BENCHMARK(BM_FramePointers);

void BM_UnwBacktrace(benchmark::State& state) {
  if (g_unw_backtrace == nullptr) {
    void* library = ::dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (library != nullptr) g_unw_backtrace = reinterpret_cast<int (*)(void**, int)>(::dlsym(library, "unw_backtrace"));
  }
  if (g_unw_backtrace == nullptr) return state.SkipWithError("libunwind.so.8 not found");
  measure(state, [] { return g_unw_backtrace(g_buffer, kFrames); });
}
BENCHMARK(BM_UnwBacktrace);

void BM_LibgccUnwindBacktrace(benchmark::State& state) { measure(state, libgcc_walk); }
BENCHMARK(BM_LibgccUnwindBacktrace);

}  // namespace

BENCHMARK_MAIN();
