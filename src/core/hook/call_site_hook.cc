#include "core/hook/call_site_hook.h"

#include <algorithm>

#include "core/hook/loaded_object.h"
#include "core/hook/near_memory.h"
#include "core/hook/patch.h"
#include "core/hook/x86_64/code_writer.h"
#include "core/hook/x86_64/decoder.h"

namespace memprof::hook {
namespace {

constexpr int kCallSiteThunk = 2;
// The thunk's address is congruent to the target modulo 2^24, so a site's new displacement
// differs from its old one only in the most significant byte.
constexpr uintptr_t kSameLowBytes = uintptr_t{1} << 24;
constexpr size_t kRel32InstructionSize = 5;  // e8/e9 + rel32
constexpr size_t kHighByteOffset = 4;

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
                                                std::string* object_path) {
  MEMPROF_TRY(object, object_containing(object_address ? object_address : target));
  if (object_path) *object_path = object.path;
  auto sites = scan(object, reinterpret_cast<uintptr_t>(target));
  if (sites.empty())
    return err("no call to {} in {}", target, object.path.empty() ? "the main program" : object.path);
  return sites;
}

uint8_t high_byte(uintptr_t site, uintptr_t destination) {
  return static_cast<uint8_t>(static_cast<uint32_t>(destination - (site + kRel32InstructionSize)) >> 24);
}

}  // namespace

Result<std::vector<uintptr_t>> CallSiteHook::find_sites(const void* target,
                                                        const void* object_address) {
  MEMPROF_TRY(sites, find_in_object(target, object_address, nullptr));
  std::vector<uintptr_t> addresses;
  for (const auto& s : sites) addresses.push_back(s.address);
  return addresses;
}

Result<std::unique_ptr<CallSiteHook>> CallSiteHook::install(void* target, void* replacement,
                                                            const void* object_address) {
  if (target == nullptr || replacement == nullptr)
    return err("call-site hook: null {}", target == nullptr ? "target" : "replacement");
  std::unique_ptr<CallSiteHook> hook(new CallSiteHook);
  MEMPROF_TRY(sites, find_in_object(target, object_address, &hook->object_));

  auto callee = reinterpret_cast<uintptr_t>(target);
  NearPlacement placement{sites.front().address, sites.back().address + kRel32InstructionSize,
                          kSameLowBytes, callee % kSameLowBytes};
  auto generate = [&](uintptr_t address) -> Result<std::vector<uint8_t>> {
    x86_64::CodeWriter thunk(address);
    thunk.jump_absolute(reinterpret_cast<uintptr_t>(replacement));
    return thunk.take();
  };
  MEMPROF_TRY(thunk, place_trampoline({kCallSiteThunk, callee, reinterpret_cast<uintptr_t>(replacement)},
                                      placement, generate));
  hook->target_ = target;
  hook->thunk_ = reinterpret_cast<void*>(thunk);

  for (const auto& site : sites) {
    uintptr_t high = site.address + kHighByteOffset;
    uint8_t previous = *reinterpret_cast<const uint8_t*>(high);
    uint8_t next = high_byte(site.address, thunk);
    Status status = patch_memory(reinterpret_cast<void*>(high), {&next, 1});
    if (!status.ok()) {
      hook.reset();  // the destructor restores the sites patched so far
      return err("call site at {:#x}: {}", site.address, status.message());
    }
    hook->sites_.push_back({site.address, site.tail_call, previous});
  }
  return hook;
}

CallSiteHook::~CallSiteHook() {
  auto thunk = reinterpret_cast<uintptr_t>(thunk_);
  for (const auto& site : sites_) {
    auto* high = reinterpret_cast<uint8_t*>(site.address + kHighByteOffset);
    // Only a site that still calls our thunk is ours to restore.
    if (*high != high_byte(site.address, thunk)) continue;
    (void)patch_memory(high, {&site.previous_byte, 1});
  }
}

}  // namespace memprof::hook
