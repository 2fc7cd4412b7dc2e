#include "core/hook/near_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "core/hook/hook_change.h"
#include "core/util/page_size.h"
#include "core/util/proc_maps.h"
#include "core/util/scoped_fd.h"

namespace memprof::hook {
namespace {

constexpr uintptr_t kLowestAddress = 0x10000;           // above vm.mmap_min_addr
constexpr uintptr_t kHighestAddress = 0x7fffffffe000;   // top of the x86-64 user half
constexpr uintptr_t kReach = 0x7fff0000;                // rel32 reach, minus a safety margin
constexpr size_t kMaxAttempts = 64;

struct Retained {
  TrampolineKey key;
  uintptr_t address;
  size_t size;
};

// Guarded by cache_mutex(). Leaked on purpose, like the pages it describes.
std::vector<Retained>& cache() {
  static auto* retained = new std::vector<Retained>;
  return *retained;
}
std::mutex& cache_mutex() {
  static auto* mutex = new std::mutex;
  return *mutex;
}

// Candidate start addresses for a mapping of `size` bytes, nearest to the placement first.
Result<std::vector<uintptr_t>> candidates(const NearPlacement& p, size_t size) {
  MEMPROF_TRY(ranges, read_self_maps());
  uintptr_t lowest = std::max(p.high > kReach + kLowestAddress ? p.high - kReach : kLowestAddress,
                              p.window_start);
  uintptr_t top = std::min({kHighestAddress, p.low + kReach, p.window_end});
  if (top < lowest + size) return std::vector<uintptr_t>{};
  uintptr_t highest = top - size;
  uintptr_t modulus = std::max(p.modulus, page_size());
  uintptr_t residue = p.modulus ? p.residue % modulus : 0;
  uintptr_t middle = p.low / 2 + p.high / 2;
  std::vector<uintptr_t> found;
  uintptr_t gap_start = kLowestAddress;
  for (size_t i = 0; i <= ranges.size(); ++i) {
    uintptr_t gap_end = i < ranges.size() ? ranges[i].start : kHighestAddress;
    // Keep one page free on each side so the trampoline never merges with a neighbour's VMA.
    uintptr_t first = std::max(gap_start + page_size(), lowest);
    uintptr_t last = std::min(gap_end > 2 * page_size() ? gap_end - page_size() : 0, highest + size);
    if (last > first && last - first >= size) {
      uintptr_t want = std::clamp(middle, first, last - size);
      uintptr_t below = want - ((want - residue) % modulus);
      for (uintptr_t c : {below, below + modulus})
        if (c >= first && c + size <= last) found.push_back(c);
    }
    if (i < ranges.size()) gap_start = std::max(gap_start, ranges[i].end);
  }
  std::sort(found.begin(), found.end(), [&](uintptr_t a, uintptr_t b) {
    uintptr_t da = a > middle ? a - middle : middle - a;
    uintptr_t db = b > middle ? b - middle : middle - b;
    return da < db;
  });
  if (found.size() > kMaxAttempts) found.resize(kMaxAttempts);
  return found;
}

Result<ScopedMmap> map_near(const NearPlacement& placement, size_t size) {
  MEMPROF_TRY(addresses, candidates(placement, size));
  for (uintptr_t address : addresses) {
    void* mapped = ::mmap(reinterpret_cast<void*>(address), size, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (mapped == MAP_FAILED) continue;  // taken since we read the maps: try the next gap
    ScopedMmap region(mapped, size);
    // Kernels before 4.17 treat MAP_FIXED_NOREPLACE as a hint and may map elsewhere.
    if (reinterpret_cast<uintptr_t>(mapped) == address) return region;
  }
  if (placement.window_start != 0 || placement.window_end != UINTPTR_MAX)
    return err("no free address in {:#x}-{:#x} (the only window its rel32 can be changed in with one "
               "store) for a {}-byte trampoline",
               placement.window_start, placement.window_end, size);
  return err("no free address within ±2 GB of {:#x}-{:#x} for a {}-byte trampoline",
             placement.low, placement.high, size);
}

bool matches(const Retained& r, const std::vector<uint8_t>& code) {
  return code.size() <= r.size && std::memcmp(reinterpret_cast<const void*>(r.address),
                                               code.data(), code.size()) == 0;
}

}  // namespace

Result<uintptr_t> place_trampoline(const TrampolineKey& key, const NearPlacement& placement,
                                   const CodeGenerator& generate) {
  if (hooks_frozen()) return err("{}", kFrozenHooks);
  HookChange change;
  std::lock_guard lock(cache_mutex());
  for (const Retained& r : cache()) {
    if (!(r.key == key) || !placement.accepts(r.address, r.size)) continue;
    auto code = generate(r.address);
    if (code.ok() && matches(r, *code)) return r.address;
  }
  // The code's size does not depend on its address, so a first generation sizes the mapping.
  MEMPROF_TRY(probe, generate(placement.low));
  uintptr_t offset = placement.modulus ? placement.residue % page_size() : 0;
  size_t size = (offset + probe.size() + page_size() - 1) & ~(page_size() - 1);
  NearPlacement pages = placement;
  if (placement.modulus) pages.residue = placement.residue - offset;
  // The mapping starts `offset` bytes before the code: widen the window by as much.
  pages.window_start = placement.window_start > offset ? placement.window_start - offset : 0;
  MEMPROF_TRY(region, map_near(pages, size));
  uintptr_t address = reinterpret_cast<uintptr_t>(region.data()) + offset;
  MEMPROF_TRY(code, generate(address));
  if (offset + code.size() > size || !placement.accepts(address, code.size()))
    return err("trampoline of {} bytes at {:#x} does not fit its placement", code.size(), address);
  std::memcpy(reinterpret_cast<void*>(address), code.data(), code.size());
  if (::mprotect(region.data(), size, PROT_READ | PROT_EXEC) != 0)
    return err("mprotect(trampoline, PROT_READ|PROT_EXEC): {}", std::strerror(errno));
  region.release();  // retained for the life of the process (see near_memory.h)
  cache().push_back({key, address, code.size()});
  return address;
}

}  // namespace memprof::hook
