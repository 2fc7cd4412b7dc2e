// What `memprof native` and the agent say to each other (over the agent's protocol, protocol.h):
//
//   native-start   starts tracking the malloc family (a NativeSession); body: a NativeRequest
//                  ("stack_depth N\nruby_lines 0|1\nmmap 0|1\ngc_at_exit 0|1\n"); reply: a snapshot
//   native-read    a snapshot of everything since the start; body "wait_ms N": sent after N ms
//                  (at most 5,000), or as soon as the process starts exiting
//   native-stop    the last snapshot; the hooks go (every patched byte restored)
//
// A snapshot is one JSON object:
//   {"exiting":BOOL, "exit_gc_ms":MS (present once a collection at the Ruby process's end ran),
//    "children":N (child processes started since the start, which are not tracked),
//    "problems":[..], "totals":{allocations, allocated_bytes, frees, freed_bytes,
//    temporaries, unknown_frees, live_blocks, live_bytes, peak_live_bytes, missed_frees, dropped,
//    engine_bytes},
//    "ruby_files":["", "(other files)", "app.rb", ...],
//    "sites":[[return_address, allocations, allocated_bytes, frees, freed_bytes, temporaries,
//              live_blocks, live_bytes, peak_live_bytes, ruby_file, ruby_line, [frames...]], ...]}
// Sites are return addresses in the target (the frames: the allocator's caller first); the CLI
// names them (library, symbol+offset). ruby_file indexes ruby_files (0: no Ruby line).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/result.h"
#include "native/native_session.h"

namespace memprof::native {

struct NativeRequest {
  uint32_t stack_depth = 1;
  bool ruby_lines = true;  // when the process runs Ruby
  bool track_mmap = false;
  bool gc_at_exit = false;  // a Ruby process that ends by itself collects first (agent/ruby_calls.h)
};

std::string encode_native_request(const NativeRequest& request);
Result<NativeRequest> decode_native_request(std::string_view body);

// `exit_gc_ms`: how long the collection at the process's end took; negative: none ran.
// `children`: child processes the process started since the start (they are not tracked).
std::string encode_snapshot(const NativeSnapshot& snapshot, const std::vector<std::string>& problems, bool exiting,
                            double exit_gc_ms = -1, uint64_t children = 0);

}  // namespace memprof::native
