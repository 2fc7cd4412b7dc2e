#include "core/track/live_table.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace memprof::track {
namespace {

TEST(LiveTable, RecordFindOverwrite) {
  LiveTable table;
  EXPECT_EQ(table.find(4000), std::nullopt);
  table.record(4000, 7, 5, 12);
  table.record(0x1068, 8, 7, 13);
  ASSERT_NE(table.find(4000), std::nullopt);
  EXPECT_EQ(table.find(4000)->site, 7u);
  EXPECT_EQ(table.find(4000)->type, 5);
  EXPECT_EQ(table.find(4000)->generation, 12u);
  EXPECT_EQ(table.find(0x1068)->generation, 13u);
  EXPECT_EQ(table.size(), 2u);
  // A slot reused by a seen allocation: same key, newest site wins, no second entry.
  table.record(4000, 9, 7, 20);
  EXPECT_EQ(table.size(), 2u);
  EXPECT_EQ(table.find(4000)->site, 9u);
  EXPECT_EQ(table.find(4000)->type, 7);
  EXPECT_EQ(table.find(4000)->generation, 20u);
}

TEST(LiveTable, GrowsAndKeepsEverything) {
  LiveTable table;
  for (uintptr_t i = 1; i <= 100000; ++i) table.record(i * 40, static_cast<uint32_t>(i), 5, 0);
  EXPECT_EQ(table.size(), 100000u);
  for (uintptr_t i = 1; i <= 100000; ++i) {
    auto e = table.find(i * 40);
    ASSERT_TRUE(e) << i;
    EXPECT_EQ(e->site, i);
  }
  EXPECT_EQ(table.find(100001 * 40), std::nullopt);
  // Dense slots (a heap page full of live objects): about 9 bytes per object (site,
  // generation, type), far under the 48-byte budget.
  EXPECT_LE(table.memory_bytes(), table.size() * 10);
  EXPECT_EQ(table.chunk_count(), (100000 * 40) / 16384 + 1);
}

TEST(LiveTable, EraseKeepsProbeChainsIntact) {
  // Random inserts and erases checked against std::map, over few enough addresses (8 chunks)
  // that every position is recorded, erased and recorded again many times.
  LiveTable table;
  std::map<uintptr_t, uint32_t> model;
  std::mt19937_64 rng(42);
  for (int step = 0; step < 200000; ++step) {
    uintptr_t address = (rng() % 3000 + 1) * 40;
    if (rng() % 3 == 0) {
      EXPECT_EQ(table.erase(address).has_value(), model.erase(address) == 1);
    } else {
      auto site = static_cast<uint32_t>(step);
      table.record(address, site, 5, 0);
      model[address] = site;
    }
  }
  EXPECT_EQ(table.size(), model.size());
  for (auto [address, site] : model) {
    auto e = table.find(address);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->site, site);
  }
}

TEST(LiveTable, RetainIfRemovesExactlyTheDead) {
  LiveTable table;
  for (uintptr_t i = 1; i <= 5000; ++i) table.record(i * 40, static_cast<uint32_t>(i), 5, 0);
  size_t removed = table.retain_if([](const LiveEntry& e) { return e.site % 3 == 0; });
  EXPECT_EQ(removed, 5000u - 1666u);
  EXPECT_EQ(table.size(), 1666u);
  for (uintptr_t i = 1; i <= 5000; ++i) EXPECT_EQ(table.find(i * 40).has_value(), i % 3 == 0) << i;
}

TEST(LiveTable, RekeyMovesAndDrops) {
  LiveTable table;
  table.record(4000, 1, 5, 7);
  table.record(0x2008, 2, 5, 8);
  table.record(0x3020, 3, 5, 9);
  ASSERT_TRUE(table.rekey([](const LiveEntry& e) -> uintptr_t {
    if (e.address == 4000) return 0x9010;  // moved
    if (e.address == 0x2008) return 0;       // dropped
    return e.address;                        // stayed
  }));
  EXPECT_EQ(table.size(), 2u);
  EXPECT_EQ(table.find(4000), std::nullopt);
  EXPECT_EQ(table.find(0x2008), std::nullopt);
  ASSERT_TRUE(table.find(0x9010));
  EXPECT_EQ(table.find(0x9010)->site, 1u);
  EXPECT_EQ(table.find(0x3020)->site, 3u);
  // A moved object keeps its generation: a diff across GC.compact still dates it.
  EXPECT_EQ(table.find(0x9010)->generation, 7u);
  EXPECT_EQ(table.find(0x3020)->generation, 9u);
}

