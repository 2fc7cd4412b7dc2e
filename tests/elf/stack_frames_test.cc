#include "core/elf/stack_frames.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "elf/test_util.h"
#include "proc/subprocess.h"

namespace memprof::elf {
namespace {

// The frame sizes the fixture program measures from inside its own functions.
std::map<std::string, uint64_t> measured_frames(const std::string& program) {
  auto result = memprof::testing::run_command({program, "measure"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  std::map<std::string, uint64_t> frames;
  std::istringstream lines(result.out);
  std::string name;
  uint64_t bytes = 0;
  while (lines >> name >> bytes) frames[name] = bytes;
  EXPECT_EQ(frames.size(), 3u) << result.out;
  return frames;
}

uint64_t frame_of(const std::vector<FunctionFrame>& frames, std::string_view name) {
  for (const auto& frame : frames) {
    if (frame.function == name) return frame.frame_bytes;
  }
  ADD_FAILURE() << name << " not found";
  return 0;
}

class FramesOfPrograms : public ::testing::TestWithParam<const char*> {};

TEST_P(FramesOfPrograms, PrologueAnalysisMatchesTheRunningProgram) {
  auto measured = measured_frames(GetParam());
  ASSERT_GE(measured["reactor_poll"], 786432u);  // 65,536 epoll_events of 12 bytes
  auto symbols = ObjectSymbols::load(GetParam(), false);
  ASSERT_TRUE(symbols.ok()) << symbols.message();
  auto frames = function_frames(*symbols);
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(frames.front().function, "reactor_poll");
  EXPECT_EQ(frames.front().frame_bytes, measured["reactor_poll"]);
  for (const auto& [name, bytes] : measured) EXPECT_EQ(frame_of(frames, name), bytes) << name;
  for (size_t i = 1; i < frames.size(); ++i) {
    EXPECT_GE(frames[i - 1].frame_bytes, frames[i].frame_bytes);
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, FramesOfPrograms,
                         ::testing::Values(FRAMES_PIE, FRAMES_O0, FRAMES_NOPIE));

TEST(StackFrames, StrippedProgramWithDebugFile) {
  auto measured = measured_frames(FRAMES_PIE);
  auto symbols = ObjectSymbols::load(STRIPPED_BY_BUILD_ID, true, DebugSearchPath{{DEBUG_ROOT}});
  ASSERT_TRUE(symbols.ok()) << symbols.message();
  auto frames = function_frames(*symbols);
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(frames.front().function, "reactor_poll");
  EXPECT_EQ(frames.front().frame_bytes, measured["reactor_poll"]);
}

uint64_t frame(std::initializer_list<unsigned char> code) {
  std::vector<unsigned char> bytes(code);
  return prologue_frame_bytes(bytes);
}

TEST(StackFrames, HandAssembledPrologues) {
  // push rbp; mov rbp,rsp; sub rsp,0x20; ... leave; ret
  EXPECT_EQ(frame({0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x20, 0xc9, 0xc3}), 40u);
  // push rbp; push rbx; lea r11,[rsp-0xc0000]; loop: sub rsp,0x1000; or qword [rsp],0;
  // cmp rsp,r11; jne loop; sub rsp,0x8; ret  (gcc -fstack-clash-protection)
  EXPECT_EQ(frame({0x55, 0x53, 0x4c, 0x8d, 0x9c, 0x24, 0x00, 0x00, 0xf4, 0xff,  //
                   0x48, 0x81, 0xec, 0x00, 0x10, 0x00, 0x00,                    //
                   0x48, 0x83, 0x0c, 0x24, 0x00,                                //
                   0x4c, 0x39, 0xdc, 0x75, 0xef,                                //
                   0x48, 0x83, 0xec, 0x08, 0xc3}),
            16u + 0xc0000u + 8u);
  // Shrink-wrapped: test edi,edi; je +1; ret; push rbx; sub rsp,0x100; call ...
  EXPECT_EQ(frame({0x85, 0xff, 0x74, 0x01, 0xc3, 0x53, 0x48, 0x81, 0xec, 0x00, 0x01, 0x00, 0x00,
                   0xe8, 0x00, 0x00, 0x00, 0x00}),
            8u + 0x100u);
  // A leaf that touches nothing: xor eax,eax; ret
  EXPECT_EQ(frame({0x31, 0xc0, 0xc3}), 0u);
  // Empty, undecodable and truncated code reserve nothing and do not crash.
  EXPECT_EQ(frame({}), 0u);
  EXPECT_EQ(frame({0x0f, 0xff, 0xff, 0xff}), 0u);
  EXPECT_EQ(frame({0x48, 0x81}), 0u);
}

}  // namespace
}  // namespace memprof::elf
