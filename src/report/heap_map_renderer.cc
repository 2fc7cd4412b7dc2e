#include "report/heap_map_renderer.h"

#include <algorithm>

#include <fmt/format.h>

#include "report/bitmap_font.h"

namespace memprof::report {
namespace {

constexpr int kTitleScale = 3;
constexpr int kTextScale = 2;
constexpr int kLineHeight = (kGlyphHeight + 4) * kTextScale;
constexpr int kSwatch = kGlyphHeight * kTextScale;
constexpr int kLegendGap = 28;  // between the map and the legend

// Every column spans the page's bytes at `unit` pixels per base slot; pages of a few hundred
// slots (16 KiB) get taller units so the picture is not a thin strip.
int unit_for(const HeapLayout& layout) {
  const auto base_slots = static_cast<int>(layout.page_size / layout.base_slot_size);
  return std::max(1, 1000 / std::max(base_slots, 1));
}

}  // namespace

std::string section_label(const MapPool& pool) { return fmt::format("{}-BYTE SLOTS", pool.slot_size); }

MapRaster MapRaster::plan(const HeapPageMap& map) {
  MapRaster r;
  const int pages = std::max<int>(1, static_cast<int>(map.pages.size()));
  // Few pages: wide columns fill ~800 pixels; many pages: 3-pixel columns (notch + 2) wrapping.
  r.column_width = std::clamp(800 / pages - kColumnGap, 3, 14);
  r.columns_per_band = std::max(1, kMaxMapWidth / (r.column_width + kColumnGap));
  const HeapLayout& layout = *map.layout;
  r.unit = unit_for(layout);
  r.band_height = static_cast<int>(layout.page_size / layout.base_slot_size) * r.unit;

  // Sections left to right on a row while they fit in kMaxMapWidth, then a new row below.
  int x = 0, row_y = 0, row_height = 0;
  for (const MapPool& pool : map.pools) {
    MapSection section;
    const int page_count = static_cast<int>(pool.page_count);
    section.columns_per_band = std::min(page_count, r.columns_per_band);
    section.bands = (page_count + r.columns_per_band - 1) / r.columns_per_band;
    section.width = std::max(section.columns_per_band * (r.column_width + kColumnGap),
                             text_width(section_label(pool), kLabelScale));
    section.height = kLabelHeight + section.bands * r.band_height + (section.bands - 1) * kBandGap;
    if (x > 0 && x + section.width > kMaxMapWidth) {
      row_y += row_height + kSectionGap;
      x = row_height = 0;
    }
    section.x = x;
    section.y = row_y;
    x += section.width + kSectionGap;
    row_height = std::max(row_height, section.height);
    r.map_width = std::max(r.map_width, section.x + section.width);
    r.sections.push_back(section);
  }
  r.map_height = row_y + row_height;
  return r;
}

PixelRect MapRaster::slot_rect(const HeapPageMap& map, size_t page_index, uint32_t index) const {
  const MapPage& page = map.pages[page_index];
  const MapSection& section = sections[page.pool];
  const int column_in_pool = static_cast<int>(page_index - map.pools[page.pool].first_page);
  const int band = column_in_pool / section.columns_per_band;
  const int column = column_in_pool % section.columns_per_band;
  const uint64_t base = map.layout->base_slot_size;
  const uint64_t offset = page.slots.first_slot - page.slots.body +
                          static_cast<uint64_t>(index) * page.slots.slot_size;
  PixelRect rect;
  rect.x = kMargin + section.x + column * (column_width + kColumnGap);
  rect.y = kMargin + section.y + kLabelHeight + band * (band_height + kBandGap) +
           static_cast<int>(offset / base) * unit;
  rect.w = column_width;
  rect.h = static_cast<int>(page.slots.slot_size / base) * unit;
  if (rect.h >= 4) rect.h -= 1;
  return rect;
}

Image render_heap_map(const HeapPageMap& map, const MapLegend& legend) {
  const MapRaster raster = MapRaster::plan(map);

  // Legend size first: the image must hold both.
  int legend_width = text_width(legend.title, kTitleScale);
  for (const std::string& note : legend.notes) {
    legend_width = std::max(legend_width, text_width(note, kTextScale));
  }
  std::vector<std::string> entries;
  for (const MapCategory& category : legend.categories) {
    entries.push_back(fmt::format("{} {}", category.label, category.count));
  }
  uint64_t empty = 0, pinned = 0;
  for (const MapCell& cell : map.cells) {
    empty += cell.category == kEmptySlot;
    pinned += cell.pinned;
  }
  entries.push_back(fmt::format("EMPTY SLOT {}", empty));
  entries.push_back(fmt::format("PINNED (NOTCH) {}", pinned));
  for (const std::string& entry : entries) {
    legend_width = std::max(legend_width, kSwatch + 8 + text_width(entry, kTextScale));
  }
  const int legend_height = kGlyphHeight * kTitleScale + 12 +
                            static_cast<int>(legend.notes.size() + 1 + entries.size()) * kLineHeight;

  const int legend_x = MapRaster::kMargin + raster.map_width + kLegendGap;
  const int width = legend_x + legend_width + MapRaster::kMargin;
  const int height = std::max(raster.map_height, legend_height) + 2 * MapRaster::kMargin;
  Image image(width, height, map_colors::kBackground);

  for (size_t i = 0; i < map.pools.size(); ++i) {
    const MapSection& section = raster.sections[i];
    draw_text(image, MapRaster::kMargin + section.x, MapRaster::kMargin + section.y,
              section_label(map.pools[i]), map_colors::kText, MapRaster::kLabelScale);
  }
  for (size_t p = 0; p < map.pages.size(); ++p) {
    const MapPage& page = map.pages[p];
    for (uint32_t i = 0; i < page.slots.slot_count; ++i) {
      const MapCell& cell = map.cell(page, i);
      const PixelRect r = raster.slot_rect(map, p, i);
      const Rgb color = cell.category == kEmptySlot || cell.category >= legend.categories.size()
                            ? map_colors::kEmptySlot
                            : legend.categories[cell.category].color;
      image.fill_rect(r.x, r.y, r.w, r.h, color);
      if (cell.pinned) image.fill_rect(r.x, r.y, raster.notch_width(), r.h, map_colors::kPinnedNotch);
    }
  }

  int y = MapRaster::kMargin;
  draw_text(image, legend_x, y, legend.title, map_colors::kText, kTitleScale);
  y += kGlyphHeight * kTitleScale + 12;
  for (const std::string& note : legend.notes) {
    draw_text(image, legend_x, y, note, map_colors::kText, kTextScale);
    y += kLineHeight;
  }
  y += kLineHeight;
  for (size_t i = 0; i < entries.size(); ++i) {
    // Entries: the categories, then "empty slot", then "pinned" (an empty cell with the notch).
    const bool is_category = i < legend.categories.size();
    const bool is_pinned = i == entries.size() - 1;
    image.fill_rect(legend_x, y, kSwatch, kSwatch,
                    is_category ? legend.categories[i].color : map_colors::kEmptySlot);
    if (is_pinned) {
      image.fill_rect(legend_x, y, kSwatch / 4, kSwatch, map_colors::kPinnedNotch);
    }
    image.stroke_rect(legend_x, y, kSwatch, kSwatch, map_colors::kText);
    draw_text(image, legend_x + kSwatch + 8, y, entries[i], map_colors::kText, kTextScale);
    y += kLineHeight;
  }
  return image;
}

}  // namespace memprof::report
