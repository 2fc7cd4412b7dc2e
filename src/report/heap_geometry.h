// Where Ruby's heap pages and slots are, derived from object addresses and the Ruby version.
//
// Ruby carves its object heap into page bodies aligned to HEAP_PAGE_ALIGN. A body starts with
// struct heap_page_header (one pointer, 8 bytes); the first slot is the first address after the
// header that is a multiple of BASE_SLOT_SIZE (sizeof(RVALUE), 40 bytes on 64-bit), and slots
// follow back to back until the body's HEAP_PAGE_SIZE bytes are used up (gc.c,
// heap_page_allocate). The numbers changed over time:
//
//   Ruby 2.x-3.0  HEAP_PAGE_ALIGN_LOG 14: bodies aligned to 16 KiB, allocated with
//                 posix_memalign, HEAP_PAGE_SIZE = 16 KiB - 5 words (kept free for malloc's own
//                 header) = 16344 bytes, 408 or 409 slots of 40 bytes.
//   Ruby 3.1+     HEAP_PAGE_ALIGN_LOG 16: bodies are 64 KiB, mmap'ed and aligned to 64 KiB,
//                 HEAP_PAGE_SIZE = HEAP_PAGE_ALIGN, 1637 or 1638 slots of 40 bytes.
//   Ruby 3.2+     same pages, but every page belongs to one size pool whose slot size is a
//                 power-of-two multiple of 40 (40, 80, 160, 320, 640); dumps carry it as
//                 "slot_size". When the first 40-byte slot would be slot 1 of the page, the
//                 first slot moves on by slot_size - 40 bytes so objects line up with the mark
//                 bitmap (gc.c's NUM_IN_PAGE adjustment).
//
// A page body is therefore found from any object inside it as address & ~(HEAP_PAGE_ALIGN - 1),
// and its slots are computed, never assumed. Which layout a dump comes from is not written in the
// dump; derive_layout() tells them apart by where objects sit (see there).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/util/result.h"

namespace memprof::report {

struct HeapLayout {
  std::string_view name;        // "Ruby 3.1+"
  int first_version = 0;        // major * 100 + minor of the first Ruby using it (301)
  int last_version = 0;         // ... and of the last one (499: still current in 4.x)
  uint64_t page_alignment = 0;  // HEAP_PAGE_ALIGN: bodies start at multiples of this
  uint64_t page_size = 0;       // HEAP_PAGE_SIZE: bytes of a body (header + slots)
  uint64_t header_size = 0;     // sizeof(struct heap_page_header)
  uint64_t base_slot_size = 0;  // BASE_SLOT_SIZE, sizeof(RVALUE)
};

// The layouts memprof knows, smallest pages first.
std::span<const HeapLayout> known_layouts();

// "3.1", "3.3.0", "2.7.8" -> the layout that Ruby version uses. Fails for malformed versions and
// for versions before 2.0 or after the newest one we know the layout of.
Result<const HeapLayout*> layout_for_ruby_version(std::string_view version);

// The slots of one page body.
struct PageSlots {
  uint64_t body = 0;        // page body address (aligned)
  uint64_t first_slot = 0;  // address of slot 0
  uint32_t slot_size = 0;   // bytes per slot
  uint32_t slot_count = 0;
};

// The slots of the body at `body` in a page of `slot_size`-byte slots (slot_size must be a
// non-zero multiple of the layout's base slot size).
PageSlots page_slots(const HeapLayout& layout, uint64_t body, uint32_t slot_size);

struct SlotPosition {
  uint64_t body = 0;
  uint32_t index = 0;  // slot index in the page
};

// Where `address` lives if it is the start of a slot of `slot_size` bytes (0: the base slot
// size, for dumps before Ruby 3.2), or nullopt if no page of this layout could hold an object
// there (inside the header, between slots, in the tail the body does not cover).
std::optional<SlotPosition> locate_slot(const HeapLayout& layout, uint64_t address,
                                        uint32_t slot_size);

// locate_slot for many addresses: consecutive objects of a dump mostly share a page, so the
// page's slots are computed once per run of the same page instead of once per object.
class SlotLocator {
 public:
  explicit SlotLocator(const HeapLayout& layout) : layout_(layout) {}
  std::optional<SlotPosition> locate(uint64_t address, uint32_t slot_size);

 private:
  const HeapLayout& layout_;
  PageSlots last_;  // slot_count 0 until the first call
};

// An object as geometry sees it.
struct SlotAddress {
  uint64_t address = 0;
  uint32_t slot_size = 0;  // "slot_size" from the dump, 0 when absent
};

struct LayoutChoice {
  const HeapLayout* layout = nullptr;
  uint64_t misfits = 0;  // objects this layout cannot place (not drawn)
  std::string reason;    // one sentence saying why this layout was chosen
};

// Chooses the layout of the dump these objects come from. With `forced` (from --ruby-version)
// that layout is used and only the misfits are counted. Otherwise every known layout is tried:
// the smallest-page layout that places every object wins, because a layout with smaller pages
// fitting every address is strong evidence (a Ruby 3.1 heap puts objects in the bytes 16 KiB
// pages keep free for headers and malloc, so it fails the 16 KiB test unless nearly empty); if
// none places everything, the one with the fewest misfits wins. Objects with a "slot_size" field
// come from Ruby 3.2 or later, which rules out older layouts.
LayoutChoice derive_layout(std::span<const SlotAddress> objects, const HeapLayout* forced);

}  // namespace memprof::report
