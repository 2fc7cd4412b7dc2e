#include "ruby/heap_liveness.h"

namespace memprof::ruby {

namespace {
int add_page(void* start, void* end, size_t stride, void* ranges) {
  static_cast<track::HeapRanges*>(ranges)->add(reinterpret_cast<uintptr_t>(start),
                                               reinterpret_cast<uintptr_t>(end), stride);
  return 0;  // keep walking
}
}  // namespace

track::HeapRanges collect_heap_ranges() {
  track::HeapRanges ranges;
  rb_objspace_each_objects(&add_page, &ranges);
  ranges.seal();
  return ranges;
}

}  // namespace memprof::ruby
