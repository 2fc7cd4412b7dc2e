#include "core/hook/entry_hook.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <new>
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

// A jump to write with the threads parked, and where its int3 sends callers meanwhile.
struct ParkedJump {
  uintptr_t start;
  std::span<const uint8_t> bytes;
  uintptr_t detour;
};

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
// one of them is stopped inside one of the ranges (start, end): past a jump's first byte,
// before its end.
class ParkingGate final : public StoreGate {
 public:
  ParkingGate(ThreadParking& parking, std::span<const std::pair<uintptr_t, uintptr_t>> ranges, bool spare_sleepers)
      : parking_(parking), ranges_(ranges), spare_sleepers_(spare_sleepers) {}
  bool before_store() noexcept override {
    parking_.park(kParkTimeoutMs, spare_sleepers_);
    return std::none_of(ranges_.begin(), ranges_.end(),
                        [&](const auto& range) { return parking_.any_stopped_inside(range.first, range.second); });
  }
  void after_store() noexcept override { parking_.resume(); }

 private:
  // For a running thread slow to reach the handler (not on a CPU); one that blocks the signal
  // is waited for briefly only (thread_parking.h).
  static constexpr unsigned kParkTimeoutMs = 100;
  ThreadParking& parking_;
  std::span<const std::pair<uintptr_t, uintptr_t>> ranges_;
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

// Writes jumps while no other thread is between two of the instructions they replace: the
// running threads are parked (once for all of them) and the jumps go in when none is stopped
// inside any. When no thread blocks SIGTRAP, an int3 first holds each entry (callers meanwhile
// go to its `detour`, the relocated original) and threads asleep in the kernel are left asleep;
// else every thread is signalled (a sleep in progress returns EINTR). Every jump must fit one
// atomic store. One status per jump.
std::vector<Status> patch_with_threads_parked(std::span<const ParkedJump> jumps) {
  constexpr int kAttempts = 100;
  std::vector<Status> statuses(jumps.size(), ok_status());
  auto fail_all = [&](const Error& error) {
    for (Status& status : statuses)
      if (status.ok()) status = error;
    return statuses;
  };
  auto threads = ThreadParking::prepare();
  if (!threads.ok()) return fail_all(threads.error());
  const bool hold_entry = !any_thread_blocks_sigtrap(threads->threads());
  std::optional<SigtrapUnblocked> unblocked;
  std::vector<SmallPatch> patches;
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  std::vector<size_t> armed;  // indices of the jumps in `patches`
  std::vector<Status> traps(jumps.size(), ok_status());
  if (hold_entry) {
    unblocked.emplace();
    std::vector<EntryTrap> entries;
    for (const ParkedJump& jump : jumps) entries.push_back({jump.start, jump.detour});
    traps = arm_entry_traps(entries);
  }
  for (size_t i = 0; i < jumps.size(); ++i) {
    if (!traps[i].ok()) {
      statuses[i] = traps[i];
      continue;
    }
    SmallPatch patch{jumps[i].start, {}, static_cast<uint8_t>(jumps[i].bytes.size())};
    std::copy(jumps[i].bytes.begin(), jumps[i].bytes.end(), patch.bytes);
    patches.push_back(patch);
    ranges.emplace_back(jumps[i].start, jumps[i].start + jumps[i].bytes.size());
    armed.push_back(i);
  }
  auto give_up = [&](const Error& error) {
    for (size_t i : armed) {
      if (hold_entry) (void)disarm_entry_trap(jumps[i].start);
      statuses[i] = error;
    }
    return statuses;
  };
  if (patches.empty()) return statuses;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    auto parking = ThreadParking::prepare();
    if (!parking.ok()) return give_up(parking.error());
    ParkingGate gate(*parking, ranges, hold_entry);
    bool busy = false;
    Status status = patch_memory(patches, gate, &busy);
    if (!busy) {
      if (!status.ok()) return give_up(status.error());
      if (hold_entry)
        for (size_t i : armed) entry_trap_replaced(jumps[i].start);
      return statuses;
    }
    sleep_without_libc(std::chrono::microseconds(200));
  }
  return give_up(err("another thread was stopped inside the first {} bytes of one of {} functions at each of {} "
                     "attempts", x86_64::kJumpRel32Size, patches.size(), kAttempts));
}

}  // namespace

