#include "native/engine.h"

#include <algorithm>

namespace memprof::native {

Result<std::unique_ptr<Engine>> Engine::create(const Attribution& attribution) {
  if (attribution.stack_depth < 1 || attribution.stack_depth > kMaxStackDepth)
    return err("native: a stack depth is 1 to {} frames, not {}", kMaxStackDepth, attribution.stack_depth);
  std::unique_ptr<Engine> engine(new Engine);
  engine->attribution_ = attribution;
  if (attribution.stack_depth > 1) {
    MEMPROF_TRY(unwinder, StackUnwinder::open());
    engine->unwinder_ = unwinder;
  } else if (auto unwinder = StackUnwinder::open_any(); unwinder.ok()) {
    engine->unwinder_ = *unwinder;  // for the allocations made inside the runtime only
  }
  engine->runtime_ = RuntimeCode::find();
  if (attribution.ruby_location != nullptr) {
    MEMPROF_TRY(files, RubyFileTable::create());
    engine->ruby_files_ = std::move(files);
  }
  MEMPROF_TRY(sites, CallSiteTable::create());
  engine->sites_ = std::move(sites);
  return engine;
}

uint32_t Engine::frames_of(uintptr_t caller, uintptr_t* out) const noexcept {
  const bool in_runtime = runtime_.contains(caller);
  if (!unwinder_ || (attribution_.stack_depth == 1 && !in_runtime)) {
    out[0] = caller;
    return 1;
  }
  // Inside the runtime: the stack asked for starts at the first frame outside it. A few runtime
  // frames first (strdup: 1, asprintf: 3); more only when they were all the runtime's, so that
  // the walk seldom goes further up than the site (into code without unwind tables, a JIT's).
  uintptr_t frames[StackUnwinder::kMaxFrames];
  uint32_t depth = 0;
  uint32_t first = 0;
  for (uint32_t runtime_frames : {in_runtime ? 4u : 0u, StackUnwinder::kMaxFrames - kMaxStackDepth}) {
    const uint32_t wanted = attribution_.stack_depth + runtime_frames;
    depth = unwinder_->capture(caller, frames, wanted);
    for (first = 0; in_runtime && first < depth && runtime_.contains(frames[first]);) ++first;
    if (first < depth || depth < wanted) break;
  }
  if (first == depth) first = 0;  // runtime frames all the way (its own threads): they are the site
  depth = std::min(depth - first, attribution_.stack_depth);
  std::copy_n(frames + first, depth, out);
  return depth;
}

uint32_t Engine::site_of(ThreadHookState& thread, uintptr_t caller) noexcept {
  SiteKey key;
  key.depth = frames_of(caller, key.frames);
  const char* path;
  uint32_t line;
  if (ruby_files_ && attribution_.ruby_location(&path, &line)) {
    key.ruby_file = ruby_files_->intern(path, thread.last_ruby_file);
    key.ruby_line = line;
  }
  return sites_->intern(key);
}

void Engine::account_release(const BlockRecord& record, bool temporary) noexcept {
  if (record.site == kInternalSite) return;
  SiteCounters& row = sites_->row(record.site);
  row.frees.fetch_add(1, std::memory_order_relaxed);
  row.freed_bytes.fetch_add(record.size, std::memory_order_relaxed);
  if (temporary) row.temporaries.fetch_add(1, std::memory_order_relaxed);
  peak_.subtract(record.size);
}

void Engine::on_allocation(ThreadHookState& thread, void* block, uint64_t size, uintptr_t caller) noexcept {
  const auto address = reinterpret_cast<uintptr_t>(block);
  const uint32_t site = thread.internal ? kInternalSite : site_of(thread, caller);
  // Counted before the block can be found (and freed by another thread), so that a reader
  // never sees more frees than allocations at a site.
  SiteCounters* row = nullptr;
  if (site != kInternalSite) {
    row = &sites_->row(site);
    row->allocations.fetch_add(1, std::memory_order_relaxed);
    row->allocated_bytes.fetch_add(size, std::memory_order_relaxed);
  }
  BlockRecord replaced;
  switch (blocks_.insert(address, size, site, &replaced)) {
    case InsertOutcome::kInserted:
      break;
    case InsertOutcome::kReplaced:
      missed_frees_.fetch_add(1, std::memory_order_relaxed);
      account_release(replaced, false);
      break;
    case InsertOutcome::kDropped:
      dropped_.fetch_add(1, std::memory_order_relaxed);
      if (row != nullptr) {
        row->allocations.fetch_sub(1, std::memory_order_relaxed);
        row->allocated_bytes.fetch_sub(size, std::memory_order_relaxed);
      }
      return;
  }
  if (row == nullptr) return;
  thread.last_allocation = address;
  peak_.add(size, *sites_);
}

void Engine::on_free(ThreadHookState& thread, void* block) noexcept {
  const auto address = reinterpret_cast<uintptr_t>(block);
  BlockRecord record;
  if (blocks_.take(address, &record))
    account_release(record, thread.last_allocation == address);
  else if (!thread.internal)
    unknown_frees_.fetch_add(1, std::memory_order_relaxed);
  if (thread.last_allocation == address) thread.last_allocation = 0;
}

void Engine::on_unmap(ThreadHookState& thread, void* address, uint64_t length) noexcept {
  const auto start = reinterpret_cast<uintptr_t>(address);
  BlockRecord record;
  if (length == 0 || !blocks_.take(start, &record)) return;
  if (length >= record.size) {
    account_release(record, thread.last_allocation == start);
  } else {
    // The head goes, the tail stays live under its own start (a later munmap finds it there).
    BlockRecord ignored;
    (void)blocks_.insert(start + length, record.size - length, record.site, &ignored);
    if (record.site != kInternalSite) {
      sites_->row(record.site).freed_bytes.fetch_add(length, std::memory_order_relaxed);
      peak_.subtract(length);
    }
  }
  if (thread.last_allocation == start) thread.last_allocation = 0;
}

bool Engine::take_for_resize(void* old_block, BlockRecord* previous) noexcept {
  return old_block != nullptr && blocks_.take(reinterpret_cast<uintptr_t>(old_block), previous);
}

void Engine::on_resized(ThreadHookState& thread, void* old_block, const BlockRecord* previous,
                        void* new_block, uint64_t requested, uintptr_t caller) noexcept {
  const auto old_address = reinterpret_cast<uintptr_t>(old_block);
  const bool freed_old = old_block != nullptr && (new_block != nullptr || requested == 0);
  if (old_block != nullptr && !freed_old) {
    // Failed: the old block is still the caller's. Put it back as it was.
    BlockRecord ignored;
    if (previous != nullptr) (void)blocks_.insert(old_address, previous->size, previous->site, &ignored);
    return;
  }
  if (freed_old) {
    if (previous != nullptr)
      account_release(*previous, false);
    else if (!thread.internal)
      unknown_frees_.fetch_add(1, std::memory_order_relaxed);
    if (thread.last_allocation == old_address) thread.last_allocation = 0;
  }
  if (new_block != nullptr) on_allocation(thread, new_block, requested, caller);
}

}  // namespace memprof::native
