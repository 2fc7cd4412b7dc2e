#include "core/hook/patch.h"

#include <dirent.h>
#include <linux/membarrier.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <mutex>
#include <vector>

#include "core/hook/x86_64/atomic_store.h"
#include "core/util/page_size.h"
#include "core/util/proc_maps.h"
#include "core/util/raw_syscall.h"

namespace memprof::hook {
namespace {

// Orders all patchers of the process: two patches on one page must not interleave their
// protection change and restore.
std::mutex& patch_mutex() {
  static std::mutex mutex;
  return mutex;
}

// Makes every thread of the process serialize its instruction stream (cross-modifying code).
void serialize_all_threads() {
  static const bool sync_core = [] {
    long supported = ::syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (supported < 0 || !(supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE)) return false;
    return ::syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) == 0;
  }();
  if (sync_core) ::syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
  x86_64::serialize_this_core();
}

struct PageProtection {
  uintptr_t page;
  int original;
  bool changed = false;
};

// The pages made writable by the patch in progress (under patch_mutex) and their protections
// before it, for a child forked meanwhile: plain constant-initialized atomics, which the child
// reads without a lock. Entries from `g_unprotected_count` on are stale.
constexpr size_t kMaxUnprotectedPages = 8192;  // 32 MB of code in one patch
constinit std::atomic<uintptr_t> g_unprotected_page[kMaxUnprotectedPages];
constinit std::atomic<int> g_unprotected_original[kMaxUnprotectedPages];
constinit std::atomic<size_t> g_unprotected_count{0};
constinit std::atomic<size_t> g_unprotected_page_size{0};

// Puts back every protection this patch changed; reports the first failure.
Status restore_protections(std::vector<PageProtection>& pages) {
  Status result = ok_status();
  for (auto& p : pages) {
    if (!p.changed) continue;
    if (::mprotect(reinterpret_cast<void*>(p.page), page_size(), p.original) != 0 && result.ok())
      result = err("mprotect({:#x}) while restoring its protection: {}", p.page,
                   std::strerror(errno));
    p.changed = false;
  }
  // After the mprotects: a child forked before this puts back some of them again, harmlessly.
  g_unprotected_count.store(0, std::memory_order_release);
  return result;
}

// Copies with every signal blocked: used only when this is the process's sole thread, so
// nothing else can observe the intermediate state.
void copy_with_signals_blocked(uint8_t* dst, const uint8_t* src, size_t n) {
  sigset_t all, previous;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &previous);
  std::memcpy(dst, src, n);
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

// The store with the smallest naturally aligned atomic unit covering the bytes that change (so
// neighbouring bytes, another GOT slot the lazy resolver may be writing, are not rewritten), or
// false (nothing written) when none covers them. Allocates nothing.
bool store_without_allocating(uint8_t* dst, std::span<const uint8_t> bytes) {
  size_t first = 0, last = bytes.size();
  while (first < last && dst[first] == bytes[first]) ++first;
  while (last > first && dst[last - 1] == bytes[last - 1]) --last;
  if (first == last) return true;  // already there
  uintptr_t begin = reinterpret_cast<uintptr_t>(dst) + first;
  uintptr_t end = reinterpret_cast<uintptr_t>(dst) + last;
  for (uintptr_t unit : {1, 2, 4, 8, 16}) {
    uintptr_t block = begin & ~(unit - 1);
    if (end > block + unit) continue;
    uint8_t merged[16];
    std::memcpy(merged, reinterpret_cast<const void*>(block), unit);
    std::memcpy(merged + (begin - block), bytes.data() + first, end - begin);
    x86_64::store_atomic(reinterpret_cast<void*>(block), merged, unit);
    return true;
  }
  return false;
}

// The store itself, on writable pages: one atomic unit, else a plain copy when no other thread
// can observe it.
Status store(uint8_t* dst, std::span<const uint8_t> bytes) {
  if (store_without_allocating(dst, bytes)) return ok_status();
  size_t first = 0, last = bytes.size();
  while (first < last && dst[first] == bytes[first]) ++first;
  while (last > first && dst[last - 1] == bytes[last - 1]) --last;
  MEMPROF_TRY(threads, thread_count());
  if (threads > 1)
    return err("cannot patch {} bytes at {:#x} atomically: they cross a 16-byte boundary and "
               "{} other thread(s) are running",
               last - first, reinterpret_cast<uintptr_t>(dst) + first, threads - 1);
  copy_with_signals_blocked(dst + first, bytes.data() + first, last - first);
  return ok_status();
}

}  // namespace

