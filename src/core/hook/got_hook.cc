#include "core/hook/got_hook.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <set>

#include "core/hook/got_hook_state.h"
#include "core/hook/hook_change.h"
#include "core/hook/patch.h"

namespace memprof::hook {
namespace {

struct SymbolRequest {
  std::string name;
  std::string version;  // "" = any
};

SymbolRequest parse_symbol(std::string_view symbol) {
  size_t at = symbol.find('@');
  if (at == std::string_view::npos) return {std::string(symbol), ""};
  // "name@@VERSION" (the default-version spelling) means the same as "name@VERSION" here.
  size_t version = symbol.find_first_not_of('@', at);
  return {std::string(symbol.substr(0, at)),
          version == std::string_view::npos ? "" : std::string(symbol.substr(version))};
}

// The version an object binds symbol `index` to: DT_VERNEED for imports, DT_VERDEF for its
// own definitions (a library calling its own exported function through its PLT).
std::string_view bound_version(const LoadedObject& object, uint32_t index) {
  if (object.tables.symtab[index].st_shndx == SHN_UNDEF) return object.needed_version(index);
  return object.defined_version(index);
}

bool versions_match(std::string_view wanted, std::string_view bound) {
  return wanted.empty() || bound.empty() || wanted == bound;
}

bool selected(const GotHook::State& state, const LoadedObject& object) {
  if (object.role == ObjectRole::kLoader || object.role == ObjectRole::kVdso) return false;
  if (!object.problem.empty()) return false;
  if (state.options.object_filter) return state.options.object_filter(object.path);
  return object.role != ObjectRole::kHookLibrary;
}

struct FoundSlot {
  void** address;
  bool jump_slot;
  std::string_view version;
};

// Every JUMP_SLOT / GLOB_DAT slot of `object` that names `name`.
std::vector<FoundSlot> find_slots(const LoadedObject& object, std::string_view name) {
  std::vector<FoundSlot> found;
  const auto& t = object.tables;
  for (auto [rels, count] : {std::pair{t.jmprel, t.jmprel_count}, std::pair{t.rela, t.rela_count}}) {
    for (size_t i = 0; i < count; ++i) {
      uint32_t type = ELF64_R_TYPE(rels[i].r_info);
      if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) continue;
      uint32_t index = ELF64_R_SYM(rels[i].r_info);
      if (object.symbol_name(index) != name) continue;
      uintptr_t slot = object.bias + rels[i].r_offset;
      // A slot the loader wrote is inside the object and 8-byte aligned; anything else means
      // the tables are not what they claim, and the slot is left alone.
      if (slot % alignof(void*) != 0 || !object.contains(slot) ||
          !object.contains(slot + sizeof(void*) - 1))
        continue;
      found.push_back({reinterpret_cast<void**>(slot), type == R_X86_64_JUMP_SLOT,
                       bound_version(object, index)});
    }
  }
  return found;
}

// The slots of `object` that `state` patches: none when the object is not selected.
std::vector<FoundSlot> slots_to_patch(const GotHook::State& state, const LoadedObject& object) {
  std::vector<FoundSlot> slots;
  if (!selected(state, object)) return slots;
  for (const FoundSlot& found : find_slots(object, state.name))
    if (versions_match(state.version, found.version)) slots.push_back(found);
  return slots;
}

Status write_slot(void** slot, void* value) {
  return patch_memory(slot, {reinterpret_cast<const uint8_t*>(&value), sizeof value});
}

Result<void*> lookup_definition(const SymbolRequest& request,
                                const std::vector<LoadedObject>& objects) {
  for (const auto& object : objects) {
    if (!object.problem.empty()) continue;
    for (uint32_t index : object.find_symbols(request.name)) {
      const Elf64_Sym& sym = object.tables.symtab[index];
      if (sym.st_shndx == SHN_UNDEF || ELF64_ST_BIND(sym.st_info) == STB_LOCAL) continue;
      if (request.version.empty() ? object.version_hidden(index)
                                  : object.defined_version(index) != request.version)
        continue;
      uintptr_t address = object.bias + sym.st_value;
      if (ELF64_ST_TYPE(sym.st_info) == STT_GNU_IFUNC) {
        // What the loader does on x86-64: call the resolver with no arguments.
        address = reinterpret_cast<uintptr_t (*)()>(address)();
      }
      return reinterpret_cast<void*>(address);
    }
  }
  if (request.version.empty())
    return err("symbol '{}' is not defined by any loaded object", request.name);
  return err("symbol '{}@{}' is not defined by any loaded object", request.name, request.version);
}

std::string display_name(const SymbolRequest& request) {
  return request.version.empty() ? request.name : request.name + "@" + request.version;
}

}  // namespace

