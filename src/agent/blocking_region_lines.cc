#include "agent/blocking_region_lines.h"

#include <dlfcn.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <utility>

#include "agent/ruby_caller.h"
#include "agent/ruby_runtime.h"
#include "agent/ruby_vm_end_watch.h"
#include "core/hook/call_site_hook.h"
#include "core/hook/got_hook.h"

namespace memprof::agent {
namespace {

struct Record {
  bool set = false;
  uint32_t line = 0;
  char file[240] = {};  // the end of a longer path: "...app/models/user.rb"
};

thread_local Record t_record;

// The line at the thread's last letting go of the GVL in Ruby's scheduler, while it waits.
struct SchedulerWait {
  bool waiting = false;
  Record record;
};
thread_local SchedulerWait t_scheduler_wait;

// Ruby's thread event hooks (ruby/thread.h, 3.2 and later).
constexpr uint32_t kThreadResumed = 1U << 2;    // RUBY_INTERNAL_THREAD_EVENT_RESUMED
constexpr uint32_t kThreadSuspended = 1U << 3;  // RUBY_INTERNAL_THREAD_EVENT_SUSPENDED
using ThreadEventCallback = void (*)(uint32_t event, const void* data, void* user_data);
void* (*g_add_thread_hook)(ThreadEventCallback, uint32_t events, void* data) = nullptr;
bool (*g_remove_thread_hook)(void* hook) = nullptr;

// On the thread itself. SUSPENDED: Ruby still holds the GVL for it (thread_pthread.c of 3.3 and
// 3.4), so its frames cannot move while the line is read, even when it has already marked
// itself as in a blocking region; a dying thread has no frames left (its cfp is NULL). A
// SUSPENDED without its RESUMED (Ruby found an interrupt pending and kept the GVL) leaves the
// line on until the thread's next event.
void on_thread_event(uint32_t event, const void*, void*) {
  SchedulerWait& wait = t_scheduler_wait;
  wait.waiting = false;
  if (event != kThreadSuspended) return;
  wait.record.line = ruby_caller_holding_gvl(wait.record.file, sizeof wait.record.file);
  wait.record.set = wait.record.file[0] != '\0';
  wait.waiting = true;
}

// Every one of them takes at most six integer arguments and returns an integer or a pointer,
// so one forwarder of six integer registers calls any of them as its caller did.
using Entry = uintptr_t (*)(uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t);
constexpr std::array<const char*, 5> kEntries = {"rb_nogvl", "rb_thread_call_without_gvl",
                                                 "rb_thread_call_without_gvl2",
                                                 "rb_thread_io_blocking_region",
                                                 "rb_thread_io_blocking_call"};
std::array<Entry, kEntries.size()> g_real{};

int (*g_has_gvl)() = nullptr;
uintptr_t (*g_ensure)(uintptr_t (*body)(uintptr_t), uintptr_t, uintptr_t (*ensure)(uintptr_t), uintptr_t) = nullptr;

struct Call {
  Entry real;
  std::array<uintptr_t, 6> arguments;
  Record outer;  // the record before this region, put back when it ends
};

uintptr_t call_real(uintptr_t data) {
  auto* call = reinterpret_cast<Call*>(data);
  const auto& a = call->arguments;
  return call->real(a[0], a[1], a[2], a[3], a[4], a[5]);
}

uintptr_t put_back(uintptr_t data) {
  t_record = reinterpret_cast<Call*>(data)->outer;
  return 0;
}

uintptr_t enter_region(Entry real, std::array<uintptr_t, 6> arguments) {
  // Called as Ruby requires, with the GVL: the line is read now, while the frames cannot move.
  // (Called otherwise -- a misuse Ruby itself would trip on -- or after the VM's end, whose
  // freed thread would answer the GVL question, it is only passed on.)
  if (ruby_vm_ended() || g_has_gvl() == 0)
    return real(arguments[0], arguments[1], arguments[2], arguments[3], arguments[4], arguments[5]);
  Record& record = t_record;
  Call call{real, arguments, record};
  record.line = ruby_caller_holding_gvl(record.file, sizeof record.file);
  record.set = record.file[0] != '\0';
  return g_ensure(call_real, reinterpret_cast<uintptr_t>(&call), put_back, reinterpret_cast<uintptr_t>(&call));
}

template <size_t I>
uintptr_t entry_hook(uintptr_t a, uintptr_t b, uintptr_t c, uintptr_t d, uintptr_t e, uintptr_t f) {
  return enter_region(__atomic_load_n(&g_real[I], __ATOMIC_ACQUIRE), {a, b, c, d, e, f});
}

template <size_t... I>
constexpr std::array<Entry, sizeof...(I)> entry_hooks(std::index_sequence<I...>) {
  return {&entry_hook<I>...};
}
constexpr auto kEntryHooks = entry_hooks(std::make_index_sequence<kEntries.size()>());

}  // namespace

Result<std::unique_ptr<BlockingRegionLines>> BlockingRegionLines::install() {
  resolve(g_has_gvl, "ruby_thread_has_gvl_p");
  resolve(g_ensure, "rb_ensure");
  if (g_has_gvl == nullptr || g_ensure == nullptr) return err("this Ruby has no ruby_thread_has_gvl_p or rb_ensure");
  std::unique_ptr<BlockingRegionLines> lines(new BlockingRegionLines());
  for (size_t i = 0; i < kEntries.size(); ++i) {
    if (!hook::GotHook::find_original(kEntries[i]).ok()) continue;  // not in this Ruby
    hook::GotHookOptions options;
    options.allow_no_slots = true;  // a ruby with libruby linked in: its C extensions, loaded later
    options.publish_original = reinterpret_cast<void**>(&g_real[i]);
    auto hooked = hook::GotHook::install(kEntries[i], reinterpret_cast<void*>(kEntryHooks[i]), std::move(options));
    if (!hooked.ok()) return err("hooking {}: {}", kEntries[i], hooked.message());
    lines->hooks_.push_back(std::move(*hooked));
  }
  if (lines->hooks_.empty()) return err("this Ruby has none of {}", kEntries[0]);
  MEMPROF_TRY_STATUS(lines->redirect_direct_calls());
  return lines;
}

// With libruby linked into the executable, Ruby's own IO enters its regions by direct calls
// between the executable's functions, past any GOT: those `call rel32` sites are redirected to
// the same hooks (core/hook/call_site_hook.h). They are found by decoding the executable once
// (a first `trace -p --ruby-caller` of Ruby 3.4 static started in ~280 ms instead of ~270) and
// kept: its code does not change while the process lives.
Status BlockingRegionLines::redirect_direct_calls() {
  const void* first = nullptr;
  for (Entry real : g_real)
    if (real != nullptr) first = reinterpret_cast<const void*>(real);
  Dl_info info{};
  if (first == nullptr || ::dladdr(first, &info) == 0 || info.dli_fname == nullptr ||
      std::string_view(info.dli_fname).find("libruby") != std::string_view::npos)
    return ok_status();  // a shared libruby: its calls between its functions go through its GOT
  static std::mutex mutex;
  static std::optional<Result<std::map<const void*, std::vector<uintptr_t>>>> found;
  std::lock_guard lock(mutex);
  if (!found) {
    std::vector<const void*> targets;
    for (Entry real : g_real)
      if (real != nullptr) targets.push_back(reinterpret_cast<const void*>(real));
    found.emplace(hook::CallSiteHook::find_sites(targets, first));
  }
  if (!found->ok()) return err("finding the calls into blocking regions: {}", found->message());
  for (size_t i = 0; i < kEntries.size(); ++i) {
    if (g_real[i] == nullptr) continue;
    auto sites = found->value().find(reinterpret_cast<const void*>(g_real[i]));
    if (sites == found->value().end() || sites->second.empty()) continue;
    auto hooked = hook::CallSiteHook::install_at(reinterpret_cast<void*>(g_real[i]),
                                                 reinterpret_cast<void*>(kEntryHooks[i]), sites->second);
    if (!hooked.ok()) return err("redirecting the calls of {}: {}", kEntries[i], hooked.message());
    call_site_hooks_.push_back(std::move(*hooked));
  }
  return ok_status();
}

void BlockingRegionLines::follow_scheduler(const RubyApi& api) {
  if (scheduler_tried_) return;
  if (api.object_class == nullptr || *api.object_class == 0) return;  // not booted yet: later
  scheduler_tried_ = true;
  // Only where SUSPENDED is known to come before the GVL is handed over.
  if (api.api_version == nullptr || api.api_version[0] != 3 || api.api_version[1] < 3 || api.api_version[1] > 4)
    return;
  resolve(g_add_thread_hook, "rb_internal_thread_add_event_hook");
  resolve(g_remove_thread_hook, "rb_internal_thread_remove_event_hook");
  if (g_add_thread_hook == nullptr || g_remove_thread_hook == nullptr) return;
  // Called here, on the agent's thread, not as a job on a Ruby thread: the two only take Ruby's
  // hook-list lock and allocate or free one node with ruby_xmalloc/ruby_xfree, which on 3.3 and
  // 3.4 never collect on a thread Ruby did not make (gc.c checks ruby_native_thread_p). While
  // the VM cannot start to end.
  VmInUse vm;
  if (!vm.ok()) return;
  scheduler_hook_ = g_add_thread_hook(&on_thread_event, kThreadSuspended | kThreadResumed, nullptr);
  scheduler_hook_process_ = ::getpid();
}

// The hook goes first: Ruby's list lock waits for every callback running, and the GOT slots
// are restored after. Once the VM has ended there is no thread left to call it, nor a Ruby to
// free its node. In a forked child (ending the sessions it inherited) the hook stays: a thread
// of the parent may have held that lock for reading at the fork (Ruby takes it for every
// thread event, with or without the GVL), and taking it for writing would wait forever; the
// callback it leaves is harmless (the agent is never unloaded).
BlockingRegionLines::~BlockingRegionLines() {
  if (scheduler_hook_ == nullptr || scheduler_hook_process_ != ::getpid()) return;
  VmInUse vm;
  if (vm.ok()) g_remove_thread_hook(scheduler_hook_);
}

bool in_scheduler_wait() noexcept { return t_scheduler_wait.waiting; }

bool blocking_region_location(const char** path, uint32_t* line) noexcept {
  const Record* record = &t_record;
  if (!record->set && t_scheduler_wait.waiting) record = &t_scheduler_wait.record;
  if (!record->set) return false;
  *path = record->file;
  *line = record->line;
  return true;
}

}  // namespace memprof::agent
