#include "report/heap_geometry.h"

#include <array>
#include <charconv>

namespace memprof::report {
namespace {

constexpr uint64_t kWord = 8;

// See the table in heap_geometry.h; gc.c is the source of every number here.
constexpr std::array<HeapLayout, 2> kLayouts = {{
    {"Ruby 2.x-3.0", 200, 300, /*page_alignment=*/16 * 1024,
     /*page_size=*/16 * 1024 - 5 * kWord, /*header_size=*/kWord, /*base_slot_size=*/40},
    {"Ruby 3.1+", 301, 499, /*page_alignment=*/64 * 1024,
     /*page_size=*/64 * 1024, /*header_size=*/kWord, /*base_slot_size=*/40},
}};

constexpr int kFirstVariableWidthVersion = 302;  // "slot_size" appears in dumps

bool parse_part(std::string_view text, int& value) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::span<const HeapLayout> known_layouts() { return kLayouts; }

// MAJOR.MINOR or MAJOR.MINOR.PATCH, as RUBY_VERSION writes it (spaces and a newline around it,
// as `puts RUBY_VERSION` prints it, are no part of it).
Result<const HeapLayout*> layout_for_ruby_version(std::string_view given) {
  constexpr std::string_view kSpace = " \t\r\n";
  const size_t first = given.find_first_not_of(kSpace);
  const std::string_view version =
      first == std::string_view::npos ? std::string_view{} : given.substr(first, given.find_last_not_of(kSpace) - first + 1);
  int parts[3] = {0, 0, 0};
  size_t count = 0;
  bool valid = true;
  for (std::string_view rest = version; valid;) {
    const size_t dot = rest.find('.');
    valid = count < 3 && parse_part(rest.substr(0, dot), parts[count]) && parts[count] >= 0;
    ++count;
    if (dot == std::string_view::npos) break;
    rest = rest.substr(dot + 1);
  }
  if (!valid || count < 2 || parts[1] > 99) {
    return err("invalid Ruby version '{}' (expected MAJOR.MINOR, e.g. 3.1)", version);
  }
  const int key = parts[0] * 100 + parts[1];
  for (const HeapLayout& layout : kLayouts) {
    if (key >= layout.first_version && key <= layout.last_version) return &layout;
  }
  return err("no known heap layout for Ruby {} (known: 2.0 to 4.x)", version);
}

PageSlots page_slots(const HeapLayout& layout, uint64_t body, uint32_t slot_size) {
  const uint64_t base = layout.base_slot_size;
  uint64_t start = body + layout.header_size;
  if (start % base != 0) {
    start += base - start % base;
    // Ruby 3.2+ (gc.c): when the first base slot is slot 1 of the page, move on to the first
    // index that is a multiple of slot_size / base, so that objects line up with the mark
    // bitmap. For 40-byte slots (every page before 3.2) this adds nothing.
    if ((start - body) / base == 1) start += slot_size - base;
  }
  PageSlots page;
  page.body = body;
  page.first_slot = start;
  page.slot_size = slot_size;
  const uint64_t used = start - body;
  page.slot_count = used >= layout.page_size
                        ? 0
                        : static_cast<uint32_t>((layout.page_size - used) / slot_size);
  return page;
}

std::optional<SlotPosition> SlotLocator::locate(uint64_t address, uint32_t slot_size) {
  if (slot_size == 0) slot_size = static_cast<uint32_t>(layout_.base_slot_size);
  if (slot_size % layout_.base_slot_size != 0) return std::nullopt;
  const uint64_t body = address & ~(layout_.page_alignment - 1);
  if (last_.slot_size != slot_size || last_.body != body) {
    last_ = page_slots(layout_, body, slot_size);
  }
  if (address < last_.first_slot) return std::nullopt;
  const uint64_t offset = address - last_.first_slot;
  if (offset % slot_size != 0 || offset / slot_size >= last_.slot_count) return std::nullopt;
  return SlotPosition{body, static_cast<uint32_t>(offset / slot_size)};
}

std::optional<SlotPosition> locate_slot(const HeapLayout& layout, uint64_t address,
                                        uint32_t slot_size) {
  return SlotLocator(layout).locate(address, slot_size);
}

LayoutChoice derive_layout(std::span<const SlotAddress> objects, const HeapLayout* forced) {
  auto count_misfits = [&](const HeapLayout& layout) {
    uint64_t misfits = 0;
    SlotLocator locator(layout);
    for (const SlotAddress& object : objects) {
      if (!locator.locate(object.address, object.slot_size)) ++misfits;
    }
    return misfits;
  };
  if (forced != nullptr) {
    return {forced, count_misfits(*forced), fmt::format("{} layout requested", forced->name)};
  }

  if (objects.empty()) {
    return {&kLayouts.back(), 0, "the dump has no objects; assuming the current layout"};
  }
  bool has_slot_size = false;
  for (const SlotAddress& object : objects) has_slot_size |= object.slot_size != 0;

  LayoutChoice best;
  uint64_t best_misfits = UINT64_MAX;
  std::string rejected;
  for (const HeapLayout& layout : kLayouts) {
    if (has_slot_size && layout.last_version < kFirstVariableWidthVersion) continue;
    const uint64_t misfits = count_misfits(layout);
    if (misfits == 0) {
      std::string why = has_slot_size
                            ? "objects carry slot_size, written by Ruby 3.2 and later"
                            : fmt::format("every object address fits its {} KiB pages",
                                          layout.page_alignment / 1024);
      if (!rejected.empty()) why += "; " + rejected;
      return {&layout, 0, std::move(why)};
    }
    if (!rejected.empty()) rejected += ", ";
    rejected += fmt::format("{} object{} cannot sit in {} pages", misfits, misfits == 1 ? "" : "s",
                            layout.name);
    if (misfits < best_misfits) {
      best_misfits = misfits;
      best.layout = &layout;
    }
  }
  best.misfits = best_misfits;
  best.reason = "no layout fits every object (" + rejected + ")";
  return best;
}

}  // namespace memprof::report
