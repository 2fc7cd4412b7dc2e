#include "ruby/readout.h"

#include <fstream>
#include <string_view>
#include <unordered_map>

#include "ruby/heap_liveness.h"
#include "ruby/tracker.h"

namespace memprof::ruby {

namespace {

std::vector<std::string> g_ignored_prefixes;
// GC state before Memprof.report disabled it (reports never nest: the tracker is single).
bool g_report_gc_was_disabled = false;

// Disables GC for a scope, restoring the previous state.
class GcDisabled {
 public:
  GcDisabled() : was_disabled_(RTEST(rb_gc_disable())) {}
  ~GcDisabled() {
    if (!was_disabled_) rb_gc_enable();
  }
  GcDisabled(const GcDisabled&) = delete;
  GcDisabled& operator=(const GcDisabled&) = delete;

 private:
  bool was_disabled_;
};

bool site_is_shown(const Tracker& tracker, uint32_t site) {
  if (site == track::SiteTable::kInternalSite) return false;
  std::string_view file = tracker.sites().file(site);
  for (const std::string& prefix : g_ignored_prefixes)
    if (file.starts_with(prefix)) return false;
  return true;
}

// A shown live object, with the class it has now (classes are never stored: they may move or
// die; reading them from a live object is always safe).
struct Item {
  uintptr_t address;
  uint32_t site;
  uint8_t type;
  VALUE klass;
  uint64_t bytes;
};

std::vector<Item> shown_items(const Tracker& tracker, bool with_memsize) {
  std::vector<uint8_t> shown(tracker.sites().size(), 2);  // 2: not decided yet
  std::vector<Item> items;
  items.reserve(tracker.table().size());
  tracker.table().for_each([&](const track::LiveEntry& e) {
    if (shown[e.site] == 2) shown[e.site] = site_is_shown(tracker, e.site);
    if (!shown[e.site]) return;
    VALUE klass = reinterpret_cast<const struct RBasic*>(e.address)->klass;
    if (klass == 0) return;  // hidden VM internals
    items.push_back(Item{e.address, e.site, e.type, rb_class_real(klass),
                         with_memsize ? rb_obj_memsize_of(e.address) : 0});
  });
  return items;
}

std::vector<track::Sample> samples_of(const std::vector<Item>& items) {
  std::vector<track::Sample> samples;
  samples.reserve(items.size());
  for (const Item& item : items) samples.push_back(track::Sample{item.site, item.klass, item.bytes});
  return samples;
}

// Class names, resolved once per class. Callers keep GC disabled while names are resolved, so
// no class in `items` can be freed or moved under us (rb_class_name may allocate).
class ClassNames {
 public:
  std::string operator()(uint64_t klass) {
    auto [it, fresh] = names_.try_emplace(klass);
    if (fresh) {
      VALUE name = rb_class_name(static_cast<VALUE>(klass));
      it->second.assign(RSTRING_PTR(name), RSTRING_LEN(name));
    }
    return it->second;
  }

 private:
  std::unordered_map<uint64_t, std::string> names_;
};

// The site of a table entry as shown to the user: none for memprof's own objects.
std::optional<track::SourceLocation> shown_location(const Tracker& tracker,
                                                    const track::LiveEntry& entry) {
  if (entry.site == track::SiteTable::kInternalSite) return std::nullopt;
  return track::SourceLocation{tracker.sites().file(entry.site), tracker.sites().line(entry.site)};
}

}  // namespace

void ignore_path_prefix(std::string prefix) { g_ignored_prefixes.push_back(std::move(prefix)); }

std::vector<std::string> stats_lines(Tracker& tracker) {
  tracker.prune();
  Tracker::Pause pause(tracker);
  GcDisabled gc;
  std::vector<Item> items = shown_items(tracker, false);
  ClassNames names;
  auto groups = track::name_groups(track::group_samples(samples_of(items)), tracker.sites(),
                                   std::ref(names));
  std::vector<std::string> lines;
  lines.reserve(groups.size());
  for (const auto& group : groups) lines.push_back(track::stats_line(group));
  return lines;
}

Status report_begin(Tracker& tracker) {
  rb_gc_start();
  g_report_gc_was_disabled = RTEST(rb_gc_disable());
  Status started = tracker.start(Mechanism::kAuto);
  if (!started.ok() && !g_report_gc_was_disabled) rb_gc_enable();
  return started;
}

ReportSnapshot report_end(Tracker& tracker) {
  tracker.stop();
  ReportSnapshot snapshot;
  ClassNames names;
  std::vector<Item> items;
  {
    // GC is still disabled from report_begin: every object the block allocated is in the
    // heap unless the block ran GC.start itself; prune drops those.
    tracker.prune();
    items = shown_items(tracker, true);
    snapshot.allocated = track::name_groups(track::group_samples(samples_of(items)),
                                            tracker.sites(), std::ref(names));
  }
  if (!g_report_gc_was_disabled) rb_gc_enable();
  // Nothing may allocate between this GC and the liveness check below: hooks are off, so a
  // new object could land in a freed slot and look like a retained one.
  rb_gc_start();
  track::HeapRanges ranges = collect_heap_ranges();
  std::vector<Item> retained;
  for (const Item& item : items)
    if (entry_is_live(track::LiveEntry{item.address, item.site, item.type}, ranges))
      retained.push_back(item);
  // Every retained class was named above, so this resolves from the cache.
  snapshot.retained = track::name_groups(track::group_samples(samples_of(retained)),
                                         tracker.sites(), std::ref(names));
  tracker.clear();
  return snapshot;
}

std::optional<track::SourceLocation> site_of(Tracker& tracker, VALUE object) {
  if (RB_SPECIAL_CONST_P(object)) return std::nullopt;
  auto entry = tracker.table().find(object);
  if (!entry || slot_type(object) != entry->type) return std::nullopt;
  return shown_location(tracker, *entry);
}

std::string annotate_object_line(Tracker& tracker, VALUE object, const std::string& line) {
  return track::annotate_dump_line(line, [&](uintptr_t address)
                                             -> std::optional<track::SourceLocation> {
    if (address != object) return std::nullopt;
    return site_of(tracker, object);
  });
}

Result<track::AnnotateCounts> annotate_dump_file(Tracker& tracker, const std::string& raw_path,
                                                 const std::string& path) {
  std::ifstream in(raw_path, std::ios::binary);
  if (!in) return err("{}: cannot open the raw dump", raw_path);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return err("{}: cannot open for writing", path);
  auto counts = track::annotate_dump(in, out, [&](uintptr_t address)
                                                  -> std::optional<track::SourceLocation> {
    auto entry = tracker.table().find(address);
    if (!entry) return std::nullopt;
    return shown_location(tracker, *entry);
  });
  if (!counts.ok()) return err("{}: {}", path, counts.message());
  out.close();
  if (!out) return err("{}: write failed", path);
  return counts;
}

}  // namespace memprof::ruby
