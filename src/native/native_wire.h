// What `memprof native` and the agent say to each other (over the agent's protocol, protocol.h):
//
//   native-start   starts tracking the malloc family (a NativeSession); reply: a snapshot
//   native-read    a snapshot of everything since the start
//   native-stop    the last snapshot; the hooks go (every patched byte restored)
//
// A snapshot is one JSON object:
//   {"exiting":BOOL, "problems":[..], "totals":{allocations, allocated_bytes, frees, freed_bytes,
//    temporaries, unknown_frees, live_blocks, live_bytes, peak_live_bytes, missed_frees, dropped,
//    engine_bytes},
//    "sites":[[return_address, allocations, allocated_bytes, frees, freed_bytes, temporaries,
//              live_blocks, live_bytes, peak_live_bytes], ...]}
// Call sites are return addresses in the target; the CLI names them (library, symbol+offset).
#pragma once

#include <string>
#include <vector>

#include "native/native_session.h"

namespace memprof::native {

std::string encode_snapshot(const NativeSnapshot& snapshot, const std::vector<std::string>& problems, bool exiting);

}  // namespace memprof::native
