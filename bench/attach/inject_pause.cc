// How long a running program is held when a library is loaded into it: memprof's injector (one
// thread stopped, at a safe moment) against gdb (`gdb -p PID -batch -ex 'call dlopen(...)'`,
// which stops every thread while it starts, reads symbols and calls).
//
// The target (pause_target.c) records the largest gap between two iterations of its main loop.
// Each round resets it, loads a fresh copy of a trivial library (a copy: the loader would
// otherwise just count references) and reads the gap. A baseline round loads nothing.
//
//   build/bench/attach/inject_pause [ROUNDS]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "inject/inject.h"
#include "proc/subprocess.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using memprof::testing::ChildProcess;
using memprof::testing::run_command;

struct Sample {
  double gap_ms = 0;   // the target's largest gap while loading
  double wall_ms = 0;  // how long the loading took, seen from outside
  bool ok = true;
};

class Target {
 public:
  Target() : child_({PAUSE_TARGET}) { ready_ = child_.read_line_within(5000) == "ready"; }
  bool ready() const { return ready_; }
  pid_t pid() const { return child_.pid(); }
  void reset() {
    child_.write_stdin("reset\n");
    child_.read_line_within(5000);
  }
  double gap_ms() {
    child_.write_stdin("report\n");
    long long micros = -1;
    std::sscanf(child_.read_line_within(5000).c_str(), "gap %lld", &micros);
    return micros / 1000.0;
  }

 private:
  ChildProcess child_;
  bool ready_ = false;
};

Sample measure(Target& target, const std::function<bool()>& load) {
  target.reset();
  auto start = Clock::now();
  Sample sample;
  sample.ok = load();
  sample.wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the loop notes its gap
  sample.gap_ms = target.gap_ms();
  return sample;
}

void print_row(const char* method, std::vector<Sample> samples) {
  int failures = static_cast<int>(std::count_if(samples.begin(), samples.end(),
                                                [](const Sample& s) { return !s.ok; }));
  auto by_gap = [](const Sample& a, const Sample& b) { return a.gap_ms < b.gap_ms; };
  std::sort(samples.begin(), samples.end(), by_gap);
  double median_wall = 0;
  for (const auto& sample : samples) median_wall += sample.wall_ms;
  median_wall /= static_cast<double>(samples.size());
  std::printf("%-28s %10.2f %10.2f %10.2f %10.1f %8d\n", method, samples.front().gap_ms,
              samples[samples.size() / 2].gap_ms, samples.back().gap_ms, median_wall, failures);
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 10;
  const fs::path directory = fs::temp_directory_path() / fmt::format("inject-pause-{}", getpid());
  fs::create_directories(directory);
  int copies = 0;
  auto fresh_library = [&] {
    fs::path copy = directory / fmt::format("lib{}.so", copies++);
    fs::copy_file(BENCH_LIB, copy);
    return copy.string();
  };

  Target target;
  if (!target.ready()) {
    std::fprintf(stderr, "the target did not start\n");
    return 1;
  }
  std::vector<Sample> baseline, memprof, gdb;
  std::vector<double> held_ms;  // the injector's own measure: InjectResult::pause
  for (int round = 0; round < rounds; ++round) {
    baseline.push_back(measure(target, [] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      return true;
    }));
    memprof.push_back(measure(target, [&] {
      auto loaded = memprof::inject::load_library(target.pid(), fresh_library());
      if (!loaded) {
        std::fprintf(stderr, "memprof: %s\n", loaded.message().c_str());
        return false;
      }
      held_ms.push_back(std::chrono::duration<double, std::milli>(loaded->pause).count());
      return true;
    }));
    gdb.push_back(measure(target, [&] {
      auto result = run_command({"gdb", "-nx", "-p", std::to_string(target.pid()), "-batch", "-ex",
                                 fmt::format("call (void*)dlopen(\"{}\", 2)", fresh_library())});
      if (result.exit_code != 0) std::fprintf(stderr, "gdb: %s\n", result.err.c_str());
      return result.exit_code == 0;
    }));
  }
  fs::remove_all(directory);

  std::printf("target's largest gap between loop iterations, %d rounds (ms)\n", rounds);
  std::printf("%-28s %10s %10s %10s %10s %8s\n", "method", "min", "median", "max", "wall avg",
              "failed");
  print_row("nothing (baseline)", baseline);
  print_row("memprof inject", memprof);
  print_row("gdb -batch call dlopen", gdb);
  if (!held_ms.empty()) {
    std::sort(held_ms.begin(), held_ms.end());
    std::printf("%-28s %10.2f %10.2f %10.2f\n", "memprof: thread held", held_ms.front(),
                held_ms[held_ms.size() / 2], held_ms.back());
  }
  std::printf("(the baseline shows the machine's own scheduling noise)\n");
  return 0;
}
