#include "agent/blocking_region_lines.h"

#include <array>
#include <cstring>
#include <utility>

#include "agent/ruby_caller.h"
#include "agent/ruby_runtime.h"
#include "agent/ruby_vm_end_watch.h"
#include "core/hook/got_hook.h"

namespace memprof::agent {
namespace {

struct Record {
  bool set = false;
  uint32_t line = 0;
  char file[240] = {};  // the end of a longer path: "...app/models/user.rb"
};

thread_local Record t_record;

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
  Call call{real, arguments, t_record};
  Record entered;
  entered.line = ruby_caller(entered.file, sizeof entered.file);
  entered.set = entered.file[0] != '\0';
  t_record = entered;
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
  return lines;
}

BlockingRegionLines::~BlockingRegionLines() = default;

bool blocking_region_location(const char** path, uint32_t* line) noexcept {
  const Record& record = t_record;
  if (!record.set) return false;
  *path = record.file;
  *line = record.line;
  return true;
}

}  // namespace memprof::agent
