#include "native/native_session.h"

#include <atomic>

#include "native/engine.h"
#include "native/fork_guard.h"
#include "native/recording_window.h"
#include "native/stack_unwinder.h"

namespace memprof::native {
namespace {

std::atomic<bool> g_session_running{false};

SiteRow read_row(const SiteCounters& counters, const SiteKey& key) {
  SiteRow row;
  row.return_address = counters.return_address.load(std::memory_order_relaxed);
  if (row.return_address != 0) row.frames.assign(key.frames, key.frames + key.depth);
  row.ruby_file = key.ruby_file;
  row.ruby_line = key.ruby_line;
  // Frees first: a block's allocation is counted before its free can be, so this order never
  // shows more frees than allocations while other threads run.
  row.frees = counters.frees.load(std::memory_order_acquire);
  row.freed_bytes = counters.freed_bytes.load(std::memory_order_acquire);
  row.temporaries = counters.temporaries.load(std::memory_order_relaxed);
  row.allocations = counters.allocations.load(std::memory_order_acquire);
  row.allocated_bytes = counters.allocated_bytes.load(std::memory_order_acquire);
  row.live_blocks = row.allocations - row.frees;
  row.live_bytes = row.allocated_bytes - row.freed_bytes;
  row.peak_live_bytes = counters.peak_live_bytes.load(std::memory_order_relaxed);
  return row;
}

}  // namespace

void ignore_this_thread() noexcept { t_hook_state.internal = true; }

void stop_recording_in_child() noexcept { detail::g_engine.store(nullptr, std::memory_order_release); }

Result<std::unique_ptr<NativeSession>> NativeSession::start(NativeOptions options) {
  bool expected = false;
  if (!g_session_running.compare_exchange_strong(expected, true))
    return err("native: a session is already running in this process");
  ScopedInternal internal;  // what start allocates is the engine's, not the program's
  // From here on the session's destructor undoes whatever was done (and clears the flag).
  std::unique_ptr<NativeSession> session(new NativeSession);
  session->options_ = options;
  MEMPROF_TRY(engine, Engine::create(options.attribution));
  session->engine_ = std::move(engine);
  // Without libunwind, blocks made inside libc or libstdc++ find their caller through glibc's
  // backtrace(), ~20x slower (bench/native: strdup+free 0.25 us with libunwind, 2.7 without).
  if (options.attribution.stack_depth == 1 && !StackUnwinder::open().ok())
    session->problems_.push_back(
        "libunwind.so.8 is not installed: a block libc or libstdc++ allocates (strdup, asprintf, fopen, "
        "std::string) is charged to their caller through glibc's slower unwinder, ~2.5 us each (Debian: "
        "apt install libunwind8)");
  register_fork_guard();
  publish_engine(session->engine_.get());
  // On failure the hooks installed so far were removed inside install().
  MEMPROF_TRY(hooks, AllocatorHooks::install(session->problems_, options.track_mmap));
  session->hooks_ = std::move(hooks);
  return session;
}

NativeSession::~NativeSession() {
  ScopedInternal internal;
  hooks_.reset();
  if (engine_ == nullptr || retire_engine(options_.stop_timeout_ms))
    engine_.reset();
  else
    (void)engine_.release();  // never unmap memory a stopped thread may still write
  g_session_running.store(false);
}

NativeSnapshot NativeSession::snapshot() const {
  ScopedInternal internal;  // the rows vector is ours: recorded apart, its free not unknown
  NativeSnapshot out;
  CallSiteTable& sites = engine_->sites();
  uint32_t limit = sites.id_limit();
  out.sites.reserve(limit);
  for (uint32_t id = kOverflowSite; id < limit; ++id) {
    const SiteCounters* counters = sites.ready_row(id);
    if (counters == nullptr) continue;
    SiteRow row = read_row(*counters, sites.key(id));
    if (row.allocations == 0) continue;
    out.totals += row;
    out.sites.push_back(row);
  }
  out.ruby_files = {"", "(other files)"};
  if (const RubyFileTable* files = engine_->ruby_files())
    for (uint32_t id = kOtherRubyFiles + 1; id < files->id_limit(); ++id) out.ruby_files.emplace_back(files->name(id));
  NativeTotals& t = out.totals;
  t.unknown_frees = engine_->unknown_frees();
  t.missed_frees = engine_->missed_frees();
  t.dropped = engine_->dropped();
  t.peak_live_bytes = engine_->peak().peak_bytes();
  t.peak_copy_live_bytes = engine_->peak().copied_at();
  t.block_table_bytes = engine_->blocks().mapped_bytes();
  t.table_entries = engine_->blocks().entries();
  t.engine_bytes = engine_->mapped_bytes() + sizeof(Engine) + claimed_thread_slots() * sizeof(ThreadSlot);
  return out;
}

}  // namespace memprof::native
