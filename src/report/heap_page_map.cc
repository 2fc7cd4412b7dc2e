#include "report/heap_page_map.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>

namespace memprof::report {
namespace {

struct Placed {
  uint32_t page;    // index into the pages found so far
  uint32_t index;   // slot index in that page
  uint32_t object;  // index into the input span
};

}  // namespace

HeapPageMap HeapPageMap::build(const HeapLayout& layout, std::span<const MapObject> objects) {
  HeapPageMap map;
  map.layout = &layout;

  // Pass 1: where every object goes. Pages are created in input order, so the first object
  // found in a page decides its slot size; dumps come page by page, so the page of the previous
  // object is checked before the hash map.
  std::vector<MapPage> pages;
  std::unordered_map<uint64_t, uint32_t> page_of_body;
  std::vector<Placed> placed;
  placed.reserve(objects.size());
  SlotLocator locator(layout);
  uint32_t last_page = UINT32_MAX;
  for (uint32_t i = 0; i < objects.size(); ++i) {
    const MapObject& object = objects[i];
    const uint32_t slot_size =
        object.slot_size != 0 ? object.slot_size : static_cast<uint32_t>(layout.base_slot_size);
    auto position = locator.locate(object.address, slot_size);
    if (!position) {
      ++map.misfits;
      continue;
    }
    if (last_page == UINT32_MAX || pages[last_page].slots.body != position->body) {
      auto [it, inserted] =
          page_of_body.try_emplace(position->body, static_cast<uint32_t>(pages.size()));
      if (inserted) pages.push_back({page_slots(layout, position->body, slot_size), 0, 0});
      last_page = it->second;
    }
    // An index is only meaningful in a page of the slot size it was computed for.
    if (pages[last_page].slots.slot_size != slot_size) {
      ++map.conflicts;
      continue;
    }
    placed.push_back({last_page, position->index, i});
  }

  // Pages grouped by size pool, in address order within each; cells laid out page after page.
  std::vector<uint32_t> order(pages.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const PageSlots &x = pages[a].slots, &y = pages[b].slots;
    return x.slot_size != y.slot_size ? x.slot_size < y.slot_size : x.body < y.body;
  });
  uint64_t cells = 0;
  for (uint32_t rank = 0; rank < order.size(); ++rank) {
    MapPage& page = pages[order[rank]];
    if (map.pools.empty() || map.pools.back().slot_size != page.slots.slot_size) {
      map.pools.push_back({page.slots.slot_size, rank, 0, 0, 0});
    }
    page.pool = static_cast<uint32_t>(map.pools.size() - 1);
    ++map.pools.back().page_count;
    map.pools.back().slots += page.slots.slot_count;
    page.first_cell = static_cast<uint32_t>(cells);
    cells += page.slots.slot_count;
  }
  map.cells.resize(cells);

  // Pass 2: fill the cells; a second object in a taken slot (duplicate address) is a conflict.
  for (const Placed& p : placed) {
    MapPage& page = pages[p.page];
    MapCell& cell = map.cells[page.first_cell + p.index];
    if (cell.category != kEmptySlot) {
      ++map.conflicts;
      continue;
    }
    cell.category = objects[p.object].category;
    cell.pinned = objects[p.object].pinned;
    ++page.used;
    ++map.pools[page.pool].used;
    ++map.placed;
  }
  map.pages.reserve(pages.size());
  for (uint32_t p : order) map.pages.push_back(pages[p]);
  return map;
}

}  // namespace memprof::report
