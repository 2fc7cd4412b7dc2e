// run_block_pipeline: chunks are merged in file order whatever order the workers finish in, a
// slow block does not stop the blocks behind it, and the first error ends the pipeline.
#include "heap/block_pipeline.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "heap/line.h"

namespace memprof::heap {
namespace {

uint64_t address_of_block(size_t index) { return 0x1000 + 8 * uint64_t{index}; }

// `next` for `count` blocks: each block's `begin` carries its index to `parse`, as the loader's
// carries its file position.
auto numbered_blocks(size_t count) {
  return [count, index = size_t{0}](Block& block, bool& last) mutable -> Result<bool> {
    if (index == count) return false;
    block.begin = index++;
    last = index == count;
    return true;
  };
}

// Makes the block one object line whose address tells the block's index, and parses it.
void fill(Block& block, size_t index) {
  const std::string line = fmt::format("{{\"address\":\"0x{:x}\", \"type\":\"STRING\", \"memsize\":40}}\n",
                                       address_of_block(index));
  block.bytes.assign(line.begin(), line.end());
  block.bytes.resize(line.size() + kLinePadding);
  block.size = line.size();
  parse_chunk(block.bytes.data(), block.size, block.bytes.size(), index == 0, block.parsed);
}

TEST(BlockPipeline, MergesInFileOrderWhateverOrderTheWorkersFinishIn) {
  constexpr size_t kBlocks = 40;
  std::vector<uint64_t> merged;
  Status status = run_block_pipeline(
      numbered_blocks(kBlocks),
      [](Block& block) {
        const size_t index = block.begin;
        // Earlier blocks take longer: workers finish out of file order.
        std::this_thread::sleep_for(std::chrono::microseconds(300 * ((kBlocks - index) % 4)));
        fill(block, index);
        return ok_status();
      },
      [&](const ParsedChunk& chunk) {
        EXPECT_EQ(chunk.address.size(), 1u);
        merged.insert(merged.end(), chunk.address.begin(), chunk.address.end());
        return ok_status();
      });
  ASSERT_TRUE(status.ok()) << status.message();
  std::vector<uint64_t> expected;
  for (size_t i = 0; i < kBlocks; ++i) expected.push_back(address_of_block(i));
  EXPECT_EQ(merged, expected);
}

TEST(BlockPipeline, ASlowBlockDoesNotStopTheBlocksBehindIt) {
  // The first block (one that grew around a 12 MB line, say) finishes only once five blocks
  // after it have been read: with the blocks behind it kept waiting until it is merged, it
  // never would. Blocks parsed while they wait give their buffers to the next ones.
  constexpr size_t kBlocks = 12;
  constexpr size_t kReadBehind = 5;
  std::mutex mutex;
  std::condition_variable changed;
  size_t read_after_first = 0;
  size_t waiting_to_merge = 0, most_waiting = 0;  // read, not merged yet
  size_t buffers_made = 0;                           // blocks read into a new buffer
  Status status = run_block_pipeline(
      numbered_blocks(kBlocks),
      [&](Block& block) -> Status {
        const size_t index = block.begin;
        std::unique_lock lock(mutex);
        most_waiting = std::max(most_waiting, ++waiting_to_merge);
        if (block.bytes.capacity() == 0) ++buffers_made;
        if (index == 0) {
          if (!changed.wait_for(lock, std::chrono::seconds(5), [&] { return read_after_first >= kReadBehind; })) {
            return err("the first block waited 5 s: {} blocks behind it were read", read_after_first);
          }
        } else {
          ++read_after_first;
          changed.notify_all();
        }
        fill(block, index);
        return ok_status();
      },
      [&](const ParsedChunk&) {
        std::lock_guard lock(mutex);
        --waiting_to_merge;
        return ok_status();
      });
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(read_after_first, kBlocks - 1);
  EXPECT_GE(most_waiting, kReadBehind + 1);
  EXPECT_LE(most_waiting, kMaxBlocksInFlight);
  EXPECT_LE(buffers_made, kBlocksInWork);
}

TEST(BlockPipeline, TheFirstErrorEndsThePipeline) {
  std::vector<uint64_t> merged;
  Status status = run_block_pipeline(
      numbered_blocks(30),
      [](Block& block) -> Status {
        const size_t index = block.begin;
        if (index == 3) return err("dump.json: Input/output error");
        fill(block, index);
        return ok_status();
      },
      [&](const ParsedChunk& chunk) {
        merged.insert(merged.end(), chunk.address.begin(), chunk.address.end());
        return ok_status();
      });
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(), "dump.json: Input/output error");
  EXPECT_EQ(merged, (std::vector<uint64_t>{address_of_block(0), address_of_block(1), address_of_block(2)}));
}

TEST(BlockPipeline, AWorkerOutOfMemoryEndsThePipelineWithAnError) {
  // Before: the worker's exception ended its thread without marking the block finished, and
  // this thread waited for it forever.
  Status status = run_block_pipeline(
      numbered_blocks(30),
      [](Block& block) -> Status {
        if (block.begin == 5) throw std::bad_alloc();
        fill(block, block.begin);
        return ok_status();
      },
      [](const ParsedChunk&) { return ok_status(); });
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(), "out of memory while parsing the dump");
}

}  // namespace
}  // namespace memprof::heap
