// The options `memprof analyze` and `memprof diff` share to pick objects and show examples:
// --class, --site, --type (heap/object_filter.h) and --samples.
#pragma once

#include <cstddef>

#include "cli/command.h"
#include "heap/object_filter.h"

namespace memprof::cli {

inline void add_object_filter_options(CLI::App& sub, heap::ObjectFilter& filter, size_t& samples) {
  // An empty value would silently select everything (the filter's "none given").
  sub.add_option("--class", filter.class_label,
                 "Only objects of this class, named as the report names it (e.g. 'Foo::Bar', "
                 "'(IMEMO:iseq)', 'Thread (VM/thread)')")
      ->check(not_empty());
  sub.add_option("--site", filter.site,
                 "Only objects allocated at this site: 'file:line' or 'file', whole or its tail "
                 "after a '/' (e.g. 'app/models/user.rb:12')")
      ->check(not_empty());
  sub.add_option("--type", filter.type, "Only objects of this type (STRING, ARRAY, HASH, DATA, ...)")
      ->check(not_empty());
  sub.add_option("--samples", samples,
                 "Show up to N object addresses per row (analyze: those retaining the most; "
                 "diff: the largest) to look at with `memprof show DUMP ADDRESS`")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
}

}  // namespace memprof::cli
