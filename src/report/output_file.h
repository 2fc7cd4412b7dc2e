// Writing a finished report (PNG or HTML bytes) to the path the user gave with -o, without ever
// destroying a dump: an output that is one of the inputs is refused, and the bytes go to a
// temporary file that replaces the output only once it is complete (devices, FIFOs and links
// are written through).
#pragma once

#include <span>
#include <string>

#include "core/util/result.h"

namespace memprof::report {

// Fails with "refusing to write OUT: it is the input INPUT" when `output` names the same file
// as one of `inputs` (same device and inode, so also through another path, a symlink or a hard
// link). An output that does not exist yet is never an input.
Status check_output_is_not_an_input(const std::string& output, std::span<const std::string> inputs);

// Whether `path` is this process's standard output: "-", or the file, pipe or terminal that
// file descriptor 1 is open on (/dev/stdout, the file stdout was redirected to). A command that
// writes its report there says what it wrote on stderr, not into the report.
bool is_standard_output(const std::string& path);

// Whether write_output_file(path) could write now, without creating or changing anything: for
// a command that runs a long session before it writes (native), a path it cannot write is said
// at the start, not once the session is over. Fails with "cannot write PATH: <reason>".
Status check_can_write(const std::string& path);

// Writes all of `bytes` to standard output when `path` is "-"; else to a new temporary file next to `path` and renames it over `path`: a
// reader never sees a half-written file, a failed write leaves an existing `path` as it was,
// and the file another hard link of `path` names is not touched. An existing file keeps its
// mode and owner. What is not a regular file, or is reached through a symlink (/dev/null,
// /dev/stdout, a FIFO, a link), is written through, never replaced; so is an existing file
// whose directory we may not write to or whose owner we cannot give the new file. Fails with
// "cannot write PATH: <reason>" (the temporary file removed).
Status write_output_file(const std::string& path, std::span<const unsigned char> bytes);

}  // namespace memprof::report
