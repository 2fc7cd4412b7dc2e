#include "core/hook/near_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>
#include <utility>

#include "core/hook/hook_change.h"
#include "core/util/page_size.h"
#include "core/util/proc_maps.h"

namespace memprof::hook {

// A trampoline placed inside a TrampolineSealing: its code, and the pages to seal.
struct Unsealed {
  TrampolineKey key;
  uintptr_t address;
  size_t size;
  uintptr_t pages;
  size_t pages_size;
};
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

// Read+write pages for one trampoline, given back unless sealed (made read+execute): unmapped
// when they are a mapping of their own, made inaccessible again when they are an arena's.
class TrampolinePages {
 public:
  TrampolinePages(uintptr_t address, size_t size, bool in_arena)
      : address_(address), size_(size), in_arena_(in_arena) {}
  TrampolinePages(TrampolinePages&& other) noexcept
      : address_(other.address_), size_(std::exchange(other.size_, 0)), in_arena_(other.in_arena_) {}
  TrampolinePages(const TrampolinePages&) = delete;
  TrampolinePages& operator=(const TrampolinePages&) = delete;
  TrampolinePages& operator=(TrampolinePages&&) = delete;
  ~TrampolinePages() {
    if (size_ == 0) return;
    auto* pages = reinterpret_cast<void*>(address_);
    if (in_arena_) (void)::mprotect(pages, size_, PROT_NONE);
    else (void)::munmap(pages, size_);
  }

  uintptr_t address() const { return address_; }
  size_t size() const { return size_; }
  // Kept read+write, for a TrampolineSealing to seal later: this object no longer owns them.
  void hand_over() { size_ = 0; }
  // Read+execute for the life of the process (see near_memory.h).
  Status seal() {
    if (::mprotect(reinterpret_cast<void*>(address_), size_, PROT_READ | PROT_EXEC) != 0)
      return err("mprotect(trampoline, PROT_READ|PROT_EXEC): {}", std::strerror(errno));
    size_ = 0;
    return ok_status();
  }

