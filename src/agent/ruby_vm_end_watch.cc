#include "agent/ruby_vm_end_watch.h"

#include <sched.h>

#include <atomic>

#include "agent/ruby_runtime.h"

namespace memprof::agent {
namespace {

// Sequentially consistent, both: a VmInUse counts itself then looks for the end, the end is
// marked then waits for the count, so that one of the two always sees the other.
std::atomic<bool> g_vm_ended{false};
std::atomic<int> g_vm_users{0};
int (*g_original_destruct)(void* vm) = nullptr;  // written before the jump, never cleared

int on_vm_destruct(void* vm) {
  g_vm_ended.store(true, std::memory_order_seq_cst);
  // A user holds it for the microseconds of a job's trigger; the bound is for a user that can
  // never let go (a thread of the parent, in a forked child that missed the reset).
  for (int spins = 0; spins < 100000 && g_vm_users.load(std::memory_order_seq_cst) != 0; ++spins) ::sched_yield();
  return g_original_destruct(vm);
}

// The watch every holder shares; only the agent's thread reads or writes it.
std::weak_ptr<RubyVmEndWatch>& shared_watch() {
  static auto* watch = new std::weak_ptr<RubyVmEndWatch>;
  return *watch;
}

}  // namespace

Result<std::shared_ptr<RubyVmEndWatch>> RubyVmEndWatch::acquire() {
  if (auto existing = shared_watch().lock()) return existing;
  int (*destruct)(void*) = nullptr;
  resolve(destruct, "ruby_vm_destruct");
  if (destruct == nullptr) return err("ruby_vm_destruct not found: cannot tell when Ruby's VM ends");
  MEMPROF_TRY(hook, hook::EntryHook::install(reinterpret_cast<void*>(destruct), reinterpret_cast<void*>(&on_vm_destruct),
                                             {.publish_original = reinterpret_cast<void**>(&g_original_destruct)}));
  std::shared_ptr<RubyVmEndWatch> watch(new RubyVmEndWatch(std::move(hook)));
  shared_watch() = watch;
  return watch;
}

Status RubyVmEndWatch::hold(std::shared_ptr<RubyVmEndWatch>& holder) {
  if (holder != nullptr) return ok_status();
  MEMPROF_TRY(watch, acquire());
  holder = std::move(watch);
  return ok_status();
}

bool ruby_vm_ended() noexcept { return g_vm_ended.load(std::memory_order_acquire); }

VmInUse::VmInUse() noexcept {
  g_vm_users.fetch_add(1, std::memory_order_seq_cst);
  ok_ = !g_vm_ended.load(std::memory_order_seq_cst);
}

VmInUse::~VmInUse() { g_vm_users.fetch_sub(1, std::memory_order_seq_cst); }

void forget_vm_users_in_child() noexcept { g_vm_users.store(0, std::memory_order_relaxed); }

}  // namespace memprof::agent
