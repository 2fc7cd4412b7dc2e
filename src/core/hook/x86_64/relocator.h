// Moves the first instructions of a function to a trampoline so they can run from there:
// RIP-relative operands are re-targeted, relative branches are re-encoded as rel32 (or an
// absolute form when out of reach), and a jump back to the first instruction that was not
// moved ends the copy. Refuses what cannot move safely.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/hook/x86_64/decoder.h"
#include "core/util/result.h"

namespace memprof::hook::x86_64 {

struct Prologue {
  size_t bytes = 0;         // how many bytes were displaced (whole instructions, >= asked)
  size_t instructions = 0;
};

// Decodes the whole instructions covering at least `min_bytes` at `source`. Fails when the
// function ends (ret, jmp, int3...) before that, or an instruction cannot be decoded.
Result<Prologue> measure_prologue(const Decoder& decoder, uintptr_t source, size_t min_bytes);

// The relocated copy of `prologue` for address `destination`, followed by a jump back to
// source + prologue.bytes. A rel32 call among the displaced instructions ends the copy: it is
// emulated (its return address, in the function itself, pushed; the callee jumped to), so that
// unwinders find a frame they know. Fails for indirect calls, rel8-only branches (jrcxz, loop),
// branches into the displaced bytes, and RIP-relative operands out of rel32 reach from
// `destination`.
Result<std::vector<uint8_t>> relocate_prologue(const Decoder& decoder, uintptr_t source,
                                               const Prologue& prologue, uintptr_t destination);

}  // namespace memprof::hook::x86_64
