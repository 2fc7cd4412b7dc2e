#include "core/hook/entry_hook.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <optional>

#include "core/hook/entry_trap.h"
#include "core/hook/hook_change.h"
#include "core/hook/near_memory.h"
#include "core/hook/patch.h"
#include "core/hook/thread_parking.h"
#include "core/hook/x86_64/code_writer.h"
#include "core/hook/x86_64/relocator.h"
#include "core/util/raw_sleep.h"

namespace memprof::hook {
namespace {

using x86_64::Decoder;
using x86_64::Instruction;

constexpr int kEntryTrampoline = 1;
constexpr size_t kThunkSlot = 16;  // the jump to the replacement, padded; the original follows
constexpr size_t kMaxScannedFunction = 1 << 16;

std::mutex& registry_mutex() {
  static auto* mutex = new std::mutex;
  return *mutex;
}
struct HookedTarget {
  uintptr_t address;
  const char* owner;
};
std::vector<HookedTarget>& hooked_targets() {
  static auto* targets = new std::vector<HookedTarget>;
  return *targets;
}

const uint8_t* at(uintptr_t address) { return reinterpret_cast<const uint8_t*>(address); }

// Where the function starting at `start` ends: its dynamic symbol's size when the loader knows
// it, else the first instruction that does not fall through once every forward branch seen so
// far has been passed (what a compiler's layout of one function looks like).
uintptr_t function_end(const Decoder& decoder, uintptr_t start) {
  Dl_info info;
  void* extra = nullptr;
  int found = ::dladdr1(at(start), &info, &extra, RTLD_DL_SYMENT);
  const auto* symbol = static_cast<const ElfW(Sym)*>(extra);
  if (found != 0 && symbol != nullptr && reinterpret_cast<uintptr_t>(info.dli_saddr) == start &&
      symbol->st_size > 0)
    return start + symbol->st_size;
  uintptr_t furthest = start;
  for (uintptr_t address = start; address < start + kMaxScannedFunction;) {
    auto insn = decoder.decode(at(address), 15, address);
    if (!insn.ok()) return address;
    if (insn->relative_branch && insn->flow != x86_64::Flow::kCall &&
        insn->branch_target > furthest && insn->branch_target < start + kMaxScannedFunction)
      furthest = insn->branch_target;
    address = insn->end();
    if (insn->ends_flow() && address > furthest) return address;
  }
  return start + kMaxScannedFunction;
}

// Refuses when code after the displaced bytes branches back into them: after patching, such a
// branch would land in the middle of the jump.
Status check_no_branch_into(const Decoder& decoder, uintptr_t start, size_t displaced) {
  uintptr_t end = function_end(decoder, start);
  for (uintptr_t address = start + displaced; address < end;) {
    auto insn = decoder.decode(at(address), 15, address);
    if (!insn.ok()) break;  // data or padding: nothing decodable branches from here
    // A call of the function itself (recursion) enters through the jump like any other call;
    // a jump to its first byte (a loop whose head is the entry) must not run the hook again.
    const bool recursive_call = insn->flow == x86_64::Flow::kCall && insn->branch_target == start;
    if (insn->relative_branch && !recursive_call && insn->branch_target >= start &&
        insn->branch_target < start + displaced)
      return err("the branch at {:#x} jumps into the first {} bytes of the function at {:#x}, "
                 "which the hook would overwrite",
                 address, displaced, start);
    address = insn->end();
  }
  return ok_status();
}

// Parks the other threads before the store and lets them go after it; refuses the store while
// one of them is stopped inside (start, end): past its first byte, before the jump's end.
class ParkingGate final : public StoreGate {
 public:
  ParkingGate(ThreadParking& parking, uintptr_t start, uintptr_t end, bool spare_sleepers)
      : parking_(parking), start_(start), end_(end), spare_sleepers_(spare_sleepers) {}
  bool before_store() noexcept override {
    parking_.park(kParkTimeoutMs, spare_sleepers_);
    return !parking_.any_stopped_inside(start_, end_);
  }
  void after_store() noexcept override { parking_.resume(); }

