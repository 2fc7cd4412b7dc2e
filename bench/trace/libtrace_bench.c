// The traced function of the `memprof trace` benchmark (bench/trace/run.rb). It lives in a
// shared library so that the target calls it through the PLT, as a program calls libc or
// libsqlite3: the form ltrace traces (it breaks on PLT slots) and uftrace records without -pg.
// Exported, so memprof can hook its entry and bpftrace can put a uprobe on it.
#include <stdint.h>

// Written at each call: the work has a side effect the compiler must keep, and a few
// nanoseconds of it, so the untraced per-call time is a call's plus a little, not zero.
volatile uint32_t trace_bench_sink;

__attribute__((visibility("default"), noinline)) int bench_work(int n, const char* tag) {
  // FNV-1a over the tag's first bytes, mixed with n: depends on both arguments.
  uint32_t h = 2166136261u ^ (uint32_t)n;
  for (const char* p = tag; *p != '\0' && p < tag + 8; ++p) {
    h = (h ^ (uint8_t)*p) * 16777619u;
  }
  trace_bench_sink = h;
  return (int)(h & 0x7fffffff);
}
