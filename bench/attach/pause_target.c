// The benchmark's target: the main thread loops, noting the largest gap between two iterations
// (how long it was held by an injector, plus scheduling noise); a control thread answers stdin:
//   "reset"  -> forget the largest gap
//   "report" -> "gap MICROSECONDS"
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static long long largest_gap_ns;
static volatile int reset_requested;

static long long now_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec * 1000000000LL + now.tv_nsec;
}

static void* control(void* unused) {
  (void)unused;
  char line[64];
  while (fgets(line, sizeof(line), stdin) != NULL) {
    if (strncmp(line, "reset", 5) == 0) {
      reset_requested = 1;
      while (reset_requested) {
      }
      printf("reset\n");
    } else if (strncmp(line, "report", 6) == 0) {
      printf("gap %lld\n", __atomic_load_n(&largest_gap_ns, __ATOMIC_RELAXED) / 1000);
    }
    fflush(stdout);
  }
  return NULL;
}

int main(void) {
  pthread_t thread;
  pthread_create(&thread, NULL, control, NULL);
  printf("ready\n");
  fflush(stdout);
  long long last = now_ns();
  for (;;) {
    long long now = now_ns();
    if (reset_requested) {
      largest_gap_ns = 0;
      reset_requested = 0;
    } else if (now - last > largest_gap_ns) {
      __atomic_store_n(&largest_gap_ns, now - last, __ATOMIC_RELAXED);
    }
    last = now;
  }
}
