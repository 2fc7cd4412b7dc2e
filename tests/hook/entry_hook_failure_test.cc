// An entry hook whose jump cannot be written (a page mapped read-only from a read-only file, as
// the vdso is): install fails with the reason, and the hook registry stays usable.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "core/hook/entry_hook.h"

namespace memprof::hook {
namespace {

int replacement(int) { return -1; }

// mov %edi,%eax ; add $1,%eax ; ret: five bytes before the return, room for the jump.
constexpr uint8_t kPlusOne[] = {0x89, 0xf8, 0x83, 0xc0, 0x01, 0xc3, 0xcc, 0xcc};

TEST(EntryHookFailure, AJumpThatCannotBeWrittenFailsAndTheRegistryStaysUsable) {
  const std::string path = ::testing::TempDir() + "/memprof_readonly_code.bin";
  {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, kPlusOne, sizeof kPlusOne), static_cast<ssize_t>(sizeof kPlusOne));
    ::close(fd);
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  // Shared and from a read-only descriptor: mprotect cannot make it writable.
  void* code = ::mmap(nullptr, 4096, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0);
  ::close(fd);
  ::unlink(path.c_str());
  if (code == MAP_FAILED) GTEST_SKIP() << "cannot map executable code from " << path << " (noexec?)";
  ASSERT_EQ(reinterpret_cast<int (*)(int)>(code)(41), 42);

  // Before: the failed install destroyed its half-made hook while holding the registry lock,
  // whose destructor took that lock again: the caller hung for good (the agent, on a vdso
  // function). Run where a hang shows as a failure, not as a test that never ends.
  auto attempt = [code] {
    auto hook = EntryHook::install(code, reinterpret_cast<void*>(&replacement));
    return hook.ok() ? std::string("installed") : hook.message();
  };
  std::packaged_task<std::string()> first(attempt);
  std::future<std::string> result = first.get_future();
  std::thread(std::move(first)).detach();
  ASSERT_EQ(result.wait_for(std::chrono::seconds(20)), std::future_status::ready) << "install hung";
  const std::string message = result.get();
  EXPECT_NE(message, "installed");
  EXPECT_NE(message.find("Permission denied"), std::string::npos) << message;
  // The registry lock is free: a second try answers too, and the code is untouched.
  EXPECT_NE(attempt(), "installed");
  EXPECT_EQ(reinterpret_cast<int (*)(int)>(code)(41), 42);
  ::munmap(code, 4096);
}

}  // namespace
}  // namespace memprof::hook
