// `memprof trace -x ruby:gc`: each time Ruby's GC holds the process (from gc_enter to
// gc_exit: a whole collection, or one step of incremental marking or lazy sweeping), a
// "ruby:gc" record with the pause as its duration, the GC count and whether a new collection
// started in that step. Through Ruby's internal GC events (a TracePoint made on a Ruby
// thread), so it works on every Ruby memprof supports, with or without USDT probes.
#pragma once

#include <cstdint>
#include <memory>

#include "agent/ruby_runtime.h"
#include "core/hook/entry_hook.h"
#include "core/hook/got_hook.h"
#include "core/util/result.h"

namespace memprof::agent {

class RubyGcEvents {
 public:
  // Records into the tracer's event source `source` (tracer::event_source).
  static Result<std::unique_ptr<RubyGcEvents>> enable(RubyRuntime& ruby, uint32_t source);
  // The same for a Ruby whose VM does not exist yet (a launched `ruby`, held at its first
  // instruction): on from the entry of ruby_options, before RubyGems and the script load.
  static Result<std::unique_ptr<RubyGcEvents>> enable_when_ruby_starts(RubyRuntime& ruby, uint32_t source);
  RubyGcEvents(const RubyGcEvents&) = delete;
  RubyGcEvents& operator=(const RubyGcEvents&) = delete;
  // Disables the TracePoint (a job on a Ruby thread, bounded like every job).
  ~RubyGcEvents();

  // Once after the TracePoint went off by itself: Ruby before 3.3 crashes when a Ractor
  // starts while a GC event hook is on (Ruby bug #18464), so the first Ractor.new turns it off.
  bool stopped_for_ractor();

 private:
  explicit RubyGcEvents(RubyRuntime& ruby) : ruby_(ruby) {}
  // Everything but the enabling; `booted`: Ruby has made its VM.
  static Result<std::unique_ptr<RubyGcEvents>> prepare(RubyRuntime& ruby, uint32_t source, bool booted);
  RubyRuntime& ruby_;
  std::unique_ptr<hook::GotHook> ractor_watch_;  // Ruby's pthread_create, before 3.3
  std::unique_ptr<hook::EntryHook> start_watch_;  // ruby_options, until Ruby starts
};

}  // namespace memprof::agent
