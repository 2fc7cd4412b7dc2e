#include "core/hook/call_site_hook.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <optional>

#include "core/hook/hook_change.h"
#include "core/hook/loaded_object.h"
#include "core/hook/near_memory.h"
#include "core/hook/patch.h"
#include "core/hook/x86_64/code_writer.h"
#include "core/hook/x86_64/decoder.h"

namespace memprof::hook {
namespace {

constexpr int kCallSiteThunk = 2;
constexpr size_t kRel32InstructionSize = 5;  // e8/e9 + rel32
constexpr uintptr_t kBlock = 16;             // the widest atomic store (patch.h)

struct ScannedSite {
  uintptr_t address;
  bool tail_call;
};

// Whether `insn` is a call or tail jump rel32 (the form a site can be redirected in).
bool is_rel32_branch(const x86_64::Instruction& insn) {
  return insn.relative_branch && insn.length == kRel32InstructionSize &&
         (insn.flow == x86_64::Flow::kCall || insn.flow == x86_64::Flow::kJump);
}

// The start addresses of the object's functions that have unwind information, sorted: the
// search table of .eh_frame_hdr, in the encoding GNU ld, gold and lld write (table entries
// DW_EH_PE_datarel|sdata4, count udata4). Empty when the object has none or another encoding.
std::vector<uintptr_t> function_starts(const LoadedObject& object) {
  const LoadedSegment& hdr = object.eh_frame_hdr;
  constexpr size_t kHeader = 12;  // version, 3 encodings, eh_frame_ptr (4 bytes), count (4)
  if (hdr.end - hdr.start < kHeader) return {};
  const auto* bytes = reinterpret_cast<const uint8_t*>(hdr.start);
  bool four_byte_pointer = (bytes[1] & 0x0f) == 0x03 || (bytes[1] & 0x0f) == 0x0b;
  if (bytes[0] != 1 || !four_byte_pointer || bytes[2] != 0x03 || bytes[3] != 0x3b) return {};
  uint32_t count;
  std::memcpy(&count, bytes + 8, 4);
  if (count > (hdr.end - hdr.start - kHeader) / 8) return {};
  std::vector<uintptr_t> starts(count);
  for (size_t i = 0; i < count; ++i) {
    int32_t relative;
    std::memcpy(&relative, bytes + kHeader + 8 * i, 4);
    starts[i] = hdr.start + static_cast<uintptr_t>(static_cast<int64_t>(relative));
  }
  if (!std::is_sorted(starts.begin(), starts.end())) return {};
  return starts;
}

// Addresses in `segment` holding an e8/e9 byte whose following rel32 lands on one of `targets`
// (sorted): every possible site, and a few byte sequences inside other instructions.
std::vector<uintptr_t> rel32_candidates(const LoadedSegment& segment,
                                        const std::vector<uintptr_t>& targets) {
  std::vector<uintptr_t> found;
  const auto* bytes = reinterpret_cast<const uint8_t*>(segment.start);
  size_t size = segment.end - segment.start;
  for (size_t i = 0; i + kRel32InstructionSize <= size; ++i) {
    if ((bytes[i] | 1) != 0xe9) continue;  // e8 call, e9 jmp
    int32_t displacement;
    std::memcpy(&displacement, bytes + i + 1, 4);
    uintptr_t next = segment.start + i + kRel32InstructionSize;
    if (std::binary_search(targets.begin(), targets.end(),
                           next + static_cast<uintptr_t>(static_cast<int64_t>(displacement))))
      found.push_back(segment.start + i);
  }
  return found;
}

// The rel32 calls and jumps to any of `targets` (sorted) in the object's executable segments.
// A byte pattern alone would also match bytes inside other instructions (the 2009 tool's false
// positives), so each candidate is confirmed by decoding instruction by instruction (Zydis) up to
// it, from the start of the function holding it (.eh_frame_hdr) or, without unwind information,
// from the segment's start: the linear sweep a full decoding would do, on ~1/20 of the code
// (decoding all of a ruby executable's 4.8 MB took ~90 ms of every process's first start).
// Undecodable bytes (padding, data in text) are skipped one at a time until the decoder is back
// in step.
std::map<uintptr_t, std::vector<ScannedSite>> scan(const LoadedObject& object,
                                                   const std::vector<uintptr_t>& targets) {
  x86_64::Decoder decoder;
  std::vector<uintptr_t> starts = function_starts(object);
  std::map<uintptr_t, std::vector<ScannedSite>> sites;
  for (uintptr_t target : targets) sites[target];
  auto decode = [&](uintptr_t address, const LoadedSegment& segment) {
    return decoder.decode(reinterpret_cast<const uint8_t*>(address),
                          std::min<uintptr_t>(15, segment.end - address), address);
  };
  for (const auto& segment : object.segments) {
    if (!(segment.flags & PF_X)) continue;
    uintptr_t in_step = segment.start;  // an instruction boundary, at or before the next candidate
    for (uintptr_t candidate : rel32_candidates(segment, targets)) {
      uintptr_t anchor = segment.start;
      auto after = std::upper_bound(starts.begin(), starts.end(), candidate);
      if (after != starts.begin()) anchor = std::max(anchor, *std::prev(after));
      if (in_step < anchor || in_step > candidate) in_step = anchor;
      while (in_step < candidate) {
        auto insn = decode(in_step, segment);
        in_step = insn.ok() ? insn->end() : in_step + 1;
      }
      if (in_step != candidate) continue;  // inside an instruction that started before it
      auto insn = decode(candidate, segment);
      if (insn.ok() && is_rel32_branch(*insn) &&
          std::binary_search(targets.begin(), targets.end(), insn->branch_target))
        sites[insn->branch_target].push_back({candidate, insn->flow == x86_64::Flow::kJump});
    }
  }
  return sites;
}

Result<std::vector<ScannedSite>> find_in_object(const void* target, const void* object_address) {
  MEMPROF_TRY(object, object_containing(object_address ? object_address : target));
  auto callee = reinterpret_cast<uintptr_t>(target);
  auto sites = std::move(scan(object, {callee})[callee]);
  if (sites.empty())
    return err("no call to {} in {}", target, object.path);
  return sites;
}

// The patch that makes the call or jmp at `site` go to `destination`.
SmallPatch displacement_patch(uintptr_t site, uintptr_t destination) {
  SmallPatch patch{site + 1, {}, 4};
  auto displacement = static_cast<int32_t>(destination - (site + kRel32InstructionSize));
  std::memcpy(patch.bytes, &displacement, 4);
  return patch;
}

Status check_arguments(const void* target, const void* replacement) {
  if (target == nullptr || replacement == nullptr)
    return err("call-site hook: null {}", target == nullptr ? "target" : "replacement");
  return ok_status();
}

int32_t displacement_of(uintptr_t site) {
  int32_t value;
  std::memcpy(&value, reinterpret_cast<const void*>(site + 1), 4);
  return value;
}

// Where a thunk for `site` may live so that the displacement change is one atomic store;
// nullopt when the four displacement bytes share a 16-byte block and any thunk in reach will do.
std::optional<NearPlacement> constrained_placement(uintptr_t site, uintptr_t callee) {
  uintptr_t end = site + kRel32InstructionSize;
  NearPlacement p{end, end};
  size_t before_boundary = kBlock - (site + 1) % kBlock;  // displacement bytes in the first block
  if (before_boundary >= 4) return std::nullopt;
  if (before_boundary < 3) {
    // Keep the low 1 or 2 bytes (first block), change the rest (second block).
    p.modulus = uintptr_t{1} << (8 * before_boundary);
    p.residue = callee;
    return p;
  }
  // Three bytes before the boundary: keep the high byte, change the low three.
  auto high = static_cast<int64_t>(displacement_of(site)) >> 24;
  p.window_start = end + static_cast<uintptr_t>(high << 24);
  p.window_end = p.window_start + (uintptr_t{1} << 24);
  return p;
}

}  // namespace

Result<std::vector<uintptr_t>> CallSiteHook::find_sites(const void* target,
                                                        const void* object_address) {
  MEMPROF_TRY(sites, find_in_object(target, object_address));
  std::vector<uintptr_t> addresses;
  for (const auto& s : sites) addresses.push_back(s.address);
  return addresses;
}

Result<std::map<const void*, std::vector<uintptr_t>>> CallSiteHook::find_sites(
    std::span<const void* const> targets, const void* object_address) {
  MEMPROF_TRY(object, object_containing(object_address));
  std::vector<uintptr_t> sorted;
  for (const void* target : targets) sorted.push_back(reinterpret_cast<uintptr_t>(target));
  std::sort(sorted.begin(), sorted.end());
  std::map<const void*, std::vector<uintptr_t>> found;
  for (auto& [target, sites] : scan(object, sorted)) {
    auto& addresses = found[reinterpret_cast<const void*>(target)];
    for (const auto& site : sites) addresses.push_back(site.address);
  }
  return found;
}

Result<std::unique_ptr<CallSiteHook>> CallSiteHook::install(void* target, void* replacement,
                                                            const void* object_address) {
  MEMPROF_TRY_STATUS(check_arguments(target, replacement));
  MEMPROF_TRY(sites, find_sites(target, object_address));
  return install_at(target, replacement, sites);
}

Result<std::unique_ptr<CallSiteHook>> CallSiteHook::install_at(void* target, void* replacement,
                                                               std::span<const uintptr_t> at) {
  MEMPROF_TRY_STATUS(check_arguments(target, replacement));
  if (at.empty()) return err("call-site hook: no site to redirect to {}", target);
  if (hooks_frozen()) return err("{}", kFrozenHooks);
  HookChange change;
  std::unique_ptr<CallSiteHook> hook(new CallSiteHook);
  hook->target_ = target;
  MEMPROF_TRY(object, object_containing(reinterpret_cast<const void*>(at.front())));
  hook->object_ = object.path;
  hook->object_key_ = object.key();

  auto callee = reinterpret_cast<uintptr_t>(target);
  x86_64::Decoder decoder;
  std::vector<ScannedSite> sites;
  for (uintptr_t address : at) {
    auto insn = decoder.decode(reinterpret_cast<const uint8_t*>(address), kRel32InstructionSize,
                               address);
    if (!insn.ok() || !is_rel32_branch(*insn) || insn->branch_target != callee)
      return err("call-site hook: {:#x} is no longer a call to {}", address, target);
    sites.push_back({address, insn->flow == x86_64::Flow::kJump});
  }

  auto generate = [&](uintptr_t address) -> Result<std::vector<uint8_t>> {
    x86_64::CodeWriter thunk(address);
    thunk.jump_absolute(reinterpret_cast<uintptr_t>(replacement));
    return thunk.take();
  };
  TrampolineKey key{kCallSiteThunk, callee, reinterpret_cast<uintptr_t>(replacement)};
  // Sites whose displacement sits in one block share a thunk placed for all of them at once.
  NearPlacement shared{UINTPTR_MAX, 0};
  for (const auto& site : sites) {
    if (constrained_placement(site.address, callee)) continue;
    shared.low = std::min(shared.low, site.address + kRel32InstructionSize);
    shared.high = std::max(shared.high, site.address + kRel32InstructionSize);
  }
  uintptr_t shared_thunk = 0;
  if (shared.low <= shared.high) {
    MEMPROF_TRY(thunk, place_trampoline(key, shared, generate));
    shared_thunk = thunk;
  }

  std::vector<CallSite> planned;
  std::vector<SmallPatch> patches;
  for (const auto& site : sites) {
    uintptr_t thunk = shared_thunk;
    if (auto placement = constrained_placement(site.address, callee)) {
      // place_trampoline reuses a retained thunk that satisfies this site when there is one.
      auto placed = place_trampoline(key, *placement, generate);
      if (!placed.ok()) return err("call site at {:#x}: {}", site.address, placed.message());
      thunk = *placed;
    }
    planned.push_back({site.address, site.tail_call, displacement_of(site.address), thunk});
    patches.push_back(displacement_patch(site.address, thunk));
  }
  size_t written = 0;
  Status status = patch_memory(patches, &written);
  // The destructor restores what was written, if not all of it.
  hook->sites_.assign(planned.begin(), planned.begin() + static_cast<ptrdiff_t>(written));
  if (!status.ok()) return err("call site at {:#x}: {}", patches[written].address - 1, status.message());
  return hook;
}

// Out of memory (a process at its ulimit -v) must not end the process from a destructor: the
// sites then keep calling their thunks, which stay valid (they are never unmapped).
CallSiteHook::~CallSiteHook() {
  try {
    // An unloaded object's pages may now belong to something else: never touch them.
    if (sites_.empty() || hooks_frozen() || !is_loaded(object_key_)) return;
    HookChange change;
    std::vector<SmallPatch> patches;
    for (const auto& site : sites_) {
      // Only a site that still calls our thunk is ours to restore.
      if (site.address + kRel32InstructionSize + static_cast<uintptr_t>(displacement_of(site.address)) !=
          site.thunk)
        continue;
      patches.push_back(displacement_patch(
          site.address,
          site.address + kRel32InstructionSize + static_cast<int64_t>(site.previous_displacement)));
    }
    (void)patch_memory(patches);
  } catch (const std::bad_alloc&) {
  }
}

}  // namespace memprof::hook
