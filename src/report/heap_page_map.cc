#include "report/heap_page_map.h"

#include <algorithm>

namespace memprof::report {
namespace {

struct Placed {
  uint64_t body;
  uint32_t index;
  uint32_t slot_size;
  uint32_t object;  // index into the input span
};

}  // namespace

HeapPageMap HeapPageMap::build(const HeapLayout& layout, std::span<const MapObject> objects) {
  HeapPageMap map;
  map.layout = &layout;

  std::vector<Placed> placed;
  placed.reserve(objects.size());
  for (uint32_t i = 0; i < objects.size(); ++i) {
    const MapObject& object = objects[i];
    const uint32_t slot_size =
        object.slot_size != 0 ? object.slot_size : static_cast<uint32_t>(layout.base_slot_size);
    auto position = locate_slot(layout, object.address, slot_size);
    if (!position) {
      ++map.misfits;
      continue;
    }
    placed.push_back({position->body, position->index, slot_size, i});
  }
  // Dumps list objects page by page already; sorting keeps the map right for any input order.
  // Stable, so the first object of a page (the one deciding its slot size) stays first.
  std::stable_sort(placed.begin(), placed.end(),
                   [](const Placed& a, const Placed& b) { return a.body < b.body; });

  for (size_t i = 0; i < placed.size();) {
    const uint64_t body = placed[i].body;
    MapPage page;
    page.slots = page_slots(layout, body, placed[i].slot_size);
    page.first_cell = static_cast<uint32_t>(map.cells.size());
    map.cells.resize(map.cells.size() + page.slots.slot_count);
    for (; i < placed.size() && placed[i].body == body; ++i) {
      const Placed& p = placed[i];
      // An index is only meaningful in a page of the slot size it was computed for.
      if (p.slot_size != page.slots.slot_size) {
        ++map.conflicts;
        continue;
      }
      MapCell& cell = map.cells[page.first_cell + p.index];
      if (cell.category != kEmptySlot) {
        ++map.conflicts;
        continue;
      }
      cell.category = objects[p.object].category;
      cell.pinned = objects[p.object].pinned;
      ++page.used;
      ++map.placed;
    }
    map.pages.push_back(page);
  }
  return map;
}

}  // namespace memprof::report
