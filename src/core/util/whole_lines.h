// Writes text made of lines so that no line is cut by another writer's bytes.
//
// `memprof trace` shares its stdout with the traced program when both go to one terminal or
// pipe. stdio hands the kernel 4 kB pieces cut anywhere, so a program's "x\n" could land in the
// middle of a --json record. A write of at most PIPE_BUF bytes to a pipe is atomic (POSIX), so
// every write here is a run of whole lines of at most that size; only a line longer than
// PIPE_BUF by itself can be split.
#pragma once

#include <limits.h>

#include <cstddef>
#include <string_view>
#include <vector>

namespace memprof {

// `text` as consecutive pieces, each ending at a line end and at most `limit` bytes, except a
// single line longer than `limit` (its own piece) and the text after the last line end.
std::vector<std::string_view> whole_line_pieces(std::string_view text, size_t limit = PIPE_BUF);

// Writes all of `bytes` to `fd`, retrying interrupted and partial writes and waiting while a
// non-blocking fd is full. 0, or the errno that stopped it.
int write_fully(int fd, std::string_view bytes);

// Writes `text` to `fd` one whole_line_pieces piece per write(2) (a regular file: all of it in
// one), retrying interrupted and partial writes and waiting while a non-blocking fd is full. 0,
// or the errno that stopped it.
int write_whole_lines(int fd, std::string_view text);

}  // namespace memprof
