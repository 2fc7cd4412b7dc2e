// The program `memprof trace` is measured on (bench/trace/run.rb): it calls bench_work, in
// libtrace_bench.so, through the PLT in a loop and times the loop with CLOCK_MONOTONIC.
//   trace_bench_target [CALLS]   CALLS calls (default 200000), then prints
//                                  loop_ns TOTAL / per_call_ns X / checksum C
//   trace_bench_target --forever [CALLS]
//                                prints "ready", then chunks of CALLS calls forever, a line
//                                  chunk_per_call_ns X  after each (flushed), so a reader sees
//                                  the cost before, while and after a tracer is attached.
// The loop's time includes only the calls; the clock is read outside it (chunk mode: once per
// chunk), so a tracer's cost per call is (traced loop - untraced loop) / CALLS.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int bench_work(int n, const char* tag);

static long long now_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec * 1000000000LL + now.tv_nsec;
}

// A tag string per call that tracers with a "string" prototype copy (the capture is measured).
static const char* const tags[4] = {"alpha", "bravo", "charlie", "delta"};

static long long run(long calls, unsigned* checksum) {
  long long start = now_ns();
  for (long i = 0; i < calls; ++i) {
    *checksum += (unsigned)bench_work((int)i, tags[i & 3]);
  }
  return now_ns() - start;
}

int main(int argc, char** argv) {
  int forever = argc > 1 && strcmp(argv[1], "--forever") == 0;
  long calls = 200000;
  if (argc > 1 + forever) {
    calls = strtol(argv[1 + forever], NULL, 10);
  }
  if (calls <= 0) {
    fprintf(stderr, "usage: %s [--forever] [CALLS > 0]\n", argv[0]);
    return 2;
  }
  unsigned checksum = 0;
  if (forever) {
    printf("ready\n");
    fflush(stdout);
    for (;;) {
      long long ns = run(calls, &checksum);
      printf("chunk_per_call_ns %.2f\n", (double)ns / (double)calls);
      fflush(stdout);
    }
  }
  long long ns = run(calls, &checksum);
  printf("loop_ns %lld\nper_call_ns %.2f\nchecksum %u\n", ns, (double)ns / (double)calls,
         checksum);
  return 0;
}
