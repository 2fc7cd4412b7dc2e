// How heap map cells are colored: by object type (a fixed palette, so STRING is the same blue in
// every picture) or by allocation generation (old = blue ... young = red, in ranges of equal object counts).
#pragma once

#include <cstdint>
#include <vector>

#include "heap/heap.h"
#include "report/heap_map_renderer.h"

namespace memprof::report {

enum class MapColoring { kType, kGeneration };

// The color of each object type; types without a color of their own share a neutral one.
Rgb type_color(heap::ObjectType type);
// The color of generation range `range` of `ranges` (0 = oldest): blue ... red.
Rgb generation_color(uint64_t range, uint64_t ranges);
inline constexpr Rgb kNoGenerationColor{150, 150, 150};

struct ObjectColoring {
  std::vector<MapCategory> categories;  // most objects first; only categories in use
  std::vector<uint16_t> category_of;    // per ObjectId, index into categories
};

ObjectColoring color_by_type(const heap::Heap& heap);

// Generations come only from dumps taken with allocation tracing on; objects without one go to
// a "NO GENERATION" category. At most `max_ranges` ranges of consecutive generations, each
// holding about the same number of objects.
ObjectColoring color_by_generation(const heap::Heap& heap, int max_ranges = 8);

}  // namespace memprof::report