// An allocation window's mark travels with the entry through every read, a move and a
// prune, never shows in the type, and goes when the window closes.
TEST(LiveTable, WindowMarksSurviveMovesAndPrunesUntilCleared) {
  LiveTable table;
  table.record(4000, 1, 5, 0);                          // before the window
  table.record(0x2008, 2, 7 | LiveTable::kInWindow, 0);  // born in it
  table.record(0x3020, 3, 5 | LiveTable::kInWindow, 0);
  EXPECT_FALSE(table.find(4000)->in_window);
  EXPECT_TRUE(table.find(0x2008)->in_window);
  EXPECT_EQ(table.find(0x2008)->type, 7);
  ASSERT_TRUE(table.rekey([](const LiveEntry& e) -> uintptr_t {
    return e.address == 0x2008 ? 0x9010 : e.address;
  }));
  EXPECT_TRUE(table.find(0x9010)->in_window);
  EXPECT_EQ(table.find(0x9010)->type, 7);
  size_t seen_in_window = 0;
  table.retain_if([&](const LiveEntry& e) {
    EXPECT_LT(e.type, LiveTable::kInWindow);
    seen_in_window += e.in_window;
    return e.address != 0x3020;
  });
  EXPECT_EQ(seen_in_window, 2u);
  // A slot reused outside the window loses the mark.
  table.record(0x9010, 4, 7, 0);
  EXPECT_FALSE(table.find(0x9010)->in_window);
  table.record(4000, 1, 5 | LiveTable::kInWindow, 0);
  // What erase hands back carries the mark (the tracker's free watch reads it there).
  table.record(0x6018, 9, 7 | LiveTable::kInWindow, 0);
  std::optional<LiveEntry> erased = table.erase(0x6018);
  ASSERT_TRUE(erased);
  EXPECT_TRUE(erased->in_window);
  EXPECT_EQ(erased->type, 7);
  EXPECT_EQ(erased->site, 9u);
  EXPECT_FALSE(table.erase(0x6018));
  table.clear_window_marks();
  table.for_each([](const LiveEntry& e) { EXPECT_FALSE(e.in_window); });
  EXPECT_EQ(table.find(4000)->type, 5);
  EXPECT_EQ(table.size(), 2u);
}

TEST(LiveTable, WantsPruneWhenDoubledSinceLastPrune) {
  constexpr uintptr_t kMin = LiveTable::kMinPruneThreshold;
  LiveTable table;
  for (uintptr_t i = 1; i < kMin; ++i) table.record(i * 40, 1, 5, 0);
  EXPECT_FALSE(table.wants_prune());
  table.record(kMin * 40, 1, 5, 0);
  EXPECT_TRUE(table.wants_prune());
  // Three quarters die; the survivors are below the minimum, so the next prune is due when
  // the table reaches the minimum again.
  table.retain_if([](const LiveEntry& e) { return e.address % 160 == 0; });
  EXPECT_EQ(table.size(), kMin / 4);
  EXPECT_FALSE(table.wants_prune());
  for (uintptr_t i = 1; i < kMin * 3 / 4; ++i) table.record((i + kMin) * 160, 1, 5, 0);
  EXPECT_FALSE(table.wants_prune());
  table.record(kMin * 1000, 1, 5, 0);
  EXPECT_TRUE(table.wants_prune());
  // Above the minimum, a prune is due when the survivors have doubled.
  for (uintptr_t i = 1; i <= kMin; ++i) table.record((i + 10 * kMin) * 160, 1, 5, 0);
  table.retain_if([](const LiveEntry&) { return true; });
  EXPECT_EQ(table.size(), 2 * kMin);
  for (uintptr_t i = 1; i < 2 * kMin; ++i) table.record((i + 20 * kMin) * 160, 1, 5, 0);
  EXPECT_FALSE(table.wants_prune());
  table.record(kMin * 40 * 99999, 1, 5, 0);
  EXPECT_TRUE(table.wants_prune());
}