namespace {

// Marks `object` seen and writes the replacement into `slots` (from slots_to_patch).
Status patch_slots_locked(GotHook::State& state, const LoadedObject& object,
                          const std::vector<FoundSlot>& slots) {
  ObjectKey key = object.key();
  state.seen.push_back(key);
  // Out of memory must not come between a slot's write and its record (it would never be
  // restored): the room and the record are made before the write.
  state.slots.reserve(state.slots.size() + slots.size());
  for (const FoundSlot& found : slots) {
    void* previous = __atomic_load_n(found.address, __ATOMIC_ACQUIRE);
    decltype(state.slots)::value_type record{{found.address, previous, object.path, found.jump_slot}, key};
    MEMPROF_TRY_STATUS(write_slot(found.address, state.replacement));
    state.slots.push_back(std::move(record));
  }
  return ok_status();
}

}  // namespace

Status patch_object_locked(GotHook::State& state, const LoadedObject& object) {
  if (std::find(state.seen.begin(), state.seen.end(), object.key()) != state.seen.end())
    return ok_status();
  return patch_slots_locked(state, object, slots_to_patch(state, object));
}

void unpatch_all_locked(GotHook::State& state) {
  auto objects = loaded_objects();
  for (auto it = state.slots.rbegin(); it != state.slots.rend(); ++it) {
    // An object unloaded behind our back (a dlclose we did not see) may have been replaced by
    // another mapping: never write there. A slot that no longer holds our replacement was
    // changed by someone else (another hooking layer, the lazy resolver): leave it to them.
    if (!objects.ok() || !is_loaded(*objects, it->object)) continue;
    if (__atomic_load_n(it->slot.address, __ATOMIC_ACQUIRE) != state.replacement) continue;
    // A failed restore cannot be undone here; the slot keeps the replacement, which stays valid.
    (void)write_slot(it->slot.address, it->slot.previous);
  }
  state.slots.clear();
  state.seen.clear();
}

Result<std::shared_ptr<GotHook::State>> install_got_hook_locked(std::string symbol,
                                                                void* replacement,
                                                                GotHookOptions options,
                                                                bool internal) {
  SymbolRequest request = parse_symbol(symbol);
  if (request.name.empty()) return err("empty symbol name in '{}'", symbol);
  if (replacement == nullptr) return err("null replacement for symbol '{}'", symbol);
  for (const auto& active : active_got_hooks()) {
    if (active->name != request.name || !versions_match(active->version, request.version))
      continue;
    if (active->internal)
      return err("symbol '{}' is hooked by the dlopen follower while a GotHook follows dlopen",
                 request.name);
    return err("symbol '{}' is already hooked by another GotHook ('{}')", request.name,
               active->symbol);
  }

  auto state = std::make_shared<GotHook::State>();
  state->symbol = std::move(symbol);
  state->name = request.name;
  state->version = request.version;
  state->replacement = replacement;
  state->options = std::move(options);
  state->internal = internal;

  MEMPROF_TRY(objects, loaded_objects());
  // First find every slot, so that an error leaves the process untouched.
  std::vector<std::vector<FoundSlot>> object_slots;  // one entry per object, in `objects` order
  object_slots.reserve(objects.size());
  std::set<std::string, std::less<>> versions;
  size_t slot_count = 0;
  for (const auto& object : objects) {
    object_slots.push_back(slots_to_patch(*state, object));
    for (const FoundSlot& found : object_slots.back()) {
      ++slot_count;
      if (!found.version.empty()) versions.emplace(found.version);
    }
  }
  // The follower's own hooks are kept without slots: objects loaded later may import the symbol.
  if (slot_count == 0 && !internal && !state->options.allow_no_slots)
    return err("no GOT slot for symbol '{}' in any loaded object", display_name(request));
  // Slots bound to several versions are one hook only when the versions are aliases of one
  // function (glibc's dlopen@GLIBC_2.2.5 and dlopen@@GLIBC_2.34); memcpy@GLIBC_2.2.5 and
  // memcpy@@GLIBC_2.14 are different functions and need one hook each.
  if (state->version.empty() && versions.size() == 1) state->version = *versions.begin();
  MEMPROF_TRY(original, lookup_definition({state->name, state->version}, objects));
  for (const auto& version : versions) {
    MEMPROF_TRY(versioned, lookup_definition({state->name, version}, objects));
    if (versioned != original) {
      std::string list;
      for (const auto& v : versions) list += (list.empty() ? "" : ", ") + v;
      return err("symbol '{}' is bound to several versions ({}) that are different functions: "
                 "hook each as '{}@VERSION'",
                 request.name, list, request.name);
    }
  }
  state->original = original;
  if (state->options.publish_original)
    __atomic_store_n(state->options.publish_original, original, __ATOMIC_RELEASE);

  // The slots found above: narrowing state->version to their one version excludes none of them.
  // Out of memory half way (a process at its ulimit -v) puts back what was written, as an error does.
  try {
    for (size_t i = 0; i < objects.size(); ++i) {
      if (Status status = patch_slots_locked(*state, objects[i], object_slots[i]); !status.ok()) {
        unpatch_all_locked(*state);
        return err("hooking '{}' in {}: {}", state->symbol, objects[i].path, status.message());
      }
    }
    active_got_hooks().push_back(state);
  } catch (const std::bad_alloc&) {
    unpatch_all_locked(*state);
    throw;
  }
  return state;
}

