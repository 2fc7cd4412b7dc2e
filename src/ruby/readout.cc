#include "ruby/readout.h"

#include <fstream>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "core/util/stack_scrub.h"
#include "ruby/class_key.h"
#include "ruby/dump_own_objects.h"
#include "ruby/heap_at_fork.h"
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

bool site_is_shown(const track::SiteTable& sites, uint32_t site) {
  if (site == track::SiteTable::kInternalSite) return false;
  std::string_view file = sites.file(site);
  for (const std::string& prefix : g_ignored_prefixes)
    if (file.starts_with(prefix)) return false;
  return true;
}

// site_is_shown, decided once per site: read-outs ask it for every entry.
class ShownSites {
 public:
  explicit ShownSites(const track::SiteTable& sites) : sites_(sites), shown_(sites.size(), kUndecided) {}
  bool operator()(uint32_t site) {
    uint8_t& shown = shown_[site];
    if (shown == kUndecided) shown = site_is_shown(sites_, site);
    return shown != 0;
  }

 private:
  static constexpr uint8_t kUndecided = 2;
  const track::SiteTable& sites_;
  std::vector<uint8_t> shown_;
};

// A shown live object, with the class it has now (classes are never stored: they may move or
// die; reading them from a live object is always safe).
struct Item {
  uintptr_t address;
  uint32_t site;
  uint8_t type;
  uint64_t class_key;
  uint64_t bytes;
};

// The shown live entries (only those born in the open allocation window, when asked), copied
// out under the tracker's lock (nothing here calls Ruby: rb_class_real and rb_obj_memsize_of
// only read the heap).
enum class Born { kAnytime, kInWindow };
std::vector<Item> shown_items(const Tracker& tracker, bool with_memsize,
                              Born born = Born::kAnytime) {
  return tracker.with_tables([&](const track::LiveTable& table, const track::SiteTable& sites) {
    ShownSites shown(sites);
    std::vector<Item> items;
    items.reserve(table.size());
    table.for_each([&](const track::LiveEntry& e) {
      if (born == Born::kInWindow && !e.in_window) return;
      if (!shown(e.site)) return;
      VALUE klass = reinterpret_cast<const struct RBasic*>(e.address)->klass;
      if (klass == 0) return;  // hidden VM internals
      items.push_back(Item{e.address, e.site, e.type, class_key_of(e.address, klass),
                           with_memsize ? rb_obj_memsize_of(e.address) : 0});
    });
    return items;
  });
}

std::vector<track::Sample> samples_of(const std::vector<Item>& items) {
  std::vector<track::Sample> samples;
  samples.reserve(items.size());
  for (const Item& item : items)
    samples.push_back(track::Sample{item.site, item.class_key, item.bytes});
  return samples;
}

std::string to_string(VALUE ruby_string) {
  return std::string(RSTRING_PTR(ruby_string), RSTRING_LEN(ruby_string));
}

// The object a singleton class belongs to (Class#attached_object, public from Ruby 3.2; the
// __attached__ instance variable before).
VALUE attached_object(VALUE singleton_class) {
#if RUBY_API_VERSION_CODE >= 30200
  return rb_class_attached_object(singleton_class);
#else
  return rb_attr_get(singleton_class, rb_intern("__attached__"));
#endif
}

// #<Class:Foo> for the singleton class of a named class or module, #<Class:#<Foo>> for that of
// an instance of Foo or of an anonymous class (one group per kind of owner, not per owner).
std::string singleton_class_name(VALUE singleton_class) {
  VALUE owner = attached_object(singleton_class);
  bool module = RB_TYPE_P(owner, RUBY_T_CLASS) || RB_TYPE_P(owner, RUBY_T_MODULE);
  std::string inner;
  if (RB_TYPE_P(owner, RUBY_T_CLASS) && FL_TEST(owner, RUBY_FL_SINGLETON))
    inner = singleton_class_name(owner);
  else if (module && !NIL_P(rb_mod_name(owner)))
    inner = to_string(rb_mod_name(owner));
  else
    inner = "#<" + to_string(rb_class_name(rb_obj_class(owner))) + ">";
  return "#<Class:" + inner + ">";
}

