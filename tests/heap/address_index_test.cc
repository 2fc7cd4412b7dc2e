// AddressIndex: ids from the buckets' bitmaps where Ruby's order holds, from the address table
// where it does not, checked against a map on every address of random heaps and around them.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <unordered_map>
#include <vector>

#include "heap/address_index.h"

namespace memprof::heap {
namespace {

// What find() must answer: the first id of each address; address 0 is never found.
std::unordered_map<uint64_t, ObjectId> first_ids(const std::vector<uint64_t>& addresses) {
  std::unordered_map<uint64_t, ObjectId> ids;
  for (size_t id = 0; id < addresses.size(); ++id) {
    if (addresses[id] != 0) ids.try_emplace(addresses[id], static_cast<ObjectId>(id));
  }
  return ids;
}

// Every address, its neighbours 1-40 bytes away and addresses in pages no object has.
void expect_same_answers(const std::vector<uint64_t>& addresses, const std::string& what) {
  uint64_t duplicates = 0;
  const AddressIndex index = AddressIndex::build(addresses, duplicates);
  const auto ids = first_ids(addresses);
  const auto nonzero = static_cast<uint64_t>(std::count_if(addresses.begin(), addresses.end(), [](uint64_t a) { return a != 0; }));
  EXPECT_EQ(duplicates, nonzero - ids.size()) << what;
  auto expected = [&](uint64_t address) {
    auto found = ids.find(address);
    return address == 0 || found == ids.end() ? kNoObject : found->second;
  };
  for (uint64_t address : addresses) {
    for (uint64_t probe : {address, address + 1, address + 8, address + 40, address - 8, address - 40,
                           address + (uint64_t{1} << 20)}) {
      ASSERT_EQ(index.find(probe), expected(probe)) << what << ": address " << std::hex << probe;
    }
  }
}

// A heap as Ruby writes it: pages of 16 or 64 KB in no order, each page's slots of one size in
// address order, some slots free.
std::vector<uint64_t> ruby_order(std::mt19937_64& random, size_t pages) {
  std::vector<uint64_t> page_starts;
  for (size_t page = 0; page < pages; ++page) page_starts.push_back(0x7f0000000000 + page * 0x10000);
  std::shuffle(page_starts.begin(), page_starts.end(), random);
  std::vector<uint64_t> addresses;
  for (uint64_t start : page_starts) {
    const uint64_t slot = uint64_t{40} << (random() % 5);  // 40 to 640 bytes
    for (uint64_t at = start + 16; at + slot <= start + 0x10000; at += slot) {
      if (random() % 4 != 0) addresses.push_back(at);
    }
  }
  return addresses;
}

TEST(AddressIndex, RubysOrderIsFoundThroughTheBuckets) {
  std::mt19937_64 random(1);
  for (size_t pages : {1, 3, 40, 300}) expect_same_answers(ruby_order(random, pages), "pages " + std::to_string(pages));
}

TEST(AddressIndex, EveryOtherOrderIsFoundThroughTheTable) {
  std::mt19937_64 random(2);
  std::vector<uint64_t> shuffled = ruby_order(random, 50);
  std::shuffle(shuffled.begin(), shuffled.end(), random);
  expect_same_answers(shuffled, "shuffled");

  // One bucket out of order among regular ones; a bucket in two runs; a repeated address (the
  // first object keeps it); unaligned addresses; address 0.
  std::vector<uint64_t> mixed = ruby_order(random, 20);
  std::swap(mixed[5], mixed[6]);
  mixed.push_back(mixed[100] + 8);
  mixed.push_back(mixed[200]);
  mixed.push_back(mixed[300] + 3);
  mixed.push_back(0);
  mixed.push_back(0);
  expect_same_answers(mixed, "mixed");
}

TEST(AddressIndex, CountsRepeatedAddresses) {
  uint64_t duplicates = 0;
  const std::vector<uint64_t> addresses = {0x1000, 0x1028, 0x1028, 0x5000, 0x1000, 0x1050};
  const AddressIndex index = AddressIndex::build(addresses, duplicates);
  EXPECT_EQ(duplicates, 2u);
  EXPECT_EQ(index.find(0x1000), 0u);
  EXPECT_EQ(index.find(0x1028), 1u);
  EXPECT_EQ(index.find(0x1050), 5u);
  EXPECT_EQ(index.find(0x5000), 3u);
  EXPECT_EQ(index.find(0x1030), kNoObject);
}

TEST(AddressIndex, AnEmptyIndexFindsNothing) {
  EXPECT_EQ(AddressIndex().find(0x1000), kNoObject);
  uint64_t duplicates = 1;
  EXPECT_EQ(AddressIndex::build({}, duplicates).find(0x1000), kNoObject);
  EXPECT_EQ(duplicates, 0u);
}

}  // namespace
}  // namespace memprof::heap