// An entry hook ready to go in: its trampoline placed and original() published, the jump
// computed. Everything but the store; made with the registry lock held.
struct EntryHook::Prepared {
  void* target = nullptr;
  ObjectKey object_key;
  void* original = nullptr;
  std::vector<uint8_t> saved;
  std::vector<uint8_t> jump;
  size_t displaced_bytes = 0;
  size_t displaced_instructions = 0;
  uintptr_t start() const { return reinterpret_cast<uintptr_t>(target); }
  // A jump inside one instruction has no boundary a thread could be stopped at: no parking.
  bool needs_parking(const EntryHookOptions& options) const {
    return options.park_threads && displaced_instructions > 1;
  }
};

Result<EntryHook::Prepared> EntryHook::prepare_locked(void* target, void* replacement,
                                                      const EntryHookOptions& options) {
  if (target == nullptr || replacement == nullptr)
    return err("entry hook: null {}", target == nullptr ? "target" : "replacement");
  if (hooks_frozen()) return err("{}", kFrozenHooks);
  auto start = reinterpret_cast<uintptr_t>(target);
  auto& targets = hooked_targets();
  auto held = std::find_if(targets.begin(), targets.end(), [&](const HookedTarget& t) { return t.address == start; });
  if (held != targets.end())
    return err("the function at {:#x} is already hooked at its entry by {}", start, held->owner);

  Prepared prepared;
  prepared.target = target;
  // Known before the bytes change: an unload after the patch left a hook without an object,
  // which its owner could then never tell was gone (a trace kept it, and the address stayed
  // taken for every later load of the library there).
  if (auto key = object_key_containing(target); key.ok()) prepared.object_key = *key;

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

  prepared.original = reinterpret_cast<void*>(trampoline + kThunkSlot);
  prepared.saved.assign(at(start), at(start) + x86_64::kJumpRel32Size);
  prepared.displaced_bytes = prologue.bytes;
  prepared.displaced_instructions = prologue.instructions;
  x86_64::CodeWriter jump(start);
  jump.jump(trampoline);
  if (jump.code().size() != x86_64::kJumpRel32Size)
    return err("the trampoline at {:#x} is out of rel32 reach of {:#x}", trampoline, start);
  prepared.jump = jump.code();
  if (options.publish_original) __atomic_store_n(options.publish_original, prepared.original, __ATOMIC_RELEASE);
  return prepared;
}

// Made only once the jump is in: its destructor takes the registry lock (held here) and
// restores the bytes, so a hook object on a failure path deadlocked the caller (a vdso
// function, whose page cannot be patched, hung the agent for good).
std::unique_ptr<EntryHook> EntryHook::commit_locked(Prepared prepared, const char* owner) {
  std::unique_ptr<EntryHook> hook(new EntryHook);
  hook->target_ = prepared.target;
  hook->object_key_ = prepared.object_key;
  hook->original_ = prepared.original;
  hook->saved_ = std::move(prepared.saved);
  hook->displaced_bytes_ = prepared.displaced_bytes;
  hook->displaced_instructions_ = prepared.displaced_instructions;
  hooked_targets().push_back({prepared.start(), owner});
  return hook;
}

Result<std::unique_ptr<EntryHook>> EntryHook::install(void* target, void* replacement,
                                                      EntryHookOptions options) {
  const EntryHookRequest request{target, replacement, options.publish_original};
  return std::move(install_many(std::span<const EntryHookRequest>(&request, 1), options).front());
}