 private:
  // For a running thread slow to reach the handler (not on a CPU); one that blocks the signal
  // is waited for briefly only (thread_parking.h).
  static constexpr unsigned kParkTimeoutMs = 100;
  ThreadParking& parking_;
  uintptr_t start_, end_;
  bool spare_sleepers_;
};

// SIGTRAP unblocked on this thread while it writes a patch under an int3: it may call the
// function itself (free, from a destructor) and must then trap, not be killed.
class SigtrapUnblocked {
 public:
  SigtrapUnblocked() {
    sigset_t trap;
    sigemptyset(&trap);
    sigaddset(&trap, SIGTRAP);
    ::pthread_sigmask(SIG_UNBLOCK, &trap, &previous_);
  }
  ~SigtrapUnblocked() { ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
  SigtrapUnblocked(const SigtrapUnblocked&) = delete;
  SigtrapUnblocked& operator=(const SigtrapUnblocked&) = delete;

 private:
  sigset_t previous_;
};

// Writes the jump while no other thread is between two of the instructions it replaces: the
// running threads are parked and it goes in when none is stopped inside it. When no thread
// blocks SIGTRAP, an int3 first holds the entry (callers meanwhile go to `detour`, the
// relocated original) and threads asleep in the kernel are left asleep; else every thread is
// signalled (a sleep in progress returns EINTR).
Status patch_with_threads_parked(void* target, std::span<const uint8_t> jump, uintptr_t detour) {
  constexpr int kAttempts = 100;
  const auto start = reinterpret_cast<uintptr_t>(target);
  MEMPROF_TRY(threads, ThreadParking::prepare());
  const bool hold_entry = !any_thread_blocks_sigtrap(threads.threads());
  std::optional<SigtrapUnblocked> unblocked;
  if (hold_entry) {
    unblocked.emplace();
    MEMPROF_TRY_STATUS(arm_entry_trap(start, detour));
  }
  auto give_up = [&](Error error) -> Status {
    if (hold_entry) (void)disarm_entry_trap(start);
    return error;
  };
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    auto parking = ThreadParking::prepare();
    if (!parking.ok()) return give_up(parking.error());
    ParkingGate gate(*parking, start, start + jump.size(), hold_entry);
    bool busy = false;
    Status status = patch_memory(target, jump, gate, &busy);
    if (!busy) {
      if (!status.ok()) return give_up(status.error());
      if (hold_entry) entry_trap_replaced(start);
      return status;
    }
    sleep_without_libc(std::chrono::microseconds(200));
  }
  return give_up(err("the function at {:#x}: another thread was stopped inside its first {} "
                     "bytes at each of {} attempts",
                     start, jump.size(), kAttempts));
}

}  // namespace

Result<std::unique_ptr<EntryHook>> EntryHook::install(void* target, void* replacement,
                                                      EntryHookOptions options) {
  if (target == nullptr || replacement == nullptr)
    return err("entry hook: null {}", target == nullptr ? "target" : "replacement");
  if (hooks_frozen()) return err("{}", kFrozenHooks);
  auto start = reinterpret_cast<uintptr_t>(target);
  HookChange change;
  std::lock_guard lock(registry_mutex());
  auto& targets = hooked_targets();
  auto held = std::find_if(targets.begin(), targets.end(), [&](const HookedTarget& t) { return t.address == start; });
  if (held != targets.end())
    return err("the function at {:#x} is already hooked at its entry by {}", start, held->owner);

  // Known before the bytes change: an unload after the patch left a hook without an object,
  // which its owner could then never tell was gone (a trace kept it, and the address stayed
  // taken for every later load of the library there).
  ObjectKey object_key;
  if (auto key = object_key_containing(target); key.ok()) object_key = *key;

  Decoder decoder;
  MEMPROF_TRY(prologue, x86_64::measure_prologue(decoder, start, x86_64::kJumpRel32Size));
  if (options.require_single_instruction && prologue.instructions > 1)
    return err("the function at {:#x} starts with a {}-byte instruction: the jump would span {} "
               "instructions (require_single_instruction)",
               start, decoder.decode(at(start), 15, start)->length, prologue.instructions);
  MEMPROF_TRY_STATUS(check_no_branch_into(decoder, start, prologue.bytes));

  auto generate = [&](uintptr_t address) -> Result<std::vector<uint8_t>> {
    x86_64::CodeWriter thunk(address);
    thunk.jump_absolute(reinterpret_cast<uintptr_t>(replacement));
    std::vector<uint8_t> code = thunk.take();
    code.resize(kThunkSlot, 0xcc);
    MEMPROF_TRY(original, x86_64::relocate_prologue(decoder, start, prologue, address + kThunkSlot));
    code.insert(code.end(), original.begin(), original.end());
    return code;
  };
  MEMPROF_TRY(trampoline,
              place_trampoline({kEntryTrampoline, start, reinterpret_cast<uintptr_t>(replacement)},
                               {start, start + x86_64::kJumpRel32Size}, generate));

  void* original = reinterpret_cast<void*>(trampoline + kThunkSlot);
  std::vector<uint8_t> saved(at(start), at(start) + x86_64::kJumpRel32Size);
  if (options.publish_original) __atomic_store_n(options.publish_original, original, __ATOMIC_RELEASE);

  x86_64::CodeWriter jump(start);
  jump.jump(trampoline);
  if (jump.code().size() != x86_64::kJumpRel32Size)
    return err("the trampoline at {:#x} is out of rel32 reach of {:#x}", trampoline, start);
  // A jump inside one instruction has no boundary a thread could be stopped at: no parking.
  const bool park = options.park_threads && prologue.instructions > 1;
  MEMPROF_TRY_STATUS(park ? patch_with_threads_parked(target, jump.code(),
                                                      reinterpret_cast<uintptr_t>(original))
                          : patch_memory(target, jump.code()));
  // Made only once the jump is in: its destructor takes the registry lock (held here) and
  // restores the bytes, so a hook object on a failure path above deadlocked the caller (a
  // vdso function, whose page cannot be patched, hung the agent for good).
  std::unique_ptr<EntryHook> hook(new EntryHook);
  hook->target_ = target;
  hook->object_key_ = object_key;
  hook->original_ = original;
  hook->saved_ = std::move(saved);
  hook->displaced_bytes_ = prologue.bytes;
  hook->displaced_instructions_ = prologue.instructions;
  targets.push_back({start, options.owner});
  return hook;
}

EntryHook::~EntryHook() {
  if (hooks_frozen()) return;  // the jump stays, and its trampoline: calls pass through
  HookChange change;
  std::lock_guard lock(registry_mutex());
  std::erase_if(hooked_targets(),
                [&](const HookedTarget& t) { return t.address == reinterpret_cast<uintptr_t>(target_); });
  // An unloaded object's pages may now belong to something else: never touch them.
  if (object_key_.dynamic != nullptr && !is_loaded(object_key_)) return;
  // Restoring the bytes is always safe for running threads: the jump was one instruction, so
  // no thread can be stopped inside it. A failure leaves the jump, which stays valid.
  (void)patch_memory(target_, saved_);
}

}  // namespace memprof::hook
