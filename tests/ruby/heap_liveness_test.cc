// entry_is_live on a fake heap: memory laid out as Ruby's slots (the flags word first), page
// ranges as rb_objspace_each_objects reports them. The tracker prunes its table with exactly
// this check, LiveTable::retain_if(entry_is_live); without free events it is what tells a live
// object from a slot that was freed, or reused by an object of another type.
#include "ruby/heap_liveness.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace memprof::ruby {
namespace {

// Bits above the type that live objects carry (frozen, marking, age); the check must mask them.
constexpr VALUE kOtherFlagBits =
    static_cast<VALUE>(RUBY_FL_FREEZE) | static_cast<VALUE>(RUBY_FL_WB_PROTECTED) | (VALUE{3} << 20);

class FakeHeap {
 public:
  // `slots` slot positions of kSlot bytes, the first at an address that is a multiple of kSlot
  // (as in Ruby's heap and as LiveTable requires).
  explicit FakeHeap(size_t slots) : memory_((slots + 1) * kSlot / sizeof(VALUE)) {
    auto raw = reinterpret_cast<uintptr_t>(memory_.data());
    base_ = (raw + kSlot - 1) / kSlot * kSlot;
  }
  static constexpr size_t kSlot = 40;
  uintptr_t slot(size_t index) const { return base_ + index * kSlot; }
  // Writes the flags word of the object at `address`: its type plus unrelated flag bits.
  void set_type(uintptr_t address, int type) const {
    VALUE flags = static_cast<VALUE>(type) | (type == RUBY_T_NONE ? 0 : kOtherFlagBits);
    *reinterpret_cast<VALUE*>(address) = flags;
  }

 private:
  std::vector<VALUE> memory_;
  uintptr_t base_ = 0;
};

TEST(HeapLiveness, PruneKeepsExactlyTheSlotsThatStillHoldTheRecordedType) {
  FakeHeap heap(30);
  track::HeapRanges ranges;
  ranges.add(heap.slot(0), heap.slot(10), 40);   // a page of 40-byte slots
  ranges.add(heap.slot(10), heap.slot(20), 80);  // a page of 80-byte slots (Ruby 3.2+ size pools)
  // slot(20) .. slot(30): a page Ruby freed; its memory still reads as a String.
  ranges.seal();

  track::LiveTable table;
  auto allocate = [&](uintptr_t address, uint32_t site, int type) {
    heap.set_type(address, type);
    table.record(address, site, static_cast<uint8_t>(type), 0);
  };
  allocate(heap.slot(0), 1, RUBY_T_STRING);   // still alive
  allocate(heap.slot(1), 2, RUBY_T_STRING);   // freed
  heap.set_type(heap.slot(1), RUBY_T_NONE);
  allocate(heap.slot(2), 3, RUBY_T_ARRAY);    // freed, the slot reused by an unseen String
  heap.set_type(heap.slot(2), RUBY_T_STRING);
  allocate(heap.slot(3), 4, RUBY_T_OBJECT);   // waiting for its finalizer
  heap.set_type(heap.slot(3), RUBY_T_ZOMBIE);
  allocate(heap.slot(4), 5, RUBY_T_HASH);     // moved away by GC.compact
  heap.set_type(heap.slot(4), RUBY_T_MOVED);
  allocate(heap.slot(5), 6, RUBY_T_ARRAY);    // freed, the slot reused by a seen Array
  allocate(heap.slot(5), 7, RUBY_T_ARRAY);
  allocate(heap.slot(12), 8, RUBY_T_STRING);  // a slot start of the 80-byte page: alive
  allocate(heap.slot(11), 9, RUBY_T_STRING);  // inside an 80-byte slot: not an object start
  allocate(heap.slot(21), 10, RUBY_T_STRING); // on the freed page
  ASSERT_EQ(table.size(), 9u);

  size_t removed = table.retain_if(
      [&](const track::LiveEntry& entry) { return entry_is_live(entry, ranges); });

  EXPECT_EQ(removed, 6u);
  std::map<uintptr_t, uint32_t> survivors;  // address -> site
  table.for_each([&](const track::LiveEntry& e) { survivors[e.address] = e.site; });
  EXPECT_EQ(survivors, (std::map<uintptr_t, uint32_t>{
                           {heap.slot(0), 1}, {heap.slot(5), 7}, {heap.slot(12), 8}}));
}

}  // namespace
}  // namespace memprof::ruby