Result<size_t> thread_count() {
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr) return err("/proc/self/task: {}", std::strerror(errno));
  size_t count = 0;
  while (const dirent* entry = ::readdir(dir))
    if (entry->d_name[0] != '.') ++count;
  ::closedir(dir);
  return count;
}

Result<int> page_protection(const void* address) {
  MEMPROF_TRY(mappings, read_self_maps());
  const MapEntry* mapping = find_mapping(mappings, reinterpret_cast<uintptr_t>(address));
  if (mapping == nullptr) return err("address {} is not mapped", address);
  return mapping->protection();
}

namespace {

// Makes the pages of [begin, end) writable, recording their protection in `pages` (sorted,
// each page once).
Status make_writable(const std::vector<MapEntry>& mappings, uintptr_t begin, uintptr_t end,
                     std::vector<PageProtection>& pages) {
  for (uintptr_t page = begin & ~(page_size() - 1); page < end; page += page_size()) {
    if (!pages.empty() && pages.back().page >= page) continue;  // seen with an earlier patch
    const MapEntry* mapping = find_mapping(mappings, page);
    if (mapping == nullptr)
      return err("cannot patch {} bytes at {:#x}: page {:#x} is not mapped", end - begin, begin,
                 page);
    PageProtection p{page, mapping->protection()};
    int writable = p.original | PROT_READ | PROT_WRITE;
    if (writable != p.original) {
      // Recorded first: a child forked right after the mprotect must find it.
      const size_t recorded = g_unprotected_count.load(std::memory_order_relaxed);
      if (recorded == kMaxUnprotectedPages)
        return err("cannot patch {} bytes at {:#x}: more than {} pages in one patch", end - begin, begin,
                   kMaxUnprotectedPages);
      g_unprotected_page_size.store(page_size(), std::memory_order_relaxed);
      g_unprotected_page[recorded].store(page, std::memory_order_relaxed);
      g_unprotected_original[recorded].store(p.original, std::memory_order_relaxed);
      g_unprotected_count.store(recorded + 1, std::memory_order_release);
      if (::mprotect(reinterpret_cast<void*>(page), page_size(), writable) != 0)
        return err("mprotect({:#x}, PROT_WRITE): {}", page, std::strerror(errno));
      p.changed = true;
    }
    pages.push_back(p);
  }
  return ok_status();
}

// Puts back the protections the patch in progress recorded, with raw system calls: nothing here
// allocates or throws.
void put_back_recorded_protections() noexcept {
  const size_t count = g_unprotected_count.exchange(0, std::memory_order_acq_rel);
  const auto size = static_cast<long>(g_unprotected_page_size.load(std::memory_order_relaxed));
  for (size_t i = 0; i < count; ++i) {
    (void)raw_syscall(SYS_mprotect, static_cast<long>(g_unprotected_page[i].load(std::memory_order_relaxed)),
                      size, g_unprotected_original[i].load(std::memory_order_relaxed));
  }
}

// An allocation that fails while pages are writable (out of memory: a process at its ulimit -v)
// throws past the patch: on the way out, the pages are put back as they were. Never left
// writable, and code never writable and executable.
class ProtectionsPutBackOnUnwind {
 public:
  ~ProtectionsPutBackOnUnwind() {
    if (std::uncaught_exceptions() > exceptions_) put_back_recorded_protections();
  }

 private:
  int exceptions_ = std::uncaught_exceptions();
};

}  // namespace

void restore_patch_protections_in_child() noexcept { put_back_recorded_protections(); }

