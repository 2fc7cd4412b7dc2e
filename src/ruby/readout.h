// Reading the tracker out: stats lines, the allocated/retained snapshot of a report, the
// allocation site of one object, and site-annotated heap dumps. All of these run on a Ruby
// thread, outside GC; they prune dead entries first.
//
// Objects without a class (hidden VM internals, klass == 0), objects allocated by memprof
// itself and objects allocated in the files registered with ignore_path_prefix() (the gem's
// own Ruby code) are tracked but never shown.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/track/aggregate.h"
#include "core/track/dump_annotate.h"
#include "core/util/result.h"
#include "ruby/ruby_headers.h"

namespace memprof::ruby {

class Tracker;

void ignore_path_prefix(std::string prefix);

// Memprof.stats: one line per live (site, class) group, largest first.
Result<std::vector<std::string>> stats_lines(Tracker& tracker);

// The same groups with their bytes (rb_obj_memsize_of), for the attach agent's top and leaks.
Result<std::vector<track::NamedGroup>> live_groups(Tracker& tracker);

struct ReportSnapshot {
  std::vector<track::NamedGroup> allocated;
  std::vector<track::NamedGroup> retained;
};

// Memprof.report. begin: full GC, then GC disabled so that every object the block allocates
// is still in the heap when the block ends (memory_profiler's semantics), then tracking.
Status report_begin(Tracker& tracker);
// end: stop tracking; allocated = the block's objects with their memsize; GC back to its
// previous state; a full GC with immediate sweep over a zeroed stack; retained = those still
// alive, except `kept`: objects the caller holds on purpose (a response it is returning).
Result<ReportSnapshot> report_end(Tracker& tracker, const std::vector<VALUE>& kept);
// When the block raised: stop tracking, forget, GC back to its previous state.
void report_abort(Tracker& tracker);

// `memprof report -p PID --duration`: the same snapshot for a time window of a running process,
// whose GC keeps running, opened by Tracker::begin_window. window_end: a full GC; retained =
// objects born in the window and still alive; allocated = those plus the ones freed during the
// window, with their memsize at the free.
Result<ReportSnapshot> window_end(Tracker& tracker);

// The shown live objects tracked so far (Memprof.dump { }). The caller keeps GC disabled, so
// no address can be freed and reused before it becomes a VALUE again.
Result<std::vector<VALUE>> tracked_objects(Tracker& tracker);

// The allocation site of a live object, if memprof tracked it.
std::optional<track::SourceLocation> site_of(Tracker& tracker, VALUE object);

// ObjectSpace.dump(object)'s line with the object's allocation site added.
std::string annotate_object_line(Tracker& tracker, VALUE object, const std::string& line);

// Copies the dump_all file at `raw_path` to `path`, adding allocation sites. GC may have run
// while the dump was written (other threads allocate meanwhile), so a slot may hold another
// object now than the one the dump describes. The caller pruned the table (which finishes any
// lazy sweep) and read rb_gc_count() as `last_gc` before the dump began: from then on a slot
// changes hands only through a later collection, and its new object is recorded with a later
// generation. So this prunes again (dropping the objects freed meanwhile) and annotates only
// entries of generation <= last_gc: objects alive since before the dump, in the slot the dump
// saw them in. (Objects moved by compaction meanwhile are the caller's concern: it retries.)
Result<track::AnnotateCounts> annotate_dump_file(Tracker& tracker, const std::string& raw_path,
                                                 const std::string& path, uint32_t last_gc);

}  // namespace memprof::ruby