// Class names, resolved once per class key by resolve() -- which calls Ruby, so callers keep GC
// disabled (no class in `items` can be freed or moved meanwhile; rb_class_name may allocate) and
// do not hold the tracker's lock -- and then looked up without calling Ruby.
class ClassNames {
 public:
  void resolve(const std::vector<Item>& items) {
    for (const Item& item : items) resolve_key(item.class_key);
  }
  // Keys taken from objects freed earlier: their class may have been freed since, or moved by
  // compaction, and its slot may hold anything now. Named only if the slot still holds a class.
  void resolve_if_alive(const std::vector<track::Group>& groups, const track::HeapRanges& ranges) {
    for (const track::Group& group : groups) {
      uintptr_t address = group.class_key & ~kSingletonClassKey;
      int type = ranges.contains_slot(address) ? slot_type(address) : RUBY_T_NONE;
      if (type == RUBY_T_CLASS || type == RUBY_T_MODULE)
        resolve_key(group.class_key);
      else
        names_.try_emplace(group.class_key, "(class freed or moved since)");
    }
  }
  std::string operator()(uint64_t class_key) const {
    auto it = names_.find(class_key);
    return it != names_.end() ? it->second : std::string("(unresolved)");
  }

 private:
  void resolve_key(uint64_t class_key) {
    auto [it, fresh] = names_.try_emplace(class_key);
    if (!fresh) return;
    auto klass = static_cast<VALUE>(class_key & ~kSingletonClassKey);
    it->second = (class_key & kSingletonClassKey) != 0 ? singleton_class_name(klass)
                                                       : to_string(rb_class_name(klass));
  }
  std::unordered_map<uint64_t, std::string> names_;
};

// Groups `items` (and groups counted elsewhere) by site and class, named: class names first
// (Ruby), then the site names under the tracker's lock (other Ractors may be adding sites).
std::vector<track::NamedGroup> named_groups(const Tracker& tracker,
                                            const std::vector<Item>& items, ClassNames& names,
                                            std::vector<track::Group> more = {}) {
  names.resolve(items);
  std::vector<track::Group> groups = track::group_samples(samples_of(items));
  groups.insert(groups.end(), more.begin(), more.end());
  return tracker.with_tables([&](const track::LiveTable&, const track::SiteTable& sites) {
    return track::name_groups(groups, sites, std::cref(names));
  });
}

// The site of a table entry as shown to the user: none for memprof's own objects. The file
// name's storage is never freed, so the view outlives the lock.
track::SourceLocation location_of(const track::SiteTable& sites, const track::LiveEntry& entry) {
  return track::SourceLocation{sites.file(entry.site), sites.line(entry.site), entry.generation};
}

}  // namespace

void ignore_path_prefix(std::string prefix) { g_ignored_prefixes.push_back(std::move(prefix)); }

namespace {

// Whether the table can be read out now: exact (see Tracker::exactness) and pruned of the dead.
Status exact_and_pruned(Tracker& tracker) {
  MEMPROF_TRY_STATUS(tracker.exactness());
  MEMPROF_TRY_STATUS(tracker.prune());
  return ok_status();
}

// The shown live objects by site and class; their memsize only when asked (it costs a call per
// object).
Result<std::vector<track::NamedGroup>> shown_groups(Tracker& tracker, bool with_memsize) {
  MEMPROF_TRY_STATUS(exact_and_pruned(tracker));
  Tracker::Pause pause(tracker);
  GcDisabled gc;
  std::vector<Item> items = shown_items(tracker, with_memsize);
  ClassNames names;
  return named_groups(tracker, items, names);
}

}  // namespace

