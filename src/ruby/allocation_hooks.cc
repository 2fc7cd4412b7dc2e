#include "ruby/allocation_hooks.h"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <mutex>
#include <new>
#include <optional>
#include <string_view>

#include "ruby/tracker.h"

#include <ruby/thread.h>

namespace memprof::ruby {

namespace {

using Forwarded = VALUE (*)(uintptr_t, uintptr_t, uintptr_t, uintptr_t);

constexpr std::array<const char*, 8> kHookedSymbols = {
    "rb_wb_protected_newobj_of", "rb_wb_unprotected_newobj_of", "rb_ec_wb_protected_newobj_of",
    "rb_newobj_of",              "rb_data_object_wrap",         "rb_data_object_zalloc",
    "rb_data_typed_object_wrap", "rb_data_typed_object_zalloc",
};

// Written before the slot that leads to a forwarder is patched and never cleared, so a call
// racing with uninstall still reaches the real function.
std::array<Forwarded, kHookedSymbols.size()> g_originals{};
Tracker* g_tracker = nullptr;
rb_alloc_func_t g_original_allocator = nullptr;

template <size_t I>
VALUE forward_and_record(uintptr_t a, uintptr_t b, uintptr_t c, uintptr_t d) {
  VALUE object = g_originals[I](a, b, c, d);
  g_tracker->record(object);
  return object;
}

template <size_t... I>
constexpr std::array<Forwarded, sizeof...(I)> make_forwarders(std::index_sequence<I...>) {
  return {&forward_and_record<I>...};
}
constexpr auto kForwarders = make_forwarders(std::make_index_sequence<kHookedSymbols.size()>());

VALUE allocate_and_record(VALUE klass) {
  VALUE object = g_original_allocator(klass);
  g_tracker->record(object);
  return object;
}

bool no_slot_error(const Error& error) {
  return std::string_view(error.message).starts_with("no GOT slot");
}

}  // namespace

Result<std::string> libruby_path() {
  MEMPROF_TRY(address, hook::GotHook::find_original("rb_wb_protected_newobj_of"));
  Dl_info info{};
  if (dladdr(address, &info) == 0 || info.dli_fname == nullptr)
    return err("rb_wb_protected_newobj_of at {} is in no loaded object", address);
  return std::string(info.dli_fname);
}

void AllocationHooks::prepare_without_gvl() {
  if (g_original_allocator == nullptr) g_original_allocator = rb_get_alloc_func(rb_cBasicObject);
  if (g_original_allocator == nullptr) return;
  rb_thread_call_without_gvl(
      [](void*) -> void* {
        // An exception must not unwind through Ruby's frames (it would skip taking the GVL
        // back): out of memory here leaves the originals to install(), which says so.
        try {
          resolve_originals();
          (void)direct_call_sites();
        } catch (const std::bad_alloc&) {
        }
        return nullptr;
      },
      nullptr, RUBY_UBF_IO, nullptr);
}

// Both run without the GVL from prepare_without_gvl(), maybe while another thread starts.
static std::mutex g_prepare_mutex;

void AllocationHooks::resolve_originals() {
  std::lock_guard lock(g_prepare_mutex);
  for (size_t i = 0; i < kHookedSymbols.size(); ++i) {
    if (g_originals[i] != nullptr) continue;
    auto original = hook::GotHook::find_original(kHookedSymbols[i]);
    if (original.ok()) g_originals[i] = reinterpret_cast<Forwarded>(*original);
  }
}

Result<std::unique_ptr<AllocationHooks>> AllocationHooks::install(Tracker& tracker) {
  MEMPROF_TRY(path, libruby_path());
  bool linked_in = std::string_view(path).find("libruby") == std::string_view::npos;
  g_tracker = &tracker;
  // Set once: later sessions find our recording allocator there only while one runs.
  if (g_original_allocator == nullptr) g_original_allocator = rb_get_alloc_func(rb_cBasicObject);
  if (g_original_allocator == nullptr) return err("BasicObject has no allocator");
  std::unique_ptr<AllocationHooks> hooks(new AllocationHooks());
  // Our own extension must be patched too: objects it creates would otherwise be unseen
  // allocations, which the liveness scheme does not allow. The loader and the vdso are never
  // patched by the hook engine. With the VM linked into the executable, the GOT slots are the C
  // extensions', which may all be loaded later.
  hook::GotHookOptions options;
  options.object_filter = [](std::string_view) { return true; };
  options.allow_no_slots = linked_in;
  resolve_originals();
  for (size_t i = 0; i < kHookedSymbols.size(); ++i) {
    if (g_originals[i] == nullptr) continue;  // not exported by this Ruby version
    auto installed = hook::GotHook::install(kHookedSymbols[i],
                                            reinterpret_cast<void*>(kForwarders[i]), options);
    if (!installed.ok()) {
      if (no_slot_error(installed.error())) continue;
      return err("hooking {}: {}", kHookedSymbols[i], installed.message());
    }
    hooks->got_hooks_.push_back(std::move(*installed));
  }
  if (linked_in) {
    MEMPROF_TRY_STATUS(hooks->redirect_direct_calls(path));
  } else if (hooks->got_hooks_.empty()) {
    return err("no GOT slot for Ruby's allocation functions in any loaded object");
  }
  MEMPROF_TRY_STATUS(hooks->swap_allocators());
  return hooks;
}

// The allocation functions' call sites in the object that defines them, found with one
// decoding pass the first time and kept: code does not change while the process lives, and
// decoding a ruby executable takes ~100 ms, too slow for every start.
Result<const AllocationHooks::CallSites*> AllocationHooks::direct_call_sites() {
  std::lock_guard lock(g_prepare_mutex);
  static std::optional<Result<CallSites>> found;
  if (!found) {
    std::vector<const void*> targets;
    for (Forwarded original : g_originals)
      if (original != nullptr) targets.push_back(reinterpret_cast<const void*>(original));
    // The instance allocator as Ruby set it up (install() reads it before swapping).
    targets.push_back(reinterpret_cast<const void*>(g_original_allocator));
    found.emplace(hook::CallSiteHook::find_sites(targets, targets.front()));
  }
  if (!found->ok()) return found->error();
  return &found->value();
}

// A ruby with libruby linked in calls its allocation functions directly, not through a GOT:
// each `call rel32` site in the executable's code is redirected to the same forwarder (the
// caller-side trampoline of the 2009 tool). Calls through pointers would need entry hooks; the
// coverage audit (tests/ruby/robustness_test.rb) shows that every allocation is seen without.
Status AllocationHooks::redirect_direct_calls(const std::string& executable) {
  MEMPROF_TRY(sites, direct_call_sites());
  for (size_t i = 0; i < kHookedSymbols.size(); ++i) {
    if (g_originals[i] == nullptr) continue;
    auto at = sites->find(reinterpret_cast<const void*>(g_originals[i]));
    if (at == sites->end() || at->second.empty()) continue;  // called from nowhere in the VM
    auto hook = hook::CallSiteHook::install_at(reinterpret_cast<void*>(g_originals[i]),
                                               reinterpret_cast<void*>(kForwarders[i]),
                                               at->second);
    if (!hook.ok())
      return err("redirecting the calls of {} in {}: {}", kHookedSymbols[i], executable,
                 hook.message());
    call_site_hooks_.push_back(std::move(*hook));
  }
  if (call_site_hooks_.empty())
    return err("no call to Ruby's allocation functions found in {}", executable);
  return ok_status();
}

namespace {

// Plain (non-singleton, visible) classes in the heap, collected without allocating.
int collect_classes(void* start, void* end, size_t stride, void* out) {
  auto& classes = *static_cast<std::vector<VALUE>*>(out);
  for (auto p = reinterpret_cast<uintptr_t>(start); p < reinterpret_cast<uintptr_t>(end);
       p += stride) {
    const auto* basic = reinterpret_cast<const struct RBasic*>(p);
    if ((basic->flags & RUBY_T_MASK) == RUBY_T_CLASS && basic->klass != 0 &&
        !(basic->flags & RUBY_FL_SINGLETON))
      classes.push_back(static_cast<VALUE>(p));
  }
  return 0;
}

}  // namespace

namespace {

// rb_class_superclass raises for an uninitialized class (Class.allocate); such a class has
// no superclass to inherit an allocator from. A raise must not unwind through install().
VALUE superclass_or_nil(VALUE klass) {
  int state = 0;
  VALUE super = rb_protect([](VALUE k) { return rb_class_superclass(k); }, klass, &state);
  if (state != 0) {
    rb_set_errinfo(Qnil);
    return Qnil;
  }
  return super;
}

// Every plain class in the heap, superclasses before subclasses. No Ruby object is allocated.
std::vector<VALUE> classes_from_the_top() {
  std::vector<VALUE> classes;
  rb_objspace_each_objects(&collect_classes, &classes);
  std::vector<std::pair<size_t, VALUE>> by_depth;
  by_depth.reserve(classes.size());
  for (VALUE klass : classes) {
    size_t depth = 0;
    for (VALUE super = superclass_or_nil(klass); RB_TYPE_P(super, RUBY_T_CLASS);
         super = superclass_or_nil(super))
      ++depth;
    by_depth.emplace_back(depth, klass);
  }
  std::stable_sort(by_depth.begin(), by_depth.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < by_depth.size(); ++i) classes[i] = by_depth[i].second;
  return classes;
}

// Replaces `from` by `to` in every class whose own allocator field holds `from`. Visiting
// superclasses first makes "resolves to `from`" mean "holds `from` itself": its ancestors have
// been switched already. (Ruby copies the superclass's own allocator into a new class, so
// many classes hold a copy, not just BasicObject.)
void switch_allocators(rb_alloc_func_t from, rb_alloc_func_t to) {
  if (rb_get_alloc_func(rb_cBasicObject) == from) rb_define_alloc_func(rb_cBasicObject, to);
  for (VALUE klass : classes_from_the_top())
    if (rb_get_alloc_func(klass) == from) rb_define_alloc_func(klass, to);
}

}  // namespace

Status AllocationHooks::swap_allocators() {
  switch_allocators(g_original_allocator, &allocate_and_record);
  allocators_swapped_ = true;
  return hook_direct_instance_calls();
}

// Sites that call the instance allocator directly, bypassing the class's allocator pointer
// (Exception's allocator tail-calls it) go through the same recording allocator. The sites
// come from direct_call_sites(), which decodes the object once per process.
Status AllocationHooks::hook_direct_instance_calls() {
  MEMPROF_TRY(sites, direct_call_sites());
  auto at = sites->find(reinterpret_cast<const void*>(g_original_allocator));
  if (at == sites->end() || at->second.empty()) return ok_status();
  auto direct = hook::CallSiteHook::install_at(reinterpret_cast<void*>(g_original_allocator),
                                               reinterpret_cast<void*>(&allocate_and_record),
                                               at->second);
  if (!direct.ok())
    return err("hooking direct calls of the instance allocator: {}", direct.message());
  call_site_hooks_.push_back(std::move(*direct));
  return ok_status();
}

void AllocationHooks::restore_allocators() {
  // Also restores classes created while tracking, which copied our allocator.
  if (allocators_swapped_) switch_allocators(&allocate_and_record, g_original_allocator);
  allocators_swapped_ = false;
}

AllocationHooks::~AllocationHooks() {
  restore_allocators();
  got_hooks_.clear();        // each GotHook restores its slots' exact bytes
  call_site_hooks_.clear();  // and each CallSiteHook its sites' displacements
}

size_t AllocationHooks::patched_call_sites() const {
  size_t sites = 0;
  for (const auto& hook : call_site_hooks_) sites += hook->sites().size();
  return sites;
}

size_t AllocationHooks::patched_slots() const {
  size_t slots = 0;
  for (const auto& hook : got_hooks_) slots += hook->patched_slots();
  return slots;
}

}  // namespace memprof::ruby
