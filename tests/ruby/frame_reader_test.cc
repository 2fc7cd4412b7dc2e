// FrameReader, the agent's request pipe read without the GVL: frames arriving in pieces, end of
// file, oversized frames, a read cut by a signal that resumes where it stopped, and one that
// comes back while its writer is silent.
#include "ruby/frame_reader.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "core/util/frame_length.h"

namespace memprof::ruby {
namespace {

class Pipe {
 public:
  Pipe() { EXPECT_EQ(::pipe(fds_), 0); }
  ~Pipe() {
    close_write();
    ::close(fds_[0]);
  }
  int read_end() const { return fds_[0]; }
  void write(const std::string& bytes) {
    ASSERT_EQ(::write(fds_[1], bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
  void close_write() {
    if (fds_[1] >= 0) ::close(fds_[1]);
    fds_[1] = -1;
  }

 private:
  int fds_[2] = {-1, -1};
};

std::string frame(const std::string& payload) {
  auto length = util::encode_frame_length(static_cast<uint32_t>(payload.size()));
  return std::string(length.begin(), length.end()) + payload;
}

TEST(FrameReader, ReadsOneFrameAndLeavesTheNext) {
  Pipe pipe;
  pipe.write(frame("7\nstats 3") + frame("8\nquit"));
  FrameReader first(pipe.read_end(), 1024);
  first.read_some();
  ASSERT_TRUE(first.complete());
  EXPECT_EQ(first.payload(), "7\nstats 3");
  FrameReader second(pipe.read_end(), 1024);
  second.read_some();
  ASSERT_TRUE(second.complete());
  EXPECT_EQ(second.payload(), "8\nquit");
}

TEST(FrameReader, EndOfFileMidFrameIsNeitherAFrameNorAnError) {
  Pipe pipe;
  pipe.write(frame("a long request").substr(0, 7));
  pipe.close_write();
  FrameReader reader(pipe.read_end(), 1024);
  reader.read_some();
  EXPECT_FALSE(reader.complete());
  EXPECT_EQ(reader.error(), 0);
  EXPECT_FALSE(reader.too_big());
}

TEST(FrameReader, OversizedFrameIsRefusedBeforeItsBody) {
  Pipe pipe;
  pipe.write(frame(std::string(2000, 'x')));
  FrameReader reader(pipe.read_end(), 1024);
  reader.read_some();
  EXPECT_FALSE(reader.complete());
  EXPECT_TRUE(reader.too_big());
  EXPECT_EQ(reader.announced_bytes(), 2000u);
}

// A signal (Ruby's RUBY_UBF_IO sends SIGVTALRM) cuts the read short; the next call goes on with
// what was already read, and the frame comes out whole.
TEST(FrameReader, InterruptedReadResumesWithWhatItHad) {
  struct sigaction quiet {};
  quiet.sa_handler = [](int) {};  // no SA_RESTART: the read returns EINTR
  struct sigaction previous {};
  ASSERT_EQ(::sigaction(SIGUSR2, &quiet, &previous), 0);
  Pipe pipe;
  std::string whole = frame("9\nreport-end 50");
  pipe.write(whole.substr(0, 6));
  FrameReader reader(pipe.read_end(), 1024);
  pthread_t reading_thread = ::pthread_self();
  std::thread interrupter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ::pthread_kill(reading_thread, SIGUSR2);
  });
  reader.read_some();
  interrupter.join();
  EXPECT_TRUE(reader.interrupted());
  EXPECT_FALSE(reader.complete());
  reader.clear_interruption();
  pipe.write(whole.substr(6));
  reader.read_some();
  ASSERT_TRUE(reader.complete());
  EXPECT_EQ(reader.payload(), "9\nreport-end 50");
  ::sigaction(SIGUSR2, &previous, nullptr);
}

// A reader given idle_ms comes back when the writer is silent that long (Memprof.dump_all looks
// at its child then), keeps what it had, and completes the frame on the next call.
TEST(FrameReader, ComesBackWhenTheWriterIsSilentAndKeepsWhatItHad) {
  Pipe pipe;
  std::string whole = frame("dump written");
  pipe.write(whole.substr(0, 7));
  FrameReader reader(pipe.read_end(), 1024);
  const auto start = std::chrono::steady_clock::now();
  reader.read_some(50);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(50));
  EXPECT_TRUE(reader.idle());
  EXPECT_FALSE(reader.complete());
  reader.clear_interruption();
  pipe.write(whole.substr(7));
  reader.read_some(50);
  ASSERT_TRUE(reader.complete());
  EXPECT_FALSE(reader.idle());
  EXPECT_EQ(reader.payload(), "dump written");
}

}  // namespace
}  // namespace memprof::ruby
