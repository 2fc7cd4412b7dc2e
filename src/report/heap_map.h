// The heap map of a loaded dump, ready to encode: geometry derived (heap_geometry.h), objects
// placed into pages (heap_page_map.h), colored (heap_map_coloring.h) and drawn with a legend
// (heap_map_renderer.h). Shared by `memprof heapmap` and the HTML report.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/util/result.h"
#include "heap/heap.h"
#include "report/heap_geometry.h"
#include "report/heap_map_coloring.h"
#include "report/image.h"

namespace memprof::report {

struct HeapMapOptions {
  MapColoring coloring = MapColoring::kType;
  const HeapLayout* layout = nullptr;  // nullptr: derive it from the addresses
};

// The pages of one slot size, as drawn (one section of the picture).
struct SizePoolSummary {
  uint32_t slot_size = 0;
  uint64_t pages = 0;
  uint64_t slots = 0;
  uint64_t objects = 0;
  friend bool operator==(const SizePoolSummary&, const SizePoolSummary&) = default;
};

struct HeapMapDrawing {
  Image image;
  LayoutChoice layout;
  uint64_t pages = 0;
  uint64_t slots = 0;
  uint64_t objects = 0;    // objects drawn
  uint64_t undrawn = 0;    // objects no page of the layout can hold, or in a taken slot
  uint64_t pinned = 0;
  std::vector<SizePoolSummary> pools;  // ascending by slot size
};

// Options from the command line's --by ("type", "generation") and --ruby-version ("" to derive
// the layout). Errors are one-line messages for the user.
Result<HeapMapOptions> heap_map_options(std::string_view by, std::string_view ruby_version);

inline constexpr uint64_t kMaxHeapMapPixels = 120'000'000;

// Fails when the dump holds no objects (there is nothing to draw) or when the map would be
// larger than kMaxHeapMapPixels.
Result<HeapMapDrawing> draw_heap_map(const heap::Heap& heap, const HeapMapOptions& options);

}  // namespace memprof::report