std::vector<Result<std::unique_ptr<EntryHook>>> EntryHook::install_many(std::span<const EntryHookRequest> requests,
                                                                        EntryHookOptions options) {
  std::vector<Result<std::unique_ptr<EntryHook>>> results;
  results.reserve(requests.size());
  HookChange change;
  std::lock_guard lock(registry_mutex());
  // Prepared first, each alone (a target named twice is refused), their trampolines made
  // executable together; then the hooks that need no parking, or cannot share one store, go
  // in one by one, and the others under one parking.
  std::vector<std::pair<size_t, Prepared>> prepared;
  {
    TrampolineSealing sealing;
    for (const EntryHookRequest& request : requests) {
      EntryHookOptions own = options;
      own.publish_original = request.publish_original;
      const bool duplicate = std::any_of(prepared.begin(), prepared.end(),
                                         [&](const auto& p) { return p.second.target == request.target; });
      auto one = duplicate ? Result<Prepared>(err("the function at {} is named twice", request.target))
                           : prepare_locked(request.target, request.replacement, own);
      results.emplace_back(err("not installed"));  // replaced below
      if (!one.ok()) {
        results.back() = one.error();
        continue;
      }
      prepared.emplace_back(results.size() - 1, std::move(*one));
    }
    if (Status sealed = sealing.seal(); !sealed.ok()) {
      for (auto& [index, hook] : prepared) results[index] = sealed.error();
      return results;
    }
  }
  std::vector<std::pair<size_t, Prepared>> parked;
  for (auto& [index, hook] : prepared) {
    if (hook.needs_parking(options) && fits_one_atomic_store(hook.start(), hook.jump.size())) {
      parked.emplace_back(index, std::move(hook));
      continue;
    }
    // No parking needed; or a jump across a 16-byte boundary, which no one store writes: alone
    // in the process it is copied, else refused (patch.h).
    Status written = patch_memory(hook.target, hook.jump);
    if (written.ok()) {
      results[index] = commit_locked(std::move(hook), options.owner);
    } else {
      results[index] = written.error();
    }
  }
  if (parked.empty()) return results;

  std::vector<ParkedJump> jumps;
  for (const auto& [index, hook] : parked)
    jumps.push_back({hook.start(), hook.jump, reinterpret_cast<uintptr_t>(hook.original)});
  std::vector<Status> written = patch_with_threads_parked(jumps);
  for (size_t i = 0; i < parked.size(); ++i) {
    auto& [index, hook] = parked[i];
    if (written[i].ok()) {
      results[index] = commit_locked(std::move(hook), options.owner);
    } else {
      results[index] = written[i].error();
    }
  }
  return results;
}

void EntryHook::uninstall_all(std::vector<std::unique_ptr<EntryHook>>& hooks) {
  if (!hooks_frozen()) {
    HookChange change;
    std::lock_guard lock(registry_mutex());
    std::vector<SmallPatch> patches;
    std::vector<EntryHook*> patched;
    for (auto& hook : hooks) {
      const auto start = reinterpret_cast<uintptr_t>(hook->target_);
      std::erase_if(hooked_targets(), [&](const HookedTarget& t) { return t.address == start; });
      hook->restored_ = true;
      // An unloaded object's pages may now belong to something else: never touch them.
      if (hook->object_key_.dynamic != nullptr && !is_loaded(hook->object_key_)) continue;
      SmallPatch patch{start, {}, static_cast<uint8_t>(hook->saved_.size())};
      std::copy(hook->saved_.begin(), hook->saved_.end(), patch.bytes);
      patches.push_back(patch);
      patched.push_back(hook.get());
    }
    // One maps read, one protection change per page and one serialization for all; what the
    // batch could not write is tried alone (a failure leaves the jump, which stays valid).
    size_t written = 0;
    if (!patch_memory(patches, &written).ok()) {
      for (size_t i = written; i < patched.size(); ++i) (void)patch_memory(patched[i]->target_, patched[i]->saved_);
    }
  }
  hooks.clear();
}

EntryHook::~EntryHook() {
  if (restored_) return;  // by uninstall_all
  if (hooks_frozen()) return;  // the jump stays, and its trampoline: calls pass through
  HookChange change;
  std::lock_guard lock(registry_mutex());
  std::erase_if(hooked_targets(),
                [&](const HookedTarget& t) { return t.address == reinterpret_cast<uintptr_t>(target_); });
  // Restoring the bytes is always safe for running threads: the jump was one instruction, so
  // no thread can be stopped inside it. A failure leaves the jump, which stays valid; so does
  // running out of memory (a process at its ulimit -v), which must not end the process from a
  // destructor.
  try {
    // An unloaded object's pages may now belong to something else: never touch them.
    if (object_key_.dynamic != nullptr && !is_loaded(object_key_)) return;
    (void)patch_memory(target_, saved_);
  } catch (const std::bad_alloc&) {
  }
}

}  // namespace memprof::hook
