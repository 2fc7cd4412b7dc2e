// Grouping of live (or allocated) objects by allocation site and class, and the text line of
// Memprof.stats. Runtime-independent: classes are opaque keys named by the caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/track/site_table.h"

namespace memprof::track {

struct Sample {
  uint32_t site;
  uint64_t class_key;  // the runtime's class identity at sampling time
  uint64_t bytes;
};

struct Group {
  uint32_t site;
  uint64_t class_key;
  uint64_t count;
  uint64_t bytes;
};

// One group per distinct (site, class_key), in no particular order.
std::vector<Group> group_samples(const std::vector<Sample>& samples);

struct NamedGroup {
  std::string file;
  int line;
  std::string class_name;
  uint64_t count;
  uint64_t bytes;
};

// Names the groups and merges those whose names coincide (two classes may share a name), then
// sorts: count descending, then file, line, class name ascending (a deterministic order).
std::vector<NamedGroup> name_groups(const std::vector<Group>& groups, const SiteTable& sites,
                                    const std::function<std::string(uint64_t)>& class_name);

// "%7d %s:%d:%s" — the original memprof's stats line, without the newline.
std::string stats_line(const NamedGroup& group);

}  // namespace memprof::track
