// Profiles the profile tests share: written by the unit tests, read back by `go tool pprof`, and
// drawn in Chromium by the click-through test (through write_flame_graph_page).
#pragma once

#include "profile/stack_profile.h"

namespace memprof::profile::testing {

// One leak: leak_it (libleak.so) holds 100 objects, 409,600 bytes, under main;ruby_line.
StackProfile leak_profile();

// The page the click-through test drives (totals: alloc_objects 5,402, inuse_objects 112,
// inuse_space 458,752), objects / bytes:
//   main;ruby_line;leak_it                      100 / 409,600 allocated, 100 / 409,600 in use
//   main;ruby_line;rb_str_new;ruby_xmalloc      5,000 / 200,000 allocated, 10 / 40,960 in use
//   main;other_work;0x7f00dead0000 [libfoo.so]  300 / 30,000 allocated, nothing in use
//   main;other_work;<b>bold</b>;</script>       2 / 8,192 allocated and in use
StackProfile shop_profile();

}  // namespace memprof::profile::testing
