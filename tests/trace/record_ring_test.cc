#include "trace/record_ring.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <thread>
#include <vector>

namespace memprof::trace {
namespace {

struct Numbered {
  uint64_t sequence;
  uint64_t check;  // a function of sequence and thread: a torn or stale copy shows
  uint32_t thread;
};

uint64_t check_of(uint64_t sequence, uint32_t thread) {
  return (sequence * 0x9e3779b97f4a7c15ull) ^ thread;
}

TEST(RecordRing, FullRingDropsAndCountsThenAcceptsAgain) {
  RecordRing<Numbered, 4> ring;
  for (uint64_t i = 0; i < 6; ++i) ring.push(Numbered{i, check_of(i, 0), 0});
  EXPECT_EQ(ring.dropped(), 2u);
  std::vector<uint64_t> seen;
  EXPECT_EQ(ring.drain([&](const Numbered& r) { seen.push_back(r.sequence); }), 4u);
  EXPECT_EQ(seen, (std::vector<uint64_t>{0, 1, 2, 3}));  // the oldest kept, in order
  EXPECT_TRUE(ring.push(Numbered{6, check_of(6, 0), 0}));
  EXPECT_EQ(ring.drain([&](const Numbered& r) { seen.push_back(r.sequence); }), 1u);
  EXPECT_EQ(seen.back(), 6u);
  EXPECT_EQ(ring.drain([](const Numbered&) {}), 0u);
}

// Eight threads push as fast as they can while one reader drains all eight rings: every record
// is either read, intact and in order, or counted as dropped -- none lost, none read twice.
TEST(RecordRing, EightProducersOneReaderLoseNothingUncounted) {
  constexpr uint32_t kThreads = 8;
  constexpr uint64_t kPerThread = 200'000;
  std::array<RecordRing<Numbered, 1024>, kThreads> rings;
  std::atomic<uint32_t> finished{0};
  std::vector<std::thread> producers;
  for (uint32_t t = 0; t < kThreads; ++t) {
    producers.emplace_back([&, t] {
      for (uint64_t i = 0; i < kPerThread; ++i) rings[t].push(Numbered{i, check_of(i, t), t});
      finished.fetch_add(1, std::memory_order_release);
    });
  }
  std::array<uint64_t, kThreads> read{};
  std::array<int64_t, kThreads> last{};
  last.fill(-1);
  size_t bad = 0;
  auto drain_all = [&] {
    for (uint32_t t = 0; t < kThreads; ++t) {
      read[t] += rings[t].drain([&](const Numbered& r) {
        if (r.thread != t || r.check != check_of(r.sequence, t) ||
            static_cast<int64_t>(r.sequence) <= last[t])
          ++bad;
        last[t] = static_cast<int64_t>(r.sequence);
      });
    }
  };
  while (finished.load(std::memory_order_acquire) < kThreads) drain_all();
  for (std::thread& producer : producers) producer.join();
  drain_all();
  EXPECT_EQ(bad, 0u);
  uint64_t total_read = 0;
  for (uint32_t t = 0; t < kThreads; ++t) {
    EXPECT_EQ(read[t] + rings[t].dropped(), kPerThread) << "thread " << t;
    total_read += read[t];
  }
  EXPECT_GT(total_read, 0u);
}

}  // namespace
}  // namespace memprof::trace
