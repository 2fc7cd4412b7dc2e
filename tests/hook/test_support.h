// Helpers shared by the hook tests: memory and protection snapshots that tell whether an
// uninstall put back exactly what was there.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace memprof::hook::testing {

// Bytes and per-page protections of a range of memory.
struct Snapshot {
  uintptr_t start = 0;
  std::vector<uint8_t> bytes;
  std::vector<int> protections;  // one per page
  bool operator==(const Snapshot&) const = default;
};

Snapshot snapshot(uintptr_t start, size_t size);

// Snapshots of every non-executable PT_LOAD segment (GOT, RELRO, data) of the loaded object
// whose path ends with `suffix`; empty when no such object is loaded.
std::vector<Snapshot> data_segments(std::string_view suffix);

// Page protection of `address`, -1 when unmapped.
int protection_of(const void* address);

std::string base_name(std::string_view path);

// /proc/self/exe resolved: the name GotHook gives the main program.
std::string program_path();

// The GOT slots (JUMP_SLOT and GLOB_DAT) naming `symbol` in the loaded object whose path ends
// with `suffix`, read from its ELF file on disk with memprof_elf and moved by the load bias: an
// oracle that does not share the hook engine's reading of the in-memory dynamic section.
std::vector<void**> got_slots_from_file(std::string_view suffix, std::string_view symbol);

// The bytes of the .got and .got.plt sections of that object, located through its file's section
// headers; empty when it is not loaded.
std::vector<uint8_t> got_bytes(std::string_view suffix);

// dlopen(RTLD_NOW | RTLD_LOCAL) or a failed gtest assertion's message through `error`.
void* open_library(const char* path, std::string* error);

// A second thread that stays alive (blocked) until destroyed, so the process is multi-threaded.
class ParkedThread {
 public:
  ParkedThread()
      : thread_([this] {
          std::unique_lock lock(mutex_);
          cv_.wait(lock, [this] { return done_; });
        }) {}
  ~ParkedThread() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace memprof::hook::testing
