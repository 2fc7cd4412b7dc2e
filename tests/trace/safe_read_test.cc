// trace/safe_read.h on real memory: a buffer whose second page is PROT_NONE, addresses that were
// never mapped, and the formatter reading through it.
#include "trace/safe_read.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "core/util/scoped_fd.h"
#include "trace/call_format.h"

namespace memprof::trace {
namespace {

const size_t kPage = static_cast<size_t>(::sysconf(_SC_PAGESIZE));

// `readable` pages of read-write memory followed by one PROT_NONE page.
class GuardedPages {
 public:
  explicit GuardedPages(size_t readable) : readable_(readable) {
    size_t size = (readable + 1) * kPage;
    map_ = ScopedMmap(::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), size);
    EXPECT_TRUE(map_.valid());
    EXPECT_EQ(::mprotect(guard(), kPage, PROT_NONE), 0);
  }
  char* base() const { return static_cast<char*>(map_.data()); }
  char* guard() const { return base() + readable_ * kPage; }
  uint64_t address_of(const char* p) const { return reinterpret_cast<uint64_t>(p); }

 private:
  size_t readable_;
  ScopedMmap map_;
};

TEST(SafeRead, CopiesReadableMemory) {
  const char source[] = "all of this is readable";
  char out[sizeof(source)] = {};
  EXPECT_EQ(safe_read(reinterpret_cast<uint64_t>(source), out, sizeof(source)), sizeof(source));
  EXPECT_STREQ(out, source);
}

TEST(SafeRead, StopsExactlyWhereReadableMemoryEnds) {
  GuardedPages pages(1);
  std::memset(pages.base(), 'a', kPage);
  char out[64] = {};
  EXPECT_EQ(safe_read(pages.address_of(pages.guard() - 8), out, sizeof(out)), 8u);
  EXPECT_EQ(std::string(out, 8), "aaaaaaaa");
  EXPECT_EQ(safe_read(pages.address_of(pages.guard()), out, sizeof(out)), 0u);
}

// More pages than one process_vm_readv call covers, then the guard.
TEST(SafeRead, ReadsManyPagesUpToTheFirstUnreadableOne) {
  GuardedPages pages(40);
  for (size_t i = 0; i < 40 * kPage; ++i) pages.base()[i] = static_cast<char>(i % 251);
  std::string out(41 * kPage, '\0');
  ASSERT_EQ(safe_read(pages.address_of(pages.base() + 3), out.data(), out.size()), 40 * kPage - 3);
  EXPECT_EQ(std::memcmp(out.data(), pages.base() + 3, 40 * kPage - 3), 0);
}

TEST(SafeRead, NeverMappedAddressesGiveNothing) {
  char out[16];
  EXPECT_EQ(safe_read(0, out, sizeof(out)), 0u);
  EXPECT_EQ(safe_read(1, out, sizeof(out)), 0u);
  EXPECT_EQ(safe_read(0xffffffffffffff00, out, sizeof(out)), 0u);  // kernel space, and near the end
  EXPECT_EQ(safe_read(0xdead0000, out, 0), 0u);
}

TEST(SafeRead, LeavesErrnoAlone) {
  char out[16];
  errno = EAGAIN;
  EXPECT_EQ(safe_read(8, out, sizeof(out)), 0u);
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_EQ(safe_read_string(8, out, sizeof(out)).length, 0u);
  EXPECT_EQ(errno, EAGAIN);
}

TEST(SafeReadString, StopsAtTheNul) {
  const char source[] = "short\0hidden";
  char out[32];
  SafeString string = safe_read_string(reinterpret_cast<uint64_t>(source), out, sizeof(out));
  EXPECT_EQ(string.length, 5u);
  EXPECT_TRUE(string.terminated);
  EXPECT_STREQ(out, "short");
}

TEST(SafeReadString, StopsAtTheCapacity) {
  const char source[] = "longer than the buffer";
  char out[7];
  SafeString string = safe_read_string(reinterpret_cast<uint64_t>(source), out, sizeof(out));
  EXPECT_EQ(string.length, 6u);
  EXPECT_FALSE(string.terminated);
  EXPECT_STREQ(out, "longer");
  EXPECT_EQ(safe_read_string(reinterpret_cast<uint64_t>(source), out, 0).length, 0u);
}

// The string's last byte is the last readable byte and no NUL follows: the bytes, then a stop.
TEST(SafeReadString, AStringRunningIntoAnUnmappedPageEndsThere) {
  GuardedPages pages(1);
  std::memcpy(pages.guard() - 5, "edge!", 5);
  char out[64];
  SafeString string = safe_read_string(pages.address_of(pages.guard() - 5), out, sizeof(out));
  EXPECT_EQ(string.length, 5u);
  EXPECT_FALSE(string.terminated);
  EXPECT_STREQ(out, "edge!");

  // A string crossing from one readable page into the next is read whole.
  GuardedPages two(2);
  std::memset(two.base(), 'b', 2 * kPage);
  std::memcpy(two.base() + kPage - 3, "across\0", 7);
  string = safe_read_string(two.address_of(two.base() + kPage - 3), out, sizeof(out));
  EXPECT_TRUE(string.terminated);
  EXPECT_STREQ(out, "across");
}

TEST(SafeReadString, UnreadableStartGivesAnEmptyString) {
  GuardedPages pages(1);
  char out[8] = "garbage";
  SafeString string = safe_read_string(pages.address_of(pages.guard()), out, sizeof(out));
  EXPECT_EQ(string.length, 0u);
  EXPECT_FALSE(string.terminated);
  EXPECT_STREQ(out, "");
}

// The formatter with safe_read as its reader, on this process's memory (ltrace 0.7.3 printed
// s1("edge!") for the same layout).
TEST(SafeRead, ServesTheFormatter) {
  GuardedPages pages(1);
  std::memcpy(pages.guard() - 5, "edge!", 5);
  auto set = parse_prototypes("int s1(string);", "test.conf");
  ASSERT_TRUE(set.ok()) << set.message();
  CapturedCall call;
  call.returned = ReturnRegisters{};
  call.arguments.integer[0] = pages.address_of(pages.guard() - 5);
  EXPECT_EQ(format_call(set->find("s1"), call, safe_read).arguments, "\"edge!\"");
  call.arguments.integer[0] = pages.address_of(pages.guard());
  EXPECT_EQ(format_call(set->find("s1"), call, safe_read).arguments, fmt::format("{:#x}", pages.address_of(pages.guard())));
}

}  // namespace
}  // namespace memprof::trace
