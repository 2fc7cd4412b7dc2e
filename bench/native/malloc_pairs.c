// The C program bench/native/run.rb measures native-memory trackers on (memprof native,
// heaptrack), timed inside the program so that a tool's start-up and its work at exit are not
// counted:
//   native_malloc_pairs [--pairs N] [--live M] [--hold-ms T]
// First M blocks are allocated and kept (live until exit, never freed: a tracker sees them as
// leaked), then N malloc+free pairs run, each block freed right after it is allocated. Sizes
// vary over 8..256 bytes (a fixed pseudo-random cycle of 256 sizes, the same in every run).
// Prints, one "key value" per line (times: wall, and this process's CPU time):
//   live_blocks M / live_ns_per_malloc X / live_cpu_ns_per_malloc X
//                                            the kept blocks' phase (omitted when M is 0)
//   pairs N / pair_ns X / pair_cpu_ns X      ns per malloc+free pair (omitted when N is 0)
//   vm_hwm_kb K / vm_rss_kb K                this process's peak and current resident set
//                                            (/proc/self/status), read with the M blocks live
// then waits T ms (default 0) before exiting, so that a tracker's other processes can catch
// up with the live set while it is still held (bench/native/run.rb samples their memory).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { SIZE_CYCLE = 256 };

static size_t sizes[SIZE_CYCLE];

static long long clock_ns(clockid_t clock) {
  struct timespec now;
  clock_gettime(clock, &now);
  return now.tv_sec * 1000000000LL + now.tv_nsec;
}

// Wall (CLOCK_MONOTONIC) and this process's CPU time (every thread, user + system).
struct stamp {
  long long wall, cpu;
};
static struct stamp now(void) {
  return (struct stamp){clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_PROCESS_CPUTIME_ID)};
}

// The block escapes (to the compiler), so neither the malloc nor the free can be left out.
static inline void escape(void* block) { __asm__ volatile("" : : "r"(block) : "memory"); }

static void fill_sizes(void) {
  uint32_t x = 2463534242u;  // xorshift32, fixed seed
  for (int i = 0; i < SIZE_CYCLE; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    sizes[i] = 8 + x % 249;  // 8..256
  }
}

// Prints the line of /proc/self/status that starts with key ("VmHWM:") as "name value".
static void print_status(const char* key, const char* name) {
  FILE* status = fopen("/proc/self/status", "r");
  if (status == NULL) return;
  char line[256];
  size_t key_length = strlen(key);
  while (fgets(line, sizeof line, status) != NULL) {
    if (strncmp(line, key, key_length) == 0) {
      printf("%s %ld\n", name, strtol(line + key_length, NULL, 10));
      break;
    }
  }
  fclose(status);
}

static long parse_count(const char* text, const char* option) {
  char* end = NULL;
  long value = strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < 0) {
    fprintf(stderr, "native_malloc_pairs: %s wants a number >= 0, not '%s'\n", option, text);
    exit(2);
  }
  return value;
}

int main(int argc, char** argv) {
  long pairs = 10000000;
  long live = 0;
  long hold_ms = 0;
  for (int i = 1; i < argc; ++i) {
    if (i + 1 < argc && strcmp(argv[i], "--pairs") == 0) {
      pairs = parse_count(argv[++i], "--pairs");
    } else if (i + 1 < argc && strcmp(argv[i], "--live") == 0) {
      live = parse_count(argv[++i], "--live");
    } else if (i + 1 < argc && strcmp(argv[i], "--hold-ms") == 0) {
      hold_ms = parse_count(argv[++i], "--hold-ms");
    } else {
      fprintf(stderr, "usage: native_malloc_pairs [--pairs N] [--live M] [--hold-ms T]\n");
      return 2;
    }
  }
  fill_sizes();

  // The array holding the kept blocks is mmap'ed by glibc (one big malloc), counted in both
  // the plain and the tracked run alike.
  void** kept = NULL;
  if (live > 0) {
    kept = malloc((size_t)live * sizeof *kept);
    if (kept == NULL) {
      fprintf(stderr, "native_malloc_pairs: no memory for %ld pointers\n", live);
      return 1;
    }
    struct stamp start = now();
    for (long i = 0; i < live; ++i) {
      kept[i] = malloc(sizes[i % SIZE_CYCLE]);
      if (kept[i] == NULL) {
        fprintf(stderr, "native_malloc_pairs: malloc failed at block %ld\n", i);
        return 1;
      }
      escape(kept[i]);
    }
    struct stamp end = now();
    printf("live_blocks %ld\nlive_ns_per_malloc %.2f\nlive_cpu_ns_per_malloc %.2f\n", live,
           (double)(end.wall - start.wall) / (double)live, (double)(end.cpu - start.cpu) / (double)live);
  }

  if (pairs > 0) {
    struct stamp start = now();
    for (long i = 0; i < pairs; ++i) {
      void* block = malloc(sizes[i % SIZE_CYCLE]);
      escape(block);
      free(block);
    }
    struct stamp end = now();
    printf("pairs %ld\npair_ns %.2f\npair_cpu_ns %.2f\n", pairs, (double)(end.wall - start.wall) / (double)pairs,
           (double)(end.cpu - start.cpu) / (double)pairs);
  }

  print_status("VmHWM:", "vm_hwm_kb");
  print_status("VmRSS:", "vm_rss_kb");
  fflush(stdout);
  if (hold_ms > 0) {
    struct timespec hold = {hold_ms / 1000, (hold_ms % 1000) * 1000000L};
    while (nanosleep(&hold, &hold) != 0) {
    }
  }
  escape(kept);
  return 0;  // the kept blocks stay allocated: live at exit
}
