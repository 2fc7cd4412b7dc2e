// Page and slot geometry against values worked out by hand from gc.c's heap_page_allocate.
#include "report/heap_geometry.h"

#include <gtest/gtest.h>

#include <vector>

namespace memprof::report {
namespace {

const HeapLayout& layout(std::string_view version) { return **layout_for_ruby_version(version); }

TEST(HeapGeometry, KnownLayoutsMatchGcC) {
  const HeapLayout& old_pages = layout("2.7");
  EXPECT_EQ(old_pages.name, "Ruby 2.x-3.0");
  EXPECT_EQ(old_pages.page_alignment, 16384u);
  EXPECT_EQ(old_pages.page_size, 16344u);  // 16 KiB minus 5 words for malloc
  const HeapLayout& new_pages = layout("3.1");
  EXPECT_EQ(new_pages.name, "Ruby 3.1+");
  EXPECT_EQ(new_pages.page_alignment, 65536u);
  EXPECT_EQ(new_pages.page_size, 65536u);
  EXPECT_EQ(new_pages.base_slot_size, 40u);
  EXPECT_EQ(&layout("3.0.6"), &old_pages);
  EXPECT_EQ(&layout("3.4.1"), &new_pages);
}

TEST(HeapGeometry, RejectsBadVersions) {
  EXPECT_EQ(layout_for_ruby_version("three").message(),
            "invalid Ruby version 'three' (expected MAJOR.MINOR, e.g. 3.1)");
  EXPECT_EQ(layout_for_ruby_version("3.").message(),
            "invalid Ruby version '3.' (expected MAJOR.MINOR, e.g. 3.1)");
  EXPECT_EQ(layout_for_ruby_version("1.9").message(),
            "no known heap layout for Ruby 1.9 (known: 2.0 to 4.x)");
  // Before, a version no Ruby has and a fourth part were taken for Ruby 3.1+.
  EXPECT_EQ(layout_for_ruby_version("9.9").message(),
            "no known heap layout for Ruby 9.9 (known: 2.0 to 4.x)");
  EXPECT_EQ(layout_for_ruby_version("3.1.0.0").message(),
            "invalid Ruby version '3.1.0.0' (expected MAJOR.MINOR, e.g. 3.1)");
  EXPECT_EQ(layout_for_ruby_version("3.-1").message(),
            "invalid Ruby version '3.-1' (expected MAJOR.MINOR, e.g. 3.1)");
  EXPECT_EQ(layout("4.0.0").name, "Ruby 3.1+");
  EXPECT_EQ(layout("3.1.2\n").name, "Ruby 3.1+");  // as `ruby -e 'puts RUBY_VERSION'` prints it
}

TEST(HeapGeometry, FirstSlotFollowsTheHeaderAtAMultipleOfFortyBytes) {
  const HeapLayout& l = layout("3.1");
  // 0x10000 + 8 = 65544 = 40 * 1638 + 24: 16 bytes up to the next multiple of 40.
  PageSlots page = page_slots(l, 0x10000, 40);
  EXPECT_EQ(page.first_slot, 0x10000u + 24);
  EXPECT_EQ(page.slot_count, 1637u);  // (65536 - 24) / 40
  // 0x20000 + 8 = 131080 is a multiple of 40: slots start right after the header.
  page = page_slots(l, 0x20000, 40);
  EXPECT_EQ(page.first_slot, 0x20000u + 8);
  EXPECT_EQ(page.slot_count, 1638u);
}

TEST(HeapGeometry, SixteenKibPagesLeaveRoomForMalloc) {
  const HeapLayout& l = layout("2.7");
  // 0x4000 + 8 = 16392 = 40 * 409 + 32: 8 bytes of padding.
  const PageSlots page = page_slots(l, 0x4000, 40);
  EXPECT_EQ(page.first_slot, 0x4000u + 16);
  EXPECT_EQ(page.slot_count, 408u);  // (16344 - 16) / 40
}

TEST(HeapGeometry, VariableWidthSlotsAlignToTheirSize) {
  const HeapLayout& l = layout("3.3");
  // 0x50000 + 8 = 327688 = 40 * 8192 + 8: the first 40-byte slot is slot 1 of the page, so an
  // 80-byte page moves on to base slot 2 (gc.c's NUM_IN_PAGE adjustment).
  EXPECT_EQ(page_slots(l, 0x50000, 40).first_slot, 0x50000u + 40);
  EXPECT_EQ(page_slots(l, 0x50000, 40).slot_count, 1637u);
  const PageSlots wide = page_slots(l, 0x50000, 80);
  EXPECT_EQ(wide.first_slot, 0x50000u + 80);
  EXPECT_EQ(wide.slot_count, 818u);  // (65536 - 80) / 80
  const PageSlots widest = page_slots(l, 0x50000, 640);
  EXPECT_EQ(widest.first_slot, 0x50000u + 640);
  EXPECT_EQ(widest.slot_count, 101u);
  // Where the first base slot is slot 0 nothing moves.
  EXPECT_EQ(page_slots(l, 0x10000, 160).first_slot, 0x10000u + 24);
  EXPECT_EQ(page_slots(l, 0x10000, 160).slot_count, 409u);  // (65536 - 24) / 160
}

TEST(HeapGeometry, LocatesSlotsAndRejectsAddressesNoSlotCanHave) {
  const HeapLayout& l = layout("3.1");
  const uint64_t body = 0x20000;  // + 8 is a multiple of 40
  auto first = locate_slot(l, body + 8, 0);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->body, body);
  EXPECT_EQ(first->index, 0u);
  auto last = locate_slot(l, body + 8 + 1637 * 40, 40);
  ASSERT_TRUE(last);
  EXPECT_EQ(last->index, 1637u);
  EXPECT_FALSE(locate_slot(l, body, 0));                  // the page header
  EXPECT_FALSE(locate_slot(l, body + 8 + 20, 0));         // between two slots
  EXPECT_FALSE(locate_slot(l, body + 8 + 1638 * 40, 0));  // would cross into the next page
  EXPECT_FALSE(locate_slot(l, body + 8, 60));             // not a multiple of the base slot
}

std::vector<SlotAddress> full_pages(const HeapLayout& l, std::vector<uint64_t> bodies) {
  std::vector<SlotAddress> out;
  for (uint64_t body : bodies) {
    const PageSlots page = page_slots(l, body, 40);
    for (uint32_t i = 0; i < page.slot_count; ++i) out.push_back({page.first_slot + i * 40ull, 0});
  }
  return out;
}

TEST(HeapGeometry, DerivesSixtyFourKibPagesFromObjectsInSixteenKibHoles) {
  // A full 3.1 page has objects in the bytes where 16 KiB pages keep their header and malloc
  // reserve, so only the 64 KiB layout places them all.
  const auto objects = full_pages(layout("3.1"), {0x20000, 0x30000});
  const LayoutChoice choice = derive_layout(objects, nullptr);
  EXPECT_EQ(choice.layout, &layout("3.1"));
  EXPECT_EQ(choice.misfits, 0u);
  EXPECT_EQ(choice.reason,
            "every object address fits its 64 KiB pages; 14 objects cannot sit in Ruby 2.x-3.0 pages");
}

TEST(HeapGeometry, PrefersSixteenKibPagesWhenTheyPlaceEveryObject) {
  // Full 16 KiB pages also fit in 64 KiB ones; the smaller layout is the informative one.
  const auto objects = full_pages(layout("2.7"), {0x4000, 0x8000});
  const LayoutChoice choice = derive_layout(objects, nullptr);
  EXPECT_EQ(choice.layout, &layout("2.7"));
  EXPECT_EQ(choice.misfits, 0u);
  EXPECT_EQ(choice.reason, "every object address fits its 16 KiB pages");
}

TEST(HeapGeometry, SlotSizeFieldMeansRubyThreeTwoOrLater) {
  const std::vector<SlotAddress> objects = {{0x20000 + 8, 40}};
  const LayoutChoice choice = derive_layout(objects, nullptr);
  EXPECT_EQ(choice.layout, &layout("3.2"));
  EXPECT_EQ(choice.reason, "objects carry slot_size, written by Ruby 3.2 and later");
}

TEST(HeapGeometry, ForcedLayoutCountsMisfits) {
  const auto objects = full_pages(layout("3.1"), {0x20000});
  const LayoutChoice choice = derive_layout(objects, &layout("2.7"));
  EXPECT_EQ(choice.layout, &layout("2.7"));
  // 7 of the 1638 slots overlap the header or malloc reserve of one of the four 16 KiB pages the
  // 64 KiB page would be cut into.
  EXPECT_EQ(choice.misfits, 7u);
  EXPECT_EQ(choice.reason, "Ruby 2.x-3.0 layout requested");
}

TEST(HeapGeometry, NoLayoutFitsMisalignedAddresses) {
  const std::vector<SlotAddress> objects = {{0x20000 + 13, 0}};
  const LayoutChoice choice = derive_layout(objects, nullptr);
  EXPECT_EQ(choice.misfits, 1u);
  EXPECT_EQ(choice.reason,
            "no layout fits every object (1 object cannot sit in Ruby 2.x-3.0 pages, 1 object "
            "cannot sit in Ruby 3.1+ pages)");
}

}  // namespace
}  // namespace memprof::report
