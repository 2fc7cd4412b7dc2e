#include "report/heap_map_coloring.h"

#include <algorithm>
#include <array>
#include <numeric>

#include <fmt/format.h>

namespace memprof::report {
namespace {

using heap::ObjectType;

// Sorts categories by count (descending, then label) and renumbers category_of to match.
void order_by_count(ObjectColoring& coloring) {
  std::vector<uint16_t> order(coloring.categories.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](uint16_t a, uint16_t b) {
    return coloring.categories[a].count > coloring.categories[b].count;
  });
  std::vector<uint16_t> new_index(order.size());
  std::vector<MapCategory> sorted;
  for (uint16_t rank = 0; rank < order.size(); ++rank) {
    new_index[order[rank]] = rank;
    sorted.push_back(std::move(coloring.categories[order[rank]]));
  }
  coloring.categories = std::move(sorted);
  for (uint16_t& c : coloring.category_of) c = new_index[c];
}

// Drops categories no object uses (after counting), keeping indices consistent.
void drop_unused(ObjectColoring& coloring) {
  std::vector<uint16_t> new_index(coloring.categories.size(), 0);
  std::vector<MapCategory> kept;
  for (size_t i = 0; i < coloring.categories.size(); ++i) {
    if (coloring.categories[i].count == 0) continue;
    new_index[i] = static_cast<uint16_t>(kept.size());
    kept.push_back(std::move(coloring.categories[i]));
  }
  coloring.categories = std::move(kept);
  for (uint16_t& c : coloring.category_of) c = new_index[c];
}

}  // namespace

Rgb type_color(ObjectType type) {
  switch (type) {
    case ObjectType::kString: return {31, 119, 180};    // blue
    case ObjectType::kArray: return {255, 127, 14};     // orange
    case ObjectType::kHash: return {44, 160, 44};       // green
    case ObjectType::kObject: return {214, 39, 40};     // red
    case ObjectType::kImemo: return {148, 103, 189};    // purple
    case ObjectType::kData: return {140, 86, 75};       // brown
    case ObjectType::kClass: return {227, 119, 194};    // pink
    case ObjectType::kModule: return {188, 189, 34};    // olive
    case ObjectType::kIclass: return {23, 190, 207};    // cyan
    case ObjectType::kSymbol: return {57, 59, 121};     // indigo
    case ObjectType::kFloat: return {107, 174, 214};    // light blue
    case ObjectType::kStruct: return {253, 174, 107};   // light orange
    case ObjectType::kRegexp: return {116, 196, 118};   // light green
    case ObjectType::kMatch: return {252, 146, 114};    // salmon
    case ObjectType::kBignum: return {158, 154, 200};   // lavender
    case ObjectType::kFile: return {173, 73, 74};       // brick
    case ObjectType::kRational: return {231, 186, 82};  // gold
    case ObjectType::kComplex: return {206, 219, 156};  // pale olive
    case ObjectType::kZombie: return {82, 82, 82};      // dark grey: awaiting finalization
    case ObjectType::kMoved: return {255, 225, 0};      // yellow: compaction forwarding slot
    case ObjectType::kPayload: return {99, 121, 57};    // dark olive
    default: return {150, 150, 150};
  }
}

ObjectColoring color_by_type(const heap::Heap& heap) {
  ObjectColoring coloring;
  coloring.categories.resize(heap::kObjectTypeCount);
  for (int t = 0; t < heap::kObjectTypeCount; ++t) {
    const auto type = static_cast<ObjectType>(t);
    coloring.categories[static_cast<size_t>(t)] = {std::string(heap::object_type_name(type)),
                                                   type_color(type), 0};
  }
  coloring.category_of.resize(heap.size());
  for (size_t id = 0; id < heap.size(); ++id) {
    const auto t = static_cast<uint16_t>(heap.type[id]);
    coloring.category_of[id] = t;
    ++coloring.categories[t].count;
  }
  drop_unused(coloring);
  order_by_count(coloring);
  return coloring;
}

ObjectColoring color_by_generation(const heap::Heap& heap, int max_ranges) {
  uint32_t lo = UINT32_MAX, hi = 0;
  for (uint32_t g : heap.generation) {
    if (g == heap::kNoGeneration) continue;
    lo = std::min(lo, g);
    hi = std::max(hi, g);
  }
  ObjectColoring coloring;
  coloring.category_of.resize(heap.size());
  const bool any = lo <= hi;
  const uint64_t span = any ? uint64_t{hi} - lo + 1 : 0;
  const uint64_t ranges = std::min<uint64_t>(span, static_cast<uint64_t>(std::max(max_ranges, 1)));
  const uint64_t width = ranges == 0 ? 1 : (span + ranges - 1) / ranges;
  for (uint64_t r = 0; r < ranges; ++r) {
    const uint64_t first = lo + r * width;
    const uint64_t last = std::min<uint64_t>(first + width - 1, hi);
    // Old (blue) to young (red) through purple, so age reads left-to-right in the legend.
    const double f = ranges == 1 ? 1.0 : static_cast<double>(r) / static_cast<double>(ranges - 1);
    const Rgb color{static_cast<uint8_t>(40 + f * 200), 60, static_cast<uint8_t>(220 - f * 180)};
    coloring.categories.push_back(
        {first == last ? fmt::format("GEN {}", first) : fmt::format("GEN {}-{}", first, last),
         color, 0});
  }
  const auto none = static_cast<uint16_t>(coloring.categories.size());
  coloring.categories.push_back({"NO GENERATION", {150, 150, 150}, 0});
  for (size_t id = 0; id < heap.size(); ++id) {
    const uint32_t g = heap.generation[id];
    const uint16_t c =
        g == heap::kNoGeneration ? none : static_cast<uint16_t>((g - lo) / width);
    coloring.category_of[id] = c;
    ++coloring.categories[c].count;
  }
  // Generation ranges stay in age order (not by count): the legend is a scale.
  drop_unused(coloring);
  return coloring;
}

}  // namespace memprof::report
