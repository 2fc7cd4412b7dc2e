// Executable memory placed near code, for thunks and relocated prologues that a rel32 must reach.
//
// Trampolines are written while their pages are read+write and only then made read+execute:
// no trampoline page is ever writable and executable. They are never unmapped: after a hook is
// removed a thread may still be running inside its thunk or relocated prologue (it was preempted
// there), and unmapping would crash it. Instead they are cached by what they do (target and
// replacement), so installing the same hook again reuses the same bytes; memory grows only with
// the number of distinct hooks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/util/result.h"

namespace memprof::hook {

// rel32 reach: can an instruction ending at `from` jump to `to`?
inline bool rel32_reaches(uintptr_t from, uintptr_t to) {
  auto delta = static_cast<int64_t>(to - from);
  return delta >= INT32_MIN && delta <= INT32_MAX;
}

struct NearPlacement {
  uintptr_t low;           // every address in [low, high] must reach the code with a rel32
  uintptr_t high;
  uintptr_t modulus = 0;   // when non-zero, the code's address is congruent to `residue`
  uintptr_t residue = 0;
  uintptr_t window_start = 0;  // the code lies entirely inside [window_start, window_end)
  uintptr_t window_end = UINTPTR_MAX;

  bool accepts(uintptr_t address, size_t size) const {
    return rel32_reaches(low, address) && rel32_reaches(high, address) &&
           rel32_reaches(low, address + size) && rel32_reaches(high, address + size) &&
           (modulus == 0 || address % modulus == residue % modulus) && address >= window_start &&
           address + size <= window_end;
  }
};

struct TrampolineKey {
  int kind;  // which hook kind made it (entry, call-site)
  uintptr_t target;
  uintptr_t replacement;
  bool operator==(const TrampolineKey&) const = default;
};

// Produces the trampoline bytes for the address they will live at.
using CodeGenerator = std::function<Result<std::vector<uint8_t>>(uintptr_t address)>;

// Returns the address of read+execute code equal to generate(address), placed as asked:
// a retained trampoline with the same key when its bytes still match, else a new one.
Result<uintptr_t> place_trampoline(const TrampolineKey& key, const NearPlacement& placement,
                                   const CodeGenerator& generate);

// While one is alive, the trampolines this thread places stay read+write (never executable)
// until seal(), which makes them read+execute together: one mprotect per run of adjacent pages
// instead of one per trampoline (a trace of 1,910 libc functions made 3,820 mprotects, each a
// TLB shootdown). Nothing may jump to them before seal() succeeds. The destructor seals what is
// left. Nested in another one, it collects into the outer one's list and seal() seals all of it.
struct Unsealed;
class TrampolineSealing {
 public:
  TrampolineSealing();
  ~TrampolineSealing();
  TrampolineSealing(const TrampolineSealing&) = delete;
  TrampolineSealing& operator=(const TrampolineSealing&) = delete;
  Status seal();

 private:
  std::vector<Unsealed> unsealed_;
};


}  // namespace memprof::hook
