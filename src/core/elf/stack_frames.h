// Stack space reserved by function prologues, found by decoding each function's first
// instructions with Zydis. Counts pushes, sub/add/lea on rsp, and the probing loop that gcc's
// -fstack-clash-protection (on by default in Debian) emits for frames larger than a page:
//     lea r11, [rsp-0xC0000]       ; total of the probed part
//   loop:
//     sub rsp, 0x1000
//     or qword [rsp], 0
//     cmp rsp, r11
//     jne loop
//     sub rsp, 0x20                ; remainder
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/elf/object_symbols.h"
#include "core/util/result.h"

namespace memprof::elf {

struct FunctionFrame {
  std::string_view function;  // symbol name (points into the ObjectSymbols' files)
  uint64_t address = 0;       // file address of the function
  // Bytes between the return address and rsp once the prologue is done: pushed registers plus the
  // explicit allocation. 0 for a function that reserves nothing.
  uint64_t frame_bytes = 0;
};

// The stack reserved by the prologue of the code at `code` (the function's bytes, or a prefix of
// them). Decoding stops at the first call, return, or jump other than the probing loop's.
uint64_t prologue_frame_bytes(Bytes code);

// Every defined function of `symbols` with its frame size, largest first (ties by name).
// Functions whose bytes are not in the file (e.g. in a stripped-out section) are skipped.
std::vector<FunctionFrame> function_frames(const ObjectSymbols& symbols);

}  // namespace memprof::elf
