#include "core/proc/remote_memory.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "core/util/scoped_fd.h"

namespace memprof::proc {
namespace {

const uint64_t kMarker = 0x1122334455667788;

TEST(RemoteMemory, ReadsValuesAndStrings) {
  RemoteMemory memory(::getpid());
  auto value = memory.read_value<uint64_t>(reinterpret_cast<uint64_t>(&kMarker));
  ASSERT_TRUE(value.ok()) << value.message();
  EXPECT_EQ(*value, kMarker);
  static const char text[] = "memprof remote string";
  auto read = memory.read_cstring(reinterpret_cast<uint64_t>(text));
  ASSERT_TRUE(read.ok()) << read.message();
  EXPECT_EQ(*read, text);
}

TEST(RemoteMemory, UnmappedAddressIsAnError) {
  RemoteMemory memory(::getpid());
  auto value = memory.read_value<uint64_t>(0x10);
  ASSERT_FALSE(value.ok());
  EXPECT_EQ(value.message(), fmt::format("process {}: cannot read 8 bytes at 0x10: Bad address", ::getpid()));
}

// A string that ends right before an unreadable page is read; one that runs into it is an error.
TEST(RemoteMemory, StringsNextToAnUnreadablePage) {
  long page = ::sysconf(_SC_PAGESIZE);
  void* base = ::mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(base, MAP_FAILED);
  ScopedMmap mapping(base, 2 * page);
  auto* bytes = static_cast<char*>(base);
  ASSERT_EQ(::mprotect(bytes + page, page, PROT_NONE), 0);
  std::memset(bytes, 'a', page);
  bytes[page - 1] = '\0';
  RemoteMemory memory(::getpid());
  auto fits = memory.read_cstring(reinterpret_cast<uint64_t>(bytes + page - 300));
  ASSERT_TRUE(fits.ok()) << fits.message();
  EXPECT_EQ(*fits, std::string(299, 'a'));

  bytes[page - 1] = 'a';
  auto runs_over = memory.read_cstring(reinterpret_cast<uint64_t>(bytes + page - 300), 8192);
  ASSERT_FALSE(runs_over.ok());
  EXPECT_EQ(runs_over.message(),
            fmt::format("process {}: cannot read 256 bytes at {:#x}: Bad address", ::getpid(),
                        reinterpret_cast<uint64_t>(bytes + page)));
  auto too_long = memory.read_cstring(reinterpret_cast<uint64_t>(bytes), 100);
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.message(), fmt::format("process {}: string at {:#x} longer than 100 bytes",
                                            ::getpid(), reinterpret_cast<uint64_t>(bytes)));
}

}  // namespace
}  // namespace memprof::proc
