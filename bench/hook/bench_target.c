/* libhook_bench_target.so: the callee of the PLT-call benchmarks (same work as the local
   targets in hook_bench.cc). */
__attribute__((noinline)) int bench_add(int a, int b) { return (a ^ 0x5a5a) + b; }
