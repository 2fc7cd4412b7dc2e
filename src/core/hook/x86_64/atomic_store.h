// Single-copy-atomic stores used to patch live code and data on x86-64, and the serializing
// instruction that makes this CPU refetch modified code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace memprof::hook::x86_64 {

// One naturally aligned store of 1, 2, 4 or 8 bytes (`mov`): single-copy atomic on x86-64.
template <typename Word>
inline void store_word(void* aligned, const uint8_t* bytes) {
  Word value;
  std::memcpy(&value, bytes, sizeof value);
  __atomic_store_n(static_cast<Word*>(aligned), value, __ATOMIC_SEQ_CST);
}

// One aligned 16-byte store through `lock cmpxchg16b` (atomic for 16-byte-aligned addresses;
// every x86-64 CPU Linux runs on has CX16). Written in asm because GCC routes 16-byte atomics
// through libatomic, which the Ruby extension should not depend on.
inline void store_16(void* aligned_block, const uint8_t* bytes) {
  uint64_t desired[2];
  std::memcpy(desired, bytes, 16);
  auto* target = static_cast<uint64_t*>(aligned_block);
  uint64_t expected_lo = __atomic_load_n(&target[0], __ATOMIC_RELAXED);
  uint64_t expected_hi = __atomic_load_n(&target[1], __ATOMIC_RELAXED);
  bool swapped;
  do {
    // On failure cmpxchg16b loads the current value into rdx:rax, so the loop converges.
    asm volatile("lock cmpxchg16b %[mem]"
                 : [mem] "+m"(*reinterpret_cast<unsigned __int128*>(target)),
                   "=@ccz"(swapped), "+a"(expected_lo), "+d"(expected_hi)
                 : "b"(desired[0]), "c"(desired[1])
                 : "memory");
  } while (!swapped);
}

// One atomic store of `unit` (1, 2, 4, 8 or 16) bytes at an address aligned to `unit`.
inline void store_atomic(void* aligned, const uint8_t* bytes, size_t unit) {
  switch (unit) {
    case 1: store_word<uint8_t>(aligned, bytes); break;
    case 2: store_word<uint16_t>(aligned, bytes); break;
    case 4: store_word<uint32_t>(aligned, bytes); break;
    case 8: store_word<uint64_t>(aligned, bytes); break;
    default: store_16(aligned, bytes); break;
  }
}

// cpuid is architecturally serializing: this core discards prefetched instructions.
inline void serialize_this_core() {
  uint32_t eax = 0, ebx, ecx = 0, edx;
  asm volatile("cpuid" : "+a"(eax), "=b"(ebx), "+c"(ecx), "=d"(edx)::"memory");
}

}  // namespace memprof::hook::x86_64
