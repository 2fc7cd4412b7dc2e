#include "core/util/whole_lines.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/util/scoped_fd.h"

namespace memprof {
namespace {

TEST(WholeLines, PiecesEndAtLineEndsAndStayWithinTheLimit) {
  using Pieces = std::vector<std::string_view>;
  EXPECT_EQ(whole_line_pieces("", 8), Pieces{});
  EXPECT_EQ(whole_line_pieces("ab\ncd\n", 8), (Pieces{"ab\ncd\n"}));
  EXPECT_EQ(whole_line_pieces("ab\ncd\nef\n", 8), (Pieces{"ab\ncd\n", "ef\n"}));
  EXPECT_EQ(whole_line_pieces("abcdefg\nh\n", 8), (Pieces{"abcdefg\n", "h\n"}));  // exactly the limit
  // A line longer than the limit goes alone; text after the last line end goes as it is.
  EXPECT_EQ(whole_line_pieces("a\nbcdefghijk\nl\n", 8), (Pieces{"a\n", "bcdefghijk\n", "l\n"}));
  EXPECT_EQ(whole_line_pieces("a\nbcdefghijk", 8), (Pieces{"a\n", "bcdefghijk"}));
  EXPECT_EQ(whole_line_pieces("ab\ncd", 8), (Pieces{"ab\ncd"}));
}

// What `memprof trace` met: the traced program writes to the same pipe while a batch of
// records goes out. Each record must arrive whole, the program's lines between records.
TEST(WholeLines, AnotherWriterNeverLandsInsideALine) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ScopedFd read_end(fds[0]), write_end(fds[1]);
  std::string received;
  std::thread reader([&] {
    char buffer[8192];
    for (ssize_t n; (n = ::read(read_end.get(), buffer, sizeof buffer)) > 0;) received.append(buffer, n);
  });
  constexpr int kOtherLines = 20000, kBatches = 40, kRecordsPerBatch = 400;
  std::thread other([&] {
    for (int i = 0; i < kOtherLines; ++i) ASSERT_EQ(::write(write_end.get(), "x\n", 2), 2);
  });
  for (int b = 0; b < kBatches; ++b) {
    std::string batch;
    for (int r = 0; r < kRecordsPerBatch; ++r)
      batch += fmt::format("{{\"batch\":{},\"record\":{},\"pad\":\"{:->{}}\"}}\n", b, r, "", 50 + r % 150);
    ASSERT_EQ(write_whole_lines(write_end.get(), batch), 0);
  }
  other.join();
  write_end.reset();
  reader.join();

  int others = 0, records = 0;
  for (size_t start = 0, end; start < received.size(); start = end + 1) {
    end = received.find('\n', start);
    ASSERT_NE(end, std::string::npos);
    const std::string_view line(received.data() + start, end - start);
    if (line == "x") {
      ++others;
      continue;
    }
    const int batch = records / kRecordsPerBatch, record = records % kRecordsPerBatch;
    ASSERT_EQ(line, fmt::format("{{\"batch\":{},\"record\":{},\"pad\":\"{:->{}}\"}}", batch, record, "",
                                50 + record % 150));
    ++records;
  }
  EXPECT_EQ(others, kOtherLines);
  EXPECT_EQ(records, kBatches * kRecordsPerBatch);
}

TEST(WholeLines, SaysWhyAWriteFailed) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ScopedFd read_end(fds[0]), write_end(fds[1]);
  read_end.reset();
  ::signal(SIGPIPE, SIG_IGN);
  EXPECT_EQ(write_whole_lines(write_end.get(), "a\n"), EPIPE);
  EXPECT_EQ(write_whole_lines(-1, "a\n"), EBADF);
}

}  // namespace
}  // namespace memprof
