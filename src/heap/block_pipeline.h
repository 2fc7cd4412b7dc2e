// Parses blocks of dump lines on worker threads and hands the parsed chunks over in file order,
// keeping both cores busy: the loader's scheduling, apart from what it reads and merges.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <new>
#include <vector>

#include "core/util/huge_page_allocator.h"
#include "core/util/result.h"
#include "heap/chunk_parser.h"
#include "heap/run_async.h"

namespace memprof::heap {

// Blocks being read and parsed at once (one worker thread each): with two cores, two parse
// while the main thread prepares the next block and merges the oldest one in file order.
inline constexpr size_t kBlocksInWork = 3;
// Blocks parsed and waiting to be merged count too, up to this many: a block that grew around
// a line of megabytes (an Array of 650,000 references is 12 MB) takes tens of ms to parse, the
// blocks behind it that started inside that line are empty, and the other core would wait for
// it with nothing to do; instead it parses the blocks after those.
inline constexpr size_t kMaxBlocksInFlight = 8;

struct Block {
  // What `next` prepares: bytes it read (`size` of them, whole lines, and kLinePadding spare
  // ones after them), or where in the input the block begins, for the worker to read it.
  BigVector<char> bytes;
  size_t size = 0;
  uint64_t begin = 0;
  bool file_start = false;  // the block begins the input
  ParsedChunk parsed;
  std::atomic<bool> finished{false};  // read and parsed (or failed): done.get() will not wait long
  // Last: destroyed first, it waits for the worker, which writes to the members above.
  Task<Status> done;
};

// Runs the pipeline until `next` has no more blocks and every block is merged, or until the
// first error, which it returns (blocks still in work finish before it returns).
//   next(Block&, bool& last) -> Result<bool>  this thread, in file order: prepares a block; false
//                                             when there is none; `last` when it is the last
//   parse(Block&) -> Status                   a worker thread: parses the block into its `parsed`
//   merge(const ParsedChunk&) -> Status       this thread, in file order
template <typename Next, typename Parse, typename Merge>
Status run_block_pipeline(Next next, Parse parse, Merge merge) {
  // Blocks read and parsed so far, for this thread to wait on. Declared before the blocks, so
  // that it outlives the workers, which the blocks' futures join when they are destroyed.
  std::atomic<uint32_t> blocks_finished{0};
  std::deque<std::unique_ptr<Block>> in_flight;
  std::vector<std::unique_ptr<Block>> spare;
  std::vector<BigVector<char>> spare_bytes;  // buffers of blocks parsed

  // A parsed block's bytes go to the next block to start: the chunk holds copies of what it
  // needs, and a block waiting behind a slow one need not keep its buffer meanwhile.
  auto release_bytes = [&](Block& block) {
    if (block.bytes.capacity() > 0) spare_bytes.push_back(std::move(block.bytes));
  };

  // Parses `block` on a worker thread; on this one for a lone block (small inputs).
  auto start = [&](Block& block, bool inline_work) {
    auto work = [&blocks_finished, &block, parse]() -> Status {
      Status status = ok_status();
      // A line of gigabytes can exhaust memory (or a ulimit -v): an error, never a worker that
      // ends without finishing its block and leaves this thread waiting for it.
      try {
        status = parse(block);
      } catch (const std::bad_alloc&) {
        status = err("out of memory while parsing the dump");
      }
      block.finished.store(true, std::memory_order_release);
      blocks_finished.fetch_add(1, std::memory_order_release);
      blocks_finished.notify_one();
      return status;
    };
    block.done = inline_work ? run_deferred(work) : run_async(work);
    if (!block.done.in_background()) block.done.run_here();  // no worker: here, now
  };

  bool first = true, more = true;
  for (;;) {
    // Read before looking at the blocks: a block finishing after this changes it, and the wait
    // below returns at once.
    const uint32_t finished_before = blocks_finished.load(std::memory_order_acquire);
    size_t in_work = 0;
    for (const auto& block : in_flight) {
      if (!block->finished.load(std::memory_order_acquire)) {
        ++in_work;
      } else {
        release_bytes(*block);
      }
    }
    if (more && in_work < kBlocksInWork && in_flight.size() < kMaxBlocksInFlight) {
      std::unique_ptr<Block> block;
      if (spare.empty()) {
        block = std::make_unique<Block>();
      } else {
        block = std::move(spare.back());
        spare.pop_back();
        block->parsed.clear();
        block->finished.store(false, std::memory_order_relaxed);
      }
      if (!spare_bytes.empty()) {
        block->bytes = std::move(spare_bytes.back());
        spare_bytes.pop_back();
      }
      bool last = false;
      block->file_start = first;
      first = false;
      auto got = next(*block, last);
      if (!got.ok()) return got.error();
      more = *got && !last;
      if (*got) {
        start(*block, /*inline_work=*/in_flight.empty() && last);
        in_flight.push_back(std::move(block));
      }
      continue;
    }
    // Then one merge, and the workers are looked at again: blocks start before merges, or the
    // workers would wait out a run of merges (~0.3 ms each, and ~2 ms for the first, which
    // reserves the heap's arrays) with nothing to parse.
    if (!in_flight.empty() && in_flight.front()->finished.load(std::memory_order_acquire)) {
      std::unique_ptr<Block> block = std::move(in_flight.front());
      in_flight.pop_front();
      MEMPROF_TRY_STATUS(block->done.get());
      MEMPROF_TRY_STATUS(merge(block->parsed));
      release_bytes(*block);
      spare.push_back(std::move(block));
      continue;
    }
    if (in_flight.empty()) return ok_status();
    blocks_finished.wait(finished_before, std::memory_order_acquire);
  }
}

}  // namespace memprof::heap
