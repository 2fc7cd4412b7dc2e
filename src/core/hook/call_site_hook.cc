#include "core/hook/call_site_hook.h"

#include <algorithm>
#include <cstring>
#include <optional>

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

// Linear sweep over the object's executable segments. Undecodable bytes (padding, data in
// text) are skipped one at a time until the decoder is back in step.
std::vector<ScannedSite> scan(const LoadedObject& object, uintptr_t target) {
  x86_64::Decoder decoder;
  std::vector<ScannedSite> sites;
  for (const auto& segment : object.segments) {
    if (!(segment.flags & PF_X)) continue;
    for (uintptr_t address = segment.start; address < segment.end;) {
      auto insn = decoder.decode(reinterpret_cast<const uint8_t*>(address),
                                 std::min<uintptr_t>(15, segment.end - address), address);
      if (!insn.ok()) {
        ++address;
        continue;
      }
      if (insn->relative_branch && insn->branch_target == target &&
          insn->length == kRel32InstructionSize &&
          (insn->flow == x86_64::Flow::kCall || insn->flow == x86_64::Flow::kJump))
        sites.push_back({address, insn->flow == x86_64::Flow::kJump});
      address = insn->end();
    }
  }
  return sites;
}

Result<std::vector<ScannedSite>> find_in_object(const void* target, const void* object_address,
                                                std::string* object_path, ObjectKey* key) {
  MEMPROF_TRY(object, object_containing(object_address ? object_address : target));
  if (object_path) *object_path = object.path;
  if (key) *key = object.key();
  auto sites = scan(object, reinterpret_cast<uintptr_t>(target));
  if (sites.empty())
    return err("no call to {} in {}", target, object.path);
  return sites;
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
  MEMPROF_TRY(sites, find_in_object(target, object_address, nullptr, nullptr));
  std::vector<uintptr_t> addresses;
  for (const auto& s : sites) addresses.push_back(s.address);
  return addresses;
}

Result<std::unique_ptr<CallSiteHook>> CallSiteHook::install(void* target, void* replacement,
                                                            const void* object_address) {
  if (target == nullptr || replacement == nullptr)
    return err("call-site hook: null {}", target == nullptr ? "target" : "replacement");
  std::unique_ptr<CallSiteHook> hook(new CallSiteHook);
  hook->target_ = target;
  MEMPROF_TRY(sites, find_in_object(target, object_address, &hook->object_, &hook->object_key_));

  auto callee = reinterpret_cast<uintptr_t>(target);
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

  for (const auto& site : sites) {
    uintptr_t thunk = shared_thunk;
    if (auto placement = constrained_placement(site.address, callee)) {
      // place_trampoline reuses a retained thunk that satisfies this site when there is one.
      auto placed = place_trampoline(key, *placement, generate);
      if (!placed.ok()) {
        hook.reset();  // the destructor restores the sites patched so far
        return err("call site at {:#x}: {}", site.address, placed.message());
      }
      thunk = *placed;
    }
    int32_t previous = displacement_of(site.address);
    auto next = static_cast<int32_t>(thunk - (site.address + kRel32InstructionSize));
    Status status = patch_memory(reinterpret_cast<void*>(site.address + 1),
                                 {reinterpret_cast<const uint8_t*>(&next), 4});
    if (!status.ok()) {
      hook.reset();
      return err("call site at {:#x}: {}", site.address, status.message());
    }
    hook->sites_.push_back({site.address, site.tail_call, previous, thunk});
  }
  return hook;
}

CallSiteHook::~CallSiteHook() {
  // An unloaded object's pages may now belong to something else: never touch them.
  if (sites_.empty() || !is_loaded(object_key_)) return;
  for (const auto& site : sites_) {
    // Only a site that still calls our thunk is ours to restore.
    if (site.address + kRel32InstructionSize + static_cast<uintptr_t>(displacement_of(site.address)) !=
        site.thunk)
      continue;
    (void)patch_memory(reinterpret_cast<void*>(site.address + 1),
                       {reinterpret_cast<const uint8_t*>(&site.previous_displacement), 4});
  }
}

}  // namespace memprof::hook
