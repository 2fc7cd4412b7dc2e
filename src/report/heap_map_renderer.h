// Drawing a HeapPageMap: one labelled section per size pool ("40-BYTE SLOTS", "160-BYTE SLOTS",
// ...), in it one column per page (lowest address on the left), one cell per slot (slot 0 at
// the top), a cell's height proportional to its slot size so that every column spans the same
// page bytes; empty slots in light grey, pinned objects with a black notch on the cell's left
// edge, and a legend on the right. A section's columns wrap into bands below each other when
// there are more pages than fit in one band; sections sit side by side while they fit in the
// map's width, and start a new row below otherwise.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report/bitmap_font.h"
#include "report/heap_page_map.h"
#include "report/image.h"

namespace memprof::report {

struct MapCategory {
  std::string label;  // "STRING", "GEN 12-15"
  Rgb color;
  uint64_t count = 0;  // objects drawn in this category (legend text)
};

struct MapLegend {
  std::string title;               // first line, larger
  std::vector<std::string> notes;  // lines under the title (geometry, totals)
  std::vector<MapCategory> categories;  // indexed by MapObject::category; listed in this order
};

namespace map_colors {
inline constexpr Rgb kBackground{255, 255, 255};
inline constexpr Rgb kEmptySlot{221, 221, 221};
inline constexpr Rgb kPinnedNotch{0, 0, 0};
inline constexpr Rgb kText{34, 34, 34};
}  // namespace map_colors

struct PixelRect {
  int x = 0, y = 0, w = 0, h = 0;
};

// Where one size pool is drawn, relative to the map's top-left corner (inside the margin).
struct MapSection {
  int x = 0, y = 0;          // top-left corner of its label
  int columns_per_band = 0;  // page columns side by side before the next band
  int bands = 0;
  int width = 0, height = 0;  // label included
};

// "40-BYTE SLOTS": the label above a pool's section.
std::string section_label(const MapPool& pool);

// Where things go; computed once from the map so tests can find a slot's pixels.
struct MapRaster {
  static constexpr int kMargin = 12;
  static constexpr int kColumnGap = 1;
  static constexpr int kBandGap = 16;
  static constexpr int kSectionGap = 24;  // between sections, across and down
  static constexpr int kLabelScale = 2;
  static constexpr int kLabelHeight = kGlyphHeight * kLabelScale + 6;  // text + space below
  static constexpr int kMaxMapWidth = 1600;

  int column_width = 0;     // pixels per page column, pin notch included
  int unit = 0;             // pixels per base slot (40 bytes) of height
  int columns_per_band = 0;  // the most page columns a band may hold
  int band_height = 0;
  int map_width = 0;
  int map_height = 0;
  std::vector<MapSection> sections;  // one per HeapPageMap::pools entry

  static MapRaster plan(const HeapPageMap& map);
  // The pinned mark: the left quarter of the column, at least one pixel.
  int notch_width() const { return column_width / 4 > 1 ? column_width / 4 : 1; }
  // The rectangle of slot `index` of page `page_index` (the notch is on its left; cells
  // at least 4 pixels tall keep their last row as a separator).
  PixelRect slot_rect(const HeapPageMap& map, size_t page_index, uint32_t index) const;
};

Image render_heap_map(const HeapPageMap& map, const MapLegend& legend);

}  // namespace memprof::report
