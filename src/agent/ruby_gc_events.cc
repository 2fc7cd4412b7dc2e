#include "agent/ruby_gc_events.h"

#include <optional>

#include "agent/request_handler.h"
#include "tracer/tick_clock.h"
#include "tracer/trampoline.h"

namespace memprof::agent {
namespace {

// ruby/internal/event.h
constexpr uint32_t kGcStart = 0x400000;
constexpr uint32_t kGcEnter = 0x2000000;
constexpr uint32_t kGcExit = 0x4000000;

struct GcApi {
  RubyValue (*tracepoint_new)(RubyValue, uint32_t, void (*)(RubyValue, void*), void*) = nullptr;
  RubyValue (*tracepoint_enable)(RubyValue) = nullptr;
  RubyValue (*tracepoint_disable)(RubyValue) = nullptr;
  void* (*tracearg_from_tracepoint)(RubyValue) = nullptr;
  uint32_t (*tracearg_event_flag)(void*) = nullptr;
  void (*register_address)(RubyValue*) = nullptr;
  size_t (*gc_count)() = nullptr;  // optional
};

std::optional<GcApi> find_gc_api() {
  GcApi api;
  resolve(api.tracepoint_new, "rb_tracepoint_new");
  resolve(api.tracepoint_enable, "rb_tracepoint_enable");
  resolve(api.tracepoint_disable, "rb_tracepoint_disable");
  resolve(api.tracearg_from_tracepoint, "rb_tracearg_from_tracepoint");
  resolve(api.tracearg_event_flag, "rb_tracearg_event_flag");
  resolve(api.register_address, "rb_gc_register_address");
  resolve(api.gc_count, "rb_gc_count");
  if (!api.tracepoint_new || !api.tracepoint_enable || !api.tracepoint_disable || !api.tracearg_from_tracepoint ||
      !api.tracearg_event_flag || !api.register_address)
    return std::nullopt;
  return api;
}

// The TracePoint and its callback's state. GC runs on one thread at a time (the GVL, or the
// VM barrier with Ractors), so plain variables do; the callback allocates nothing.
GcApi g_gc_api;
RubyValue g_tracepoint = 0;  // registered with Ruby's GC while enabled
uint32_t g_source = 0;
uint64_t g_enter_ticks = 0;
bool g_started = false;

void on_gc_event(RubyValue tracepoint, void*) {
  uint32_t event = g_gc_api.tracearg_event_flag(g_gc_api.tracearg_from_tracepoint(tracepoint));
  if (event & kGcEnter) {
    g_enter_ticks = tracer::now_ticks();
    g_started = false;
  } else if (event & kGcStart) {
    g_started = true;
  } else if (event & kGcExit) {
    tracer::record_event(g_source, g_enter_ticks, tracer::now_ticks(), g_gc_api.gc_count ? g_gc_api.gc_count() : 0,
                         g_started);
  }
}

// Ruby before 3.3 runs GC event hooks on a new Ractor's thread before that thread has a frame,
// and crashes reading it when a GC comes then (Ruby bug #18464, fixed in 3.3). Its
// ruby_single_main_ractor is NULL from the first Ractor.new on.
bool ractors_crash_gc_events(const RubyApi& ruby) {
  if (ruby.api_version[0] > 3 || (ruby.api_version[0] == 3 && ruby.api_version[1] >= 3)) return false;
  const void* const* single_main_ractor = nullptr;
  resolve(single_main_ractor, "ruby_single_main_ractor");
  return single_main_ractor != nullptr && *single_main_ractor == nullptr;
}

}  // namespace

Result<std::unique_ptr<RubyGcEvents>> RubyGcEvents::enable(RubyRuntime& ruby, uint32_t source) {
  auto api = find_gc_api();
  if (!api) return err("ruby:gc: this Ruby lacks the TracePoint C API");
  if (ractors_crash_gc_events(ruby.api()))
    return err("ruby:gc: this process has started Ractors, and Ruby {} crashes when a Ractor starts "
               "while a GC event hook is on (Ruby bug #18464, fixed in 3.3)",
               ruby.version());
  g_gc_api = *api;
  g_source = source;
  MEMPROF_TRY_STATUS(ruby.run(
      [](const RubyApi&) -> Result<std::string> {
        if (g_tracepoint == 0) {
          g_tracepoint = g_gc_api.tracepoint_new(0, kGcStart | kGcEnter | kGcExit, on_gc_event, nullptr);
          g_gc_api.register_address(&g_tracepoint);
        }
        g_gc_api.tracepoint_enable(g_tracepoint);
        return std::string();
      },
      kRubyTimeout));
  return std::unique_ptr<RubyGcEvents>(new RubyGcEvents(ruby));
}

RubyGcEvents::~RubyGcEvents() {
  // The TracePoint object stays registered (and disabled): a later trace enables it again.
  (void)ruby_.run(
      [](const RubyApi&) -> Result<std::string> {
        g_gc_api.tracepoint_disable(g_tracepoint);
        return std::string();
      },
      kRubyTimeout);
}

}  // namespace memprof::agent
