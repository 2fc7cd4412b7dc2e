// The heap as pages of slots: which slot of which page holds an object, in which drawing
// category (a type, a generation range), and whether it is pinned. Built from plain object
// records so that geometry and drawing can be tested without a dump.
//
// Since Ruby 3.2 every page belongs to one size pool, whose slots are all of one size (40, 80,
// 160, 320 or 640 bytes); a page is never shared between pools. The map keeps the pages of a
// pool together (MapPool) so that each pool is drawn as a section of its own: pages with slots
// of different sizes side by side on one grid read as one heap when they are five.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "report/heap_geometry.h"

namespace memprof::report {

inline constexpr uint16_t kEmptySlot = UINT16_MAX;

struct MapObject {
  uint64_t address = 0;
  uint32_t slot_size = 0;  // 0: the layout's base slot size (dumps before Ruby 3.2)
  uint16_t category = 0;   // index into the caller's categories
  bool pinned = false;
};

struct MapCell {
  uint16_t category = kEmptySlot;
  bool pinned = false;
};

struct MapPage {
  PageSlots slots;
  uint32_t first_cell = 0;  // cells[first_cell .. first_cell + slots.slot_count)
  uint32_t used = 0;        // slots holding an object
  uint32_t pool = 0;        // index into HeapPageMap::pools
};

// The pages of one slot size: pages[first_page .. first_page + page_count).
struct MapPool {
  uint32_t slot_size = 0;
  uint32_t first_page = 0;
  uint32_t page_count = 0;
  uint64_t slots = 0;  // slots of its pages
  uint64_t used = 0;   // of them holding an object
};

struct HeapPageMap {
  const HeapLayout* layout = nullptr;
  std::vector<MapPage> pages;  // by slot size, then ascending by body address
  std::vector<MapPool> pools;  // ascending by slot size; pools without pages are left out
  std::vector<MapCell> cells;
  uint64_t placed = 0;       // objects put into a slot
  uint64_t misfits = 0;      // objects the layout cannot place (see locate_slot)
  uint64_t conflicts = 0;    // objects whose slot size disagrees with their page's, or whose
                             // slot is already taken (duplicate addresses)

  // Only pages holding at least one object appear: an entirely free page leaves no trace in a
  // dump. The slot size of a page is that of the first object found in it.
  static HeapPageMap build(const HeapLayout& layout, std::span<const MapObject> objects);

  uint64_t slot_count() const { return cells.size(); }
  const MapCell& cell(const MapPage& page, uint32_t index) const {
    return cells[page.first_cell + index];
  }
};

}  // namespace memprof::report