Result<std::vector<std::string>> stats_lines(Tracker& tracker) {
  MEMPROF_TRY(groups, shown_groups(tracker, false));
  std::vector<std::string> lines;
  for (const auto& group : groups) lines.push_back(track::stats_line(group));
  return lines;
}

Result<std::vector<track::NamedGroup>> live_groups(Tracker& tracker) {
  return shown_groups(tracker, true);
}

Status report_begin(Tracker& tracker) {
  rb_gc_start();
  g_report_gc_was_disabled = RTEST(rb_gc_disable());
  Status started = tracker.start(Mechanism::kAuto);
  if (!started.ok() && !g_report_gc_was_disabled) rb_gc_enable();
  return started;
}

namespace {

// What report_end knows before its GC: the block's objects and their groups.
struct AllocatedInBlock {
  std::vector<Item> items;
  ClassNames names;
  std::vector<track::NamedGroup> groups;
};

// Stops tracking and reads what the block allocated; GC back to its previous state.
// noinline: this walk leaves the objects' addresses in its registers and frame, and the GC that
// decides what was retained reads both conservatively (the callee-saved registers through its
// setjmp). Returning first restores the caller's registers and pops the frame, which the caller
// then zeroes. (Inlined, one dead String of a 9,000-String block was kept: seen on Ruby 3.4
// with the extension compiled several sources to a unit.)
__attribute__((noinline)) Result<AllocatedInBlock> read_allocated_in_block(Tracker& tracker) {
  tracker.stop();
  // GC is still disabled from report_begin: every object the block allocated is in the heap
  // unless the block ran GC.start itself; prune drops those. Its success also means that no
  // other Ractor runs, so nothing else allocates until the caller's liveness check.
  Status exact = exact_and_pruned(tracker);
  AllocatedInBlock allocated;
  if (exact.ok()) {
    allocated.items = shown_items(tracker, true);
    allocated.groups = named_groups(tracker, allocated.items, allocated.names);
  }
  if (!g_report_gc_was_disabled) rb_gc_enable();
  if (!exact.ok()) {
    tracker.clear();
    return exact.error();
  }
  return allocated;
}

}  // namespace

Result<ReportSnapshot> report_end(Tracker& tracker, const std::vector<VALUE>& kept) {
  MEMPROF_TRY(allocated, read_allocated_in_block(tracker));
  // Nothing may allocate between this GC and the liveness check below: hooks are off, so a
  // new object could land in a freed slot and look like a retained one.
  // Over zeroed stack: words the block's own deep calls, and the walk above, left below this
  // frame must not keep its garbage alive when the GC's frames reuse that memory.
  util::clear_stack_below();
  rb_gc_start();
  track::HeapRanges ranges = collect_heap_ranges();
  std::unordered_set<uintptr_t> kept_addresses(kept.begin(), kept.end());
  std::vector<Item> retained;
  for (const Item& item : allocated.items) {
    track::LiveEntry entry{.address = item.address, .site = item.site, .type = item.type};
    if (entry_is_live(entry, ranges) && !kept_addresses.contains(item.address))
      retained.push_back(item);
  }
  ReportSnapshot snapshot;
  snapshot.allocated = std::move(allocated.groups);
  // Every retained class was named above, so this resolves from the cache.
  snapshot.retained = named_groups(tracker, retained, allocated.names);
  tracker.clear();
  return snapshot;
}

