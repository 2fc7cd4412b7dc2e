#include "sample_profiles.h"

namespace memprof::profile::testing {

StackProfile leak_profile() {
  StackProfile profile;
  profile.frames = {
      {.function = "main",
       .library = "/usr/bin/ruby3.1",
       .file = "main.c",
       .line = 38,
       .address = 0x555555555100},
      {.function = "ruby_line",
       .library = "/usr/lib/libruby.so.3.1",
       .file = "vm.c",
       .line = 2100,
       .address = 0x7f0000101000},
      {.function = "leak_it",
       .library = "/usr/lib/libleak.so",
       .file = "leak.c",
       .line = 12,
       .address = 0x7f0000201000},
  };
  profile.samples = {{.frames = {2, 1, 0},
                      .alloc_objects = 100,
                      .alloc_space = 409600,
                      .inuse_objects = 100,
                      .inuse_space = 409600}};
  profile.time_nanos = 1700000000000000000;
  profile.duration_nanos = 10000000000;
  profile.title = "memprof native -p 4242";
  return profile;
}

StackProfile shop_profile() {
  StackProfile profile = leak_profile();
  profile.frames.push_back({.function = "rb_str_new",
                            .library = "/usr/lib/libruby.so.3.1",
                            .file = "string.c",
                            .line = 900,
                            .address = 0x7f0000102000});
  profile.frames.push_back({.function = "ruby_xmalloc",
                            .library = "/usr/lib/libruby.so.3.1",
                            .file = "gc.c",
                            .line = 12000,
                            .address = 0x7f0000103000});
  profile.frames.push_back({.function = "other_work",
                            .library = "/usr/lib/libruby.so.3.1",
                            .file = "vm.c",
                            .line = 2300,
                            .address = 0x7f0000104000});
  profile.frames.push_back({.library = "/usr/lib/libfoo.so", .address = 0x7f00dead0000});
  profile.frames.push_back({.function = "<b>bold</b>;</script>",
                            .library = "/usr/lib/libweird.so",
                            .address = 0x7f0000301000});
  profile.samples.push_back({.frames = {4, 3, 1, 0},
                             .alloc_objects = 5000,
                             .alloc_space = 200000,
                             .inuse_objects = 10,
                             .inuse_space = 40960});
  profile.samples.push_back({.frames = {6, 5, 0}, .alloc_objects = 300, .alloc_space = 30000});
  profile.samples.push_back({.frames = {7, 5, 0},
                             .alloc_objects = 2,
                             .alloc_space = 8192,
                             .inuse_objects = 2,
                             .inuse_space = 8192});
  profile.title = "shop </script> server";
  return profile;
}

}  // namespace memprof::profile::testing
