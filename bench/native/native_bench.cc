// The native engine's cost, in this process: ns per malloc+free pair of 16..256 bytes (and per
// operator new+delete and strdup+free pair of 64) without a session and with one (every block recorded and removed, its site counted), one thread and two;
// and the engine's memory per live block with 1M blocks live. Run: build/bench/native/native_bench
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "native/native_session.h"

namespace {

using memprof::native::NativeSession;

std::unique_ptr<NativeSession> must_start(uint32_t stack_depth = 1) {
  auto session = NativeSession::start({.attribution = {.stack_depth = stack_depth}});
  if (!session.ok()) {
    std::fprintf(stderr, "native_bench: %s\n", session.message().c_str());
    std::exit(1);
  }
  return std::move(*session);
}

// The pair measured: the pointer escapes, so the compiler keeps both calls.
void malloc_free_loop(benchmark::State& state) {
  const auto size = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    void* block = std::malloc(size);
    benchmark::DoNotOptimize(block);
    std::free(block);
  }
}

void BM_MallocFree_Untracked(benchmark::State& state) { malloc_free_loop(state); }
BENCHMARK(BM_MallocFree_Untracked)->RangeMultiplier(2)->Range(16, 256);

void BM_MallocFree_Tracked(benchmark::State& state) {
  auto session = must_start();
  malloc_free_loop(state);
}
BENCHMARK(BM_MallocFree_Tracked)->RangeMultiplier(2)->Range(16, 256);

// operator new + delete, as a C++ program allocates: new's own hook hands its caller to malloc's.
void new_delete_loop(benchmark::State& state) {
  const auto size = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    void* block = ::operator new(size);
    benchmark::DoNotOptimize(block);
    ::operator delete(block);
  }
}
void BM_NewDelete_Untracked(benchmark::State& state) { new_delete_loop(state); }
BENCHMARK(BM_NewDelete_Untracked)->Arg(64);
void BM_NewDelete_Tracked(benchmark::State& state) {
  auto session = must_start();
  new_delete_loop(state);
}
BENCHMARK(BM_NewDelete_Tracked)->Arg(64);

// strdup + free: the malloc inside libc is charged to strdup's caller, found by unwinding
// (libunwind when it is installed, else glibc's backtrace).
void strdup_free_loop(benchmark::State& state) {
  const std::string text(static_cast<size_t>(state.range(0)) - 1, 'x');
  for (auto _ : state) {
    char* copy = ::strdup(text.c_str());
    benchmark::DoNotOptimize(copy);
    std::free(copy);
  }
}
void BM_StrdupFree_Untracked(benchmark::State& state) { strdup_free_loop(state); }
BENCHMARK(BM_StrdupFree_Untracked)->Arg(64);
void BM_StrdupFree_Tracked(benchmark::State& state) {
  auto session = must_start();
  strdup_free_loop(state);
}
BENCHMARK(BM_StrdupFree_Tracked)->Arg(64);

// With stacks of N frames (--stack N): libunwind walks the benchmark's own ~10 frames.
void BM_MallocFree_TrackedWithStack(benchmark::State& state) {
  auto session = must_start(static_cast<uint32_t>(state.range(1)));
  malloc_free_loop(state);
}
BENCHMARK(BM_MallocFree_TrackedWithStack)->Args({64, 4})->Args({64, 8})->Args({64, 16})->Args({64, 32});

// Two threads at once (the machine has 2 cores): the shared counters and stripe locks meet.
std::unique_ptr<NativeSession> g_shared_session;
void BM_MallocFree_Tracked2Threads(benchmark::State& state) {
  if (state.thread_index() == 0) g_shared_session = must_start();
  malloc_free_loop(state);  // the benchmark's barrier orders the start before the loop
  if (state.thread_index() == 0) g_shared_session.reset();
}
BENCHMARK(BM_MallocFree_Tracked2Threads)->Arg(64)->Threads(2)->UseRealTime();
void BM_MallocFree_Untracked2Threads(benchmark::State& state) { malloc_free_loop(state); }
BENCHMARK(BM_MallocFree_Untracked2Threads)->Arg(64)->Threads(2)->UseRealTime();

// 1M live blocks of 32 bytes: the engine's mapped bytes per live block (the whole engine, and
// the live-block table alone), and ns per tracked malloc while the table grows.
void BM_MemoryPerLiveBlock(benchmark::State& state) {
  const auto blocks = static_cast<size_t>(state.range(0));
  std::vector<void*> live(blocks);
  for (auto _ : state) {
    auto session = must_start();
    for (size_t i = 0; i < blocks; ++i) live[i] = std::malloc(32);
    state.PauseTiming();
    memprof::native::NativeSnapshot snapshot = session->snapshot();
    const auto entries = static_cast<double>(snapshot.totals.table_entries);
    state.counters["live_blocks"] = static_cast<double>(snapshot.totals.live_blocks);
    state.counters["engine_bytes_per_block"] = static_cast<double>(snapshot.totals.engine_bytes) / entries;
    state.counters["table_bytes_per_block"] = static_cast<double>(snapshot.totals.block_table_bytes) / entries;
    for (void* block : live) std::free(block);
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * blocks));
}
BENCHMARK(BM_MemoryPerLiveBlock)->Arg(1 << 20)->Arg(1000000)->Iterations(3)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