TEST(LiveTable, ChunkEdgesAndMisalignedAddresses) {
  LiveTable table;
  // The last slot start of a 16 KB window and the first of the next one.
  uintptr_t last = ((0x40000 + 16384 - 1) / 40) * 40;
  uintptr_t next = last + 40;
  uintptr_t straddling = 0x40000 / 40 * 40;  // the slot straddling the window's start
  table.record(last, 1, 5, 0);
  table.record(next, 2, 7, 0);
  table.record(straddling, 3, 9, 0);
  table.record(0x40008, 4, 5, 0);  // not a slot start
  table.record(straddling + 80, 5, 0, 0);  // type 0 means "empty"
  EXPECT_EQ(table.dropped(), 2u);
  EXPECT_EQ(table.size(), 3u);
  // for_each and find against what was recorded: address -> (site, type).
  const std::map<uintptr_t, std::pair<uint32_t, int>> recorded = {
      {straddling, {3, 9}}, {last, {1, 5}}, {next, {2, 7}}};
  std::map<uintptr_t, std::pair<uint32_t, int>> visited;
  table.for_each([&](const LiveEntry& e) { visited[e.address] = {e.site, e.type}; });
  EXPECT_EQ(visited, recorded);
  for (auto [address, site_and_type] : recorded) {
    auto found = table.find(address);
    ASSERT_TRUE(found) << address;
    EXPECT_EQ(std::pair(found->site, int{found->type}), site_and_type);
  }
}

TEST(LiveTable, PruneFreesEmptyChunks) {
  LiveTable table;
  for (uintptr_t i = 1; i <= 4096; ++i) table.record(i * 40, 1, 5, 0);
  size_t chunks = table.chunk_count();
  EXPECT_GT(chunks, 5u);
  table.retain_if([](const LiveEntry& e) { return e.address < 16384; });
  EXPECT_EQ(table.chunk_count(), 1u);
  EXPECT_LT(table.memory_bytes(), 4096u);
}

// Records alternating between pages of several size pools (Ruby 3.2+), with chunks freed by a
// prune in between: a freed chunk must never be written through a remembered pointer.
TEST(LiveTable, InterleavedPagesAndFreedChunks) {
  LiveTable table;
  // Slot-aligned (multiples of 40), as Ruby's pages are; far enough apart for 300 slots each.
  const uintptr_t pages[] = {40 * 1600, 40 * 4800, 40 * 11200, 40 * 12400, 40 * 465000};
  for (uintptr_t i = 0; i < 300; ++i)
    for (uintptr_t page : pages) table.record(page + i * 40, static_cast<uint32_t>(i), 5, 0);
  EXPECT_EQ(table.size(), 300u * std::size(pages));
  table.retain_if([&](const LiveEntry& e) { return e.address < pages[2]; });
  EXPECT_EQ(table.size(), 600u);
  for (uintptr_t page : pages) table.record(page + 80, 1000, 7, 0);
  EXPECT_EQ(table.size(), 603u);
  for (uintptr_t page : pages) {
    EXPECT_EQ(table.find(page + 80)->site, 1000u);
    EXPECT_EQ(table.find(page + 120).has_value(), page < pages[2]);
  }
}

TEST(LiveTable, ClearEmpties) {
  LiveTable table;
  table.record(4000, 1, 5, 0);
  table.clear();
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(table.chunk_count(), 0u);
  EXPECT_EQ(table.find(4000), std::nullopt);
  table.record(4000, 2, 5, 0);
  EXPECT_EQ(table.find(4000)->site, 2u);
}

}  // namespace
}  // namespace memprof::track
