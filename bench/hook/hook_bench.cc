// ns per call: a plain direct call, a call through the PLT, and the same calls with each hook
// kind installed and an empty hook (the replacement only forwards to the original). Also the
// cost of installing and removing each kind. Run: build/bench/hook/hook_bench
#include <benchmark/benchmark.h>

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <limits.h>
#include <string>
#include <unistd.h>

#include "core/hook/call_site_hook.h"
#include "core/hook/entry_hook.h"
#include "core/hook/got_hook.h"

extern "C" int bench_add(int a, int b);

namespace {

using memprof::hook::CallSiteHook;
using memprof::hook::EntryHook;
using memprof::hook::GotHook;
using memprof::hook::GotHookOptions;

// One target per measurement so a hook on one never slows another. noipa: the compiler must
// emit a real call and know nothing about the callee. The xor makes the body long enough for an
// entry hook's 5-byte jump (a bare `lea; ret` is 4 bytes); every target does the same work.
__attribute__((noipa)) int plain_add(int a, int b) { return (a ^ 0x5a5a) + b; }
__attribute__((noipa)) int entry_target_add(int a, int b) { return (a ^ 0x5a5a) + b; }
__attribute__((noipa)) int call_site_target_add(int a, int b) { return (a ^ 0x5a5a) + b; }

int (*original_add)(int, int) = nullptr;
int forward_add(int a, int b) { return original_add(a, b); }

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "hook_bench: %s\n", message.c_str());
  std::exit(1);
}

std::string program_path() {
  char buffer[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof buffer);
  return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : std::string();
}

// The benchmark program embeds memprof_hook, so its own GOT is selected explicitly.
GotHookOptions this_program() {
  return {.object_filter = [path = program_path()](std::string_view p) { return p == path; },
          .follow_dlopen = false,
          .publish_original = reinterpret_cast<void**>(&original_add)};
}

template <int (*Call)(int, int)>
void run_calls(benchmark::State& state) {
  int value = 0;
  for (auto _ : state) {
    value = Call(value, 1);
    benchmark::DoNotOptimize(value);
  }
}

int call_plain(int a, int b) { return plain_add(a, b); }
int call_plt(int a, int b) { return bench_add(a, b); }
int call_entry_target(int a, int b) { return entry_target_add(a, b); }
int call_call_site_target(int a, int b) { return call_site_target_add(a, b); }

void BM_PlainCall(benchmark::State& state) { run_calls<call_plain>(state); }
void BM_PltCall(benchmark::State& state) { run_calls<call_plt>(state); }

void BM_GotHook(benchmark::State& state) {
  auto hook = GotHook::install("bench_add", reinterpret_cast<void*>(&forward_add), this_program());
  if (!hook.ok()) die(hook.message());
  run_calls<call_plt>(state);
}

void BM_EntryHook(benchmark::State& state) {
  auto hook = EntryHook::install(reinterpret_cast<void*>(&entry_target_add),
                                 reinterpret_cast<void*>(&forward_add),
                                 {.publish_original = reinterpret_cast<void**>(&original_add)});
  if (!hook.ok()) die(hook.message());
  run_calls<call_entry_target>(state);
}

void BM_CallSiteHook(benchmark::State& state) {
  original_add = &call_site_target_add;
  auto hook = CallSiteHook::install(reinterpret_cast<void*>(&call_site_target_add),
                                    reinterpret_cast<void*>(&forward_add));
  if (!hook.ok()) die(hook.message());
  run_calls<call_call_site_target>(state);
}

void BM_GotHookInstallRemove(benchmark::State& state) {
  for (auto _ : state) {
    auto hook = GotHook::install("bench_add", reinterpret_cast<void*>(&forward_add), this_program());
    if (!hook.ok()) die(hook.message());
  }
}

void BM_EntryHookInstallRemove(benchmark::State& state) {
  for (auto _ : state) {
    auto hook = EntryHook::install(reinterpret_cast<void*>(&entry_target_add),
                                   reinterpret_cast<void*>(&forward_add));
    if (!hook.ok()) die(hook.message());
  }
}

void BM_CallSiteHookInstallRemove(benchmark::State& state) {
  for (auto _ : state) {
    auto hook = CallSiteHook::install(reinterpret_cast<void*>(&call_site_target_add),
                                      reinterpret_cast<void*>(&forward_add));
    if (!hook.ok()) die(hook.message());
  }
}

// Decoding a large real object: Debian's libruby (about 3 MB of code), opened here if installed,
// searched for direct calls of rb_ary_new (it finds none: libruby calls its exported functions
// through its PLT; the cost of the sweep is what is measured).
void BM_CallSiteScanLibruby(benchmark::State& state) {
  void* libruby = ::dlopen("libruby-3.1.so.3.1", RTLD_NOW | RTLD_LOCAL);
  if (libruby == nullptr) {
    state.SkipWithError("libruby-3.1.so.3.1 is not installed");
    return;
  }
  void* target = ::dlsym(libruby, "rb_ary_new");
  for (auto _ : state) {
    auto found = CallSiteHook::find_sites(target);
    benchmark::DoNotOptimize(found);
  }
  ::dlclose(libruby);
}

BENCHMARK(BM_PlainCall);
BENCHMARK(BM_PltCall);
BENCHMARK(BM_GotHook);
BENCHMARK(BM_EntryHook);
BENCHMARK(BM_CallSiteHook);
BENCHMARK(BM_GotHookInstallRemove)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_EntryHookInstallRemove)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CallSiteHookInstallRemove)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CallSiteScanLibruby)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
