#include "report/heap_map.h"

#include <string>
#include <vector>

#include <fmt/format.h>

#include "heap/units.h"
#include "report/heap_page_map.h"
#include "report/heap_map_renderer.h"

namespace memprof::report {
namespace {

std::string pool_note(const SizePoolSummary& pool) {
  return fmt::format("{}-BYTE SLOTS: {} PAGE{}, {} SLOTS, {} OBJECTS", pool.slot_size, pool.pages,
                     pool.pages == 1 ? "" : "S", pool.slots, pool.objects);
}

}  // namespace

Result<HeapMapOptions> heap_map_options(std::string_view by, std::string_view ruby_version) {
  HeapMapOptions options;
  if (by == "generation") {
    options.coloring = MapColoring::kGeneration;
  } else if (by != "type") {
    return err("--by must be 'type' or 'generation', not '{}'", by);
  }
  if (!ruby_version.empty()) {
    auto layout = layout_for_ruby_version(ruby_version);
    if (!layout) return layout.error();
    options.layout = *layout;
  }
  return options;
}

Result<HeapMapDrawing> draw_heap_map(const heap::Heap& heap, const HeapMapOptions& options) {
  if (heap.size() == 0) return err("the dump holds no objects: nothing to draw");

  std::vector<SlotAddress> addresses(heap.size());
  for (size_t id = 0; id < heap.size(); ++id) {
    addresses[id] = {heap.address[id], heap.slot_size[id]};
  }
  LayoutChoice choice = derive_layout(addresses, options.layout);

  ObjectColoring coloring = options.coloring == MapColoring::kType ? color_by_type(heap)
                                                                   : color_by_generation(heap);
  std::vector<MapObject> objects(heap.size());
  for (size_t id = 0; id < heap.size(); ++id) {
    objects[id] = {heap.address[id], heap.slot_size[id], coloring.category_of[id],
                   (heap.flags[id] & heap::kFlagPinned) != 0};
  }
  const HeapPageMap map = HeapPageMap::build(*choice.layout, objects);
  // The picture is held in memory as RGB: refuse sizes that would take hundreds of megabytes
  // (about 14,000 pages of 64 KiB, a heap of ~900 MB of slots) instead of exhausting memory.
  const MapRaster raster = MapRaster::plan(map);
  const uint64_t pixels = uint64_t(raster.map_width) * uint64_t(raster.map_height);
  if (pixels > kMaxHeapMapPixels) {
    return err("{} pages would make a {}x{} picture; memprof draws at most {} million pixels",
               heap::count_text(map.pages.size()), raster.map_width, raster.map_height,
               kMaxHeapMapPixels / 1'000'000);
  }

  HeapMapDrawing drawing{Image(0, 0, {}), std::move(choice)};
  drawing.pages = map.pages.size();
  drawing.slots = map.slot_count();
  drawing.objects = map.placed;
  drawing.undrawn = map.misfits + map.conflicts;
  for (const MapCell& cell : map.cells) drawing.pinned += cell.pinned;
  for (const MapPool& pool : map.pools) {
    drawing.pools.push_back({pool.slot_size, pool.page_count, pool.slots, pool.used});
  }

  const HeapLayout& layout = *drawing.layout.layout;
  MapLegend legend;
  legend.title = options.coloring == MapColoring::kType ? "HEAP PAGES BY TYPE"
                                                        : "HEAP PAGES BY GENERATION";
  legend.notes.push_back(
      fmt::format("{} LAYOUT: {} KIB PAGES", layout.name, layout.page_alignment / 1024));
  const double full = drawing.slots == 0 ? 0.0 : 100.0 * drawing.objects / drawing.slots;
  legend.notes.push_back(fmt::format("{} PAGES, {} SLOTS, {} OBJECTS ({:.1f}% FULL)",
                                     drawing.pages, drawing.slots, drawing.objects, full));
  for (const SizePoolSummary& pool : drawing.pools) legend.notes.push_back(pool_note(pool));
  if (drawing.undrawn != 0) {
    legend.notes.push_back(fmt::format("{} OBJECTS NOT PLACED (SEE STDERR)", drawing.undrawn));
  }
  legend.notes.push_back("ONE SECTION PER SLOT SIZE (SIZE POOL),");
  legend.notes.push_back("ONE COLUMN PER PAGE, LOW ADDRESSES LEFT,");
  legend.notes.push_back("FIRST SLOT AT THE TOP, ONE CELL PER SLOT");
  legend.categories = std::move(coloring.categories);
  drawing.image = render_heap_map(map, legend);
  return drawing;
}

}  // namespace memprof::report
