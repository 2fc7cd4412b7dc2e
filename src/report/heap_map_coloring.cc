#include "report/heap_map_coloring.h"

#include <algorithm>
#include <array>
#include <iterator>
#include <map>
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

// Old to young: a sequential ramp from deep blue through teal and yellow to red, distinct enough
// that neighbouring ranges can be told apart in one-pixel cells.
constexpr std::array<Rgb, 8> kAgeRamp = {{{49, 54, 149},
                                          {69, 117, 180},
                                          {116, 173, 209},
                                          {102, 189, 99},
                                          {254, 224, 69},
                                          {253, 174, 97},
                                          {244, 109, 67},
                                          {215, 48, 39}}};

}  // namespace

Rgb generation_color(uint64_t range, uint64_t ranges) {
  if (ranges <= 1) return kAgeRamp.back();
  // Spread the ranges over the whole ramp so the oldest is always blue and the youngest red.
  const uint64_t at = range * (kAgeRamp.size() - 1) / (ranges - 1);
  return kAgeRamp[std::min<uint64_t>(at, kAgeRamp.size() - 1)];
}

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
  // Equal-count ranges, not equal-width ones: a handful of objects from boot (generation 1) next
  // to a million from the last few GCs would otherwise squeeze all the interesting ages into
  // one or two colors.
  std::map<uint32_t, uint64_t> per_generation;
  uint64_t traced = 0;
  for (uint32_t g : heap.generation) {
    if (g == heap::kNoGeneration) continue;
    ++per_generation[g];
    ++traced;
  }
  const uint64_t ranges =
      std::min<uint64_t>(per_generation.size(), static_cast<uint64_t>(std::max(max_ranges, 1)));

  ObjectColoring coloring;
  std::map<uint32_t, uint16_t> range_of;  // first generation of each range -> category
  uint64_t seen = 0;
  auto it = per_generation.begin();
  for (uint64_t r = 0; r < ranges; ++r) {
    const uint32_t first = it->first;
    uint32_t last = first;
    // Take generations until this range holds its share of the traced objects, leaving at
    // least one generation for each later range.
    const uint64_t share_end = traced * (r + 1) / ranges;
    do {
      last = it->first;
      seen += it->second;
      ++it;
    } while (it != per_generation.end() && seen < share_end &&
             static_cast<uint64_t>(std::distance(it, per_generation.end())) > ranges - r - 1);
    range_of[first] = static_cast<uint16_t>(r);
    coloring.categories.push_back(
        {first == last ? fmt::format("GEN {}", first) : fmt::format("GEN {}-{}", first, last),
         generation_color(r, ranges), 0});
  }
  const auto none = static_cast<uint16_t>(coloring.categories.size());
  coloring.categories.push_back({"NO GENERATION", kNoGenerationColor, 0});

  coloring.category_of.resize(heap.size());
  for (size_t id = 0; id < heap.size(); ++id) {
    const uint32_t g = heap.generation[id];
    // The range whose first generation is the greatest one not above g.
    const uint16_t c = g == heap::kNoGeneration ? none : std::prev(range_of.upper_bound(g))->second;
    coloring.category_of[id] = c;
    ++coloring.categories[c].count;
  }
  // Generation ranges stay in age order (not by count): the legend is a scale.
  drop_unused(coloring);
  return coloring;
}

}  // namespace memprof::report