 private:
  uintptr_t address_;
  size_t size_;
  bool in_arena_;
};

// Address space reserved (inaccessible, nothing committed) within reach of the first code that
// needed a trampoline, below it (kArenaClearance), handed out a few pages at a time. The trampolines of one arena are one
// mapping to the kernel: their pages, sealed one after the other, merge into few entries of
// /proc/self/maps. With a mapping per trampoline, `trace -x '*'` on libc made 3,800 of them,
// and every patch, which reads the maps, took longer than the one before (10 s for 1,900
// functions). Guarded by cache_mutex(); never unmapped.
struct Arena {
  uintptr_t next;
  uintptr_t end;
  uintptr_t writable_end = 0;  // [next, writable_end) is read+write already, unused
};
// Pages made read+write at a time, ahead of the trampolines that will use them: one mprotect
// (and its TLB shootdown) for 64 trampolines instead of one each.
constexpr size_t kWritableAhead = 64;
constexpr size_t kArenaSize = size_t{16} << 20;
// An arena keeps this far below the code it serves: the address space next to code is what a
// call-site hook needs (its trampoline must lie within 16 MB below the call: the window one
// store can move a rel32 in), and above an executable is where its heap grows. The first
// arenas, placed nearest the code, left Ruby's call sites no room ("no free address in ...").
constexpr uintptr_t kArenaClearance = uintptr_t{64} << 20;

std::vector<Arena>& arenas() {
  static auto* reserved = new std::vector<Arena>;
  return *reserved;
}

std::optional<TrampolinePages> take_from_arena(const NearPlacement& placement, size_t size) {
  for (Arena& arena : arenas()) {
    if (arena.end - arena.next < size || !placement.accepts(arena.next, size)) continue;
    if (arena.next + size > arena.writable_end) {
      const uintptr_t from = std::max(arena.next, arena.writable_end);
      const uintptr_t to = std::min(arena.end, std::max(arena.next + size, from + kWritableAhead * page_size()));
      if (::mprotect(reinterpret_cast<void*>(from), to - from, PROT_READ | PROT_WRITE) != 0) continue;
      arena.writable_end = to;
    }
    TrampolinePages pages(arena.next, size, /*in_arena=*/true);
    arena.next += size;
    return pages;
  }
  return std::nullopt;
}

// Maps `size` bytes at the first free candidate address, with `protection`.
Result<uintptr_t> map_at_candidate(const NearPlacement& placement, size_t size, int protection, int flags) {
  MEMPROF_TRY(addresses, candidates(placement, size));
  for (uintptr_t address : addresses) {
    void* mapped = ::mmap(reinterpret_cast<void*>(address), size, protection,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | flags, -1, 0);
    if (mapped == MAP_FAILED) continue;  // taken since we read the maps: try the next gap
    // Kernels before 4.17 treat MAP_FIXED_NOREPLACE as a hint and may map elsewhere.
    if (reinterpret_cast<uintptr_t>(mapped) == address) return address;
    ::munmap(mapped, size);
  }
  return err("no free address");
}

Result<TrampolinePages> map_near(const NearPlacement& placement, size_t size) {
  // Arenas serve what any address in reach will do; a placement that needs one address modulo
  // something, or a narrow window (call-site hooks), gets a mapping of its own.
  const bool any_address = placement.modulus == 0 && placement.window_start == 0 &&
                           placement.window_end == UINTPTR_MAX;
  if (any_address) {
    if (auto pages = take_from_arena(placement, size)) return std::move(*pages);
    NearPlacement below = placement;
    below.window_end = placement.low > kArenaClearance ? placement.low - kArenaClearance : 0;
    if (auto arena = map_at_candidate(below, kArenaSize, PROT_NONE, MAP_NORESERVE); arena.ok()) {
      arenas().push_back({*arena, *arena + kArenaSize, *arena});
      if (auto pages = take_from_arena(placement, size)) return std::move(*pages);
    }
  }
  if (auto mapped = map_at_candidate(placement, size, PROT_READ | PROT_WRITE, 0); mapped.ok())
    return TrampolinePages(*mapped, size, /*in_arena=*/false);
  if (placement.window_start != 0 || placement.window_end != UINTPTR_MAX)
    return err("no free address in {:#x}-{:#x} (the only window its rel32 can be changed in with one "
               "store) for a {}-byte trampoline",
               placement.window_start, placement.window_end, size);
  return err("no free address within ±2 GB of {:#x}-{:#x} for a {}-byte trampoline",
             placement.low, placement.high, size);
}

// The trampolines this thread placed inside a TrampolineSealing, not yet read+execute.
thread_local std::vector<Unsealed>* t_unsealed = nullptr;

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
  uintptr_t address = region.address() + offset;
  MEMPROF_TRY(code, generate(address));
  if (offset + code.size() > size || !placement.accepts(address, code.size()))
    return err("trampoline of {} bytes at {:#x} does not fit its placement", code.size(), address);
  std::memcpy(reinterpret_cast<void*>(address), code.data(), code.size());
  if (t_unsealed != nullptr) {
    // Cached once sealed: until then no other install may find it (it is not executable).
    t_unsealed->push_back({key, address, code.size(), region.address(), region.size()});
    region.hand_over();
    return address;
  }
  MEMPROF_TRY_STATUS(region.seal());
  cache().push_back({key, address, code.size()});
  return address;
}

TrampolineSealing::TrampolineSealing() {
  if (t_unsealed == nullptr) t_unsealed = &unsealed_;
}

TrampolineSealing::~TrampolineSealing() {
  (void)seal();
  if (t_unsealed == &unsealed_) t_unsealed = nullptr;
}

Status TrampolineSealing::seal() {
  // The thread's pending trampolines: this one's, or an outer TrampolineSealing's, which this
  // one defers to (a caller that seals expects every trampoline it placed to be executable).
  std::vector<Unsealed>& unsealed = *t_unsealed;
  if (unsealed.empty()) return ok_status();
  std::lock_guard lock(cache_mutex());
  std::sort(unsealed.begin(), unsealed.end(),
            [](const Unsealed& a, const Unsealed& b) { return a.pages < b.pages; });
  Status sealed = ok_status();
  // Runs of adjacent pages (consecutive trampolines of one arena) in one mprotect each.
  for (size_t first = 0; first < unsealed.size();) {
    size_t last = first;
    while (last + 1 < unsealed.size() &&
           unsealed[last + 1].pages == unsealed[last].pages + unsealed[last].pages_size)
      ++last;
    const uintptr_t begin = unsealed[first].pages;
    const uintptr_t end = unsealed[last].pages + unsealed[last].pages_size;
    if (::mprotect(reinterpret_cast<void*>(begin), end - begin, PROT_READ | PROT_EXEC) == 0) {
      for (size_t i = first; i <= last; ++i) cache().push_back({unsealed[i].key, unsealed[i].address, unsealed[i].size});
    } else if (sealed.ok()) {
      sealed = err("mprotect(trampolines, PROT_READ|PROT_EXEC): {}", std::strerror(errno));
    }
    first = last + 1;
  }
  unsealed.clear();
  return sealed;
}

}  // namespace memprof::hook