namespace {

// One patch: the pages made writable, `write()` (the store, and its report), the protections
// put back, and every thread serialized once something was written.
template <typename Write>
Status patch_one(void* address, size_t size, Write write) {
  if (size == 0) return ok_status();
  std::lock_guard lock(patch_mutex());
  ProtectionsPutBackOnUnwind put_back;
  MEMPROF_TRY(mappings, read_self_maps());
  auto begin = reinterpret_cast<uintptr_t>(address);
  std::vector<PageProtection> pages;
  if (Status writable = make_writable(mappings, begin, begin + size, pages); !writable.ok()) {
    (void)restore_protections(pages);
    return writable;
  }
  Status stored = write();
  Status restored = restore_protections(pages);
  if (!stored.ok()) return stored;
  serialize_all_threads();
  return restored;
}

}  // namespace

Status patch_memory(void* address, std::span<const uint8_t> bytes) {
  return patch_one(address, bytes.size(), [&] { return store(static_cast<uint8_t*>(address), bytes); });
}

namespace {

// Several patches: their pages made writable (one maps read, each page once), `write()`, the
// protections put back, every thread serialized once.
template <typename Write>
Status patch_many(std::span<const SmallPatch> patches, Write write) {
  if (patches.empty()) return ok_status();
  std::lock_guard lock(patch_mutex());
  ProtectionsPutBackOnUnwind put_back;
  MEMPROF_TRY(mappings, read_self_maps());
  std::vector<const SmallPatch*> by_address;
  for (const SmallPatch& p : patches) by_address.push_back(&p);
  std::sort(by_address.begin(), by_address.end(),
            [](const SmallPatch* a, const SmallPatch* b) { return a->address < b->address; });
  std::vector<PageProtection> pages;
  for (const SmallPatch* p : by_address) {
    if (Status writable = make_writable(mappings, p->address, p->address + p->size, pages);
        !writable.ok()) {
      (void)restore_protections(pages);
      return writable;
    }
  }
  Status stored = write();
  Status restored = restore_protections(pages);
  serialize_all_threads();
  if (!stored.ok()) return stored;
  return restored;
}

}  // namespace

Status patch_memory(std::span<const SmallPatch> patches, size_t* written) {
  if (written != nullptr) *written = 0;
  return patch_many(patches, [&]() -> Status {
    for (const SmallPatch& p : patches) {  // in the caller's order, so `written` means a prefix
      MEMPROF_TRY_STATUS(store(reinterpret_cast<uint8_t*>(p.address), {p.bytes, p.size}));
      if (written != nullptr) ++*written;
    }
    return ok_status();
  });
}

Status patch_memory(std::span<const SmallPatch> patches, StoreGate& gate, bool* busy) {
  *busy = false;
  return patch_many(patches, [&]() -> Status {
    // Checked before the gate: between its calls nothing allocates, and nothing may fail half
    // way (the patches go in together or not at all).
    for (const SmallPatch& p : patches) {
      if (!fits_one_atomic_store(p.address, p.size))
        return err("cannot patch {} bytes at {:#x} atomically: they cross a 16-byte boundary", p.size, p.address);
    }
    const bool allowed = gate.before_store();
    if (allowed) {
      for (const SmallPatch& p : patches) (void)store_without_allocating(reinterpret_cast<uint8_t*>(p.address), {p.bytes, p.size});
    }
    gate.after_store();
    if (!allowed) {
      *busy = true;
      return err("the {} patches are in use by another thread", patches.size());
    }
    return ok_status();
  });
}

Status patch_memory(void* address, std::span<const uint8_t> bytes, StoreGate& gate, bool* busy) {
  *busy = false;
  if (bytes.size() > sizeof(SmallPatch::bytes))
    return err("cannot patch {} bytes at {} atomically: more than 16", bytes.size(), address);
  SmallPatch patch{reinterpret_cast<uintptr_t>(address), {}, static_cast<uint8_t>(bytes.size())};
  std::copy(bytes.begin(), bytes.end(), patch.bytes);
  return patch_memory(std::span<const SmallPatch>(&patch, 1), gate, busy);
}

bool fits_one_atomic_store(uintptr_t address, size_t size) {
  return size <= 16 && (address & ~uintptr_t{15}) == ((address + size - 1) & ~uintptr_t{15});
}

}  // namespace memprof::hook
