// pprof's file format (github.com/google/pprof/proto/profile.proto, gzip-compressed) in the
// layout of Go's heap profiles, so that `go tool pprof` and every tool that reads Go heap
// profiles (Pyroscope, Parca, speedscope, ...) read memprof's: sample types alloc_objects/count,
// alloc_space/bytes, inuse_objects/count, inuse_space/bytes, inuse_space by default.
#pragma once

#include <string>

#include "core/util/result.h"
#include "profile/stack_profile.h"

namespace memprof::profile {

// The uncompressed profile.proto message. One Mapping per library (the listed libraries first,
// with their address ranges, then the others as frames name them), one Location per distinct
// frame, one Function per distinct function and file; the title is the profile's one comment.
// Frames that were not symbolized are Locations with an address and no Line, as pprof writes
// them. Fails as check_stack_profile() does.
Result<std::string> pprof_message(const StackProfile& profile);

// pprof_message() gzip-compressed: the bytes of a .pb.gz file.
Result<std::string> pprof_file_bytes(const StackProfile& profile);

// pprof_file_bytes() written to `path` through a temporary file and a rename. Fails with the
// profile's error or "cannot write PATH: <reason>".
Status write_pprof(const std::string& path, const StackProfile& profile);

}  // namespace memprof::profile