Result<ReportSnapshot> window_end(Tracker& tracker) {
  if (!tracker.window_open()) return err("no allocation window is open");
  // A full GC with immediate sweep decides what the window retained; the objects it frees are
  // summed as freed by the free watch. Over a zeroed stack, as in report_end.
  util::clear_stack_below();
  rb_gc_start();
  if (Status exact = exact_and_pruned(tracker); !exact.ok()) {
    (void)tracker.end_window();
    return exact.error();
  }
  Tracker::Pause pause(tracker);
  GcDisabled gc;
  std::vector<Item> retained = shown_items(tracker, true, Born::kInWindow);
  MEMPROF_TRY(freed_groups, tracker.end_window());
  std::vector<track::Group> freed;
  tracker.with_tables([&](const track::LiveTable&, const track::SiteTable& sites) {
    for (const track::Group& group : freed_groups)
      if (site_is_shown(sites, group.site)) freed.push_back(group);
  });
  ClassNames names;
  names.resolve_if_alive(freed, collect_heap_ranges());
  ReportSnapshot snapshot;
  snapshot.retained = named_groups(tracker, retained, names);
  snapshot.allocated = named_groups(tracker, retained, names, std::move(freed));
  return snapshot;
}

void report_abort(Tracker& tracker) {
  tracker.stop();
  tracker.clear();
  if (!g_report_gc_was_disabled) rb_gc_enable();
}

Result<std::vector<VALUE>> tracked_objects(Tracker& tracker) {
  MEMPROF_TRY_STATUS(exact_and_pruned(tracker));
  std::vector<VALUE> objects;
  for (const Item& item : shown_items(tracker, false)) objects.push_back(item.address);
  return objects;
}

std::optional<track::SourceLocation> site_of(Tracker& tracker, VALUE object) {
  if (RB_SPECIAL_CONST_P(object)) return std::nullopt;
  return tracker.with_tables([&](const track::LiveTable& table, const track::SiteTable& sites)
                                 -> std::optional<track::SourceLocation> {
    auto entry = table.find(object);
    if (!entry || slot_type(object) != entry->type || !site_is_shown(sites, entry->site)) return std::nullopt;
    return location_of(sites, *entry);
  });
}

std::string annotate_object_line(Tracker& tracker, VALUE object, const std::string& line) {
  auto site = site_of(tracker, object);
  return track::annotate_dump_line(line, [&](uintptr_t address)
                                             -> std::optional<track::SourceLocation> {
    if (address != object) return std::nullopt;
    return site;
  });
}

Result<track::AnnotateCounts> annotate_dump_file(Tracker& tracker, const std::string& raw_path,
                                                 const std::string& path, uint32_t last_gc) {
  // No Ruby code runs from this prune to the end of the copy (it holds the GVL): nothing can
  // change hands in between.
  MEMPROF_TRY_STATUS(tracker.prune());
  std::ifstream in(raw_path, std::ios::binary);
  if (!in) return err("{}: cannot open the raw dump", raw_path);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return err("{}: cannot open for writing", path);
  // The whole copy holds the lock: no Ruby call happens in it, and another Ractor's record
  // must not rehash the table under the lookups.
  // The objects this dump_all call made itself (the File the dump is written through, ...) are
  // marked as such (dump_own_objects.h); memprof's own sites are not written, as stats leaves
  // them out.
  DumpOwnObjects& own = DumpOwnObjects::instance();
  own.dump_written();
  auto counts = tracker.with_tables([&](const track::LiveTable& table,
                                        const track::SiteTable& sites) {
    ShownSites shown(sites);
    return track::annotate_dump(
        in, out,
        [&](uintptr_t address) -> std::optional<track::SourceLocation> {
          auto entry = table.find(address);
          // (Generations are GC counts kept in 32 bits: compared as distances, which wrap.)
          if (!entry || static_cast<int32_t>(entry->generation - last_gc) > 0) return std::nullopt;
          if (!shown(entry->site)) return std::nullopt;
          return location_of(sites, *entry);
        },
        [&](uintptr_t address) { return own.own(address); },
        // Written in a forked child: the roots and threads as the parent had them.
        heap_at_fork() ? &*heap_at_fork() : nullptr);
  });
  if (!counts.ok()) return err("{}: {}", path, counts.message());
  out.close();
  if (!out) return err("{}: write failed", path);
  return counts;
}

}  // namespace memprof::ruby