Result<std::unique_ptr<GotHook>> GotHook::install(std::string symbol, void* replacement,
                                                  GotHookOptions options) {
  if (hooks_frozen()) return err("{}", kFrozenHooks);
  HookChange change;
  std::lock_guard lock(got_registry_mutex());
  // Made before any slot is written: once they are, nothing may fail for want of memory.
  std::unique_ptr<GotHook> hook(new GotHook(nullptr));
  bool follow = options.follow_dlopen;
  // The follower first: a dlopen completing while the slots are being written is then seen.
  if (follow) MEMPROF_TRY_STATUS(retain_dlopen_follower_locked());
  Result<std::shared_ptr<State>> state = err("not installed");
  try {
    state = install_got_hook_locked(std::move(symbol), replacement, std::move(options), /*internal=*/false);
  } catch (const std::bad_alloc&) {
    if (follow) release_dlopen_follower_locked();
    throw;
  }
  if (!state.ok()) {
    if (follow) release_dlopen_follower_locked();
    return state.error();
  }
  hook->state_ = std::move(*state);
  return hook;
}

Result<void*> GotHook::find_original(std::string_view symbol) {
  MEMPROF_TRY(objects, loaded_objects());
  return lookup_definition(parse_symbol(symbol), objects);
}

GotHook::GotHook(std::shared_ptr<State> state) : state_(std::move(state)) {}

GotHook::~GotHook() {
  if (state_ == nullptr) return;  // never installed
  if (hooks_frozen()) return;  // the slots keep the replacement, which calls the original
  HookChange change;
  std::lock_guard lock(got_registry_mutex());
  auto& hooks = active_got_hooks();
  hooks.erase(std::find(hooks.begin(), hooks.end(), state_));
  // Out of memory (a process at its ulimit -v) must not end the process from a destructor: the
  // slots then keep the replacement, which stays valid (the agent is never unloaded).
  try {
    unpatch_all_locked(*state_);
    if (state_->options.follow_dlopen) release_dlopen_follower_locked();
  } catch (const std::bad_alloc&) {
  }
}

void* GotHook::original() const { return state_->original; }
void* GotHook::replacement() const { return state_->replacement; }
const std::string& GotHook::symbol() const { return state_->symbol; }

size_t GotHook::patched_slots() const {
  HookChange change;  // a read, but under the lock a fork must not copy held
  std::lock_guard lock(got_registry_mutex());
  return state_->slots.size();
}

std::vector<GotSlot> GotHook::slots() const {
  HookChange change;  // a read, but under the lock a fork must not copy held
  std::lock_guard lock(got_registry_mutex());
  std::vector<GotSlot> result;
  for (const auto& s : state_->slots) result.push_back(s.slot);
  return result;
}

std::vector<std::string> GotHook::follow_errors() const {
  HookChange change;  // a read, but under the lock a fork must not copy held
  std::lock_guard lock(got_registry_mutex());
  return state_->follow_errors;
}

}  // namespace memprof::hook
