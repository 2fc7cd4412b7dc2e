#include "agent/ruby_vm_end_watch.h"

#include <atomic>

#include "agent/ruby_runtime.h"

namespace memprof::agent {
namespace {

std::atomic<bool> g_vm_ended{false};
int (*g_original_destruct)(void* vm) = nullptr;  // written before the jump, never cleared

int on_vm_destruct(void* vm) {
  g_vm_ended.store(true, std::memory_order_seq_cst);
  return g_original_destruct(vm);
}

}  // namespace

Result<std::unique_ptr<RubyVmEndWatch>> RubyVmEndWatch::install() {
  int (*destruct)(void*) = nullptr;
  resolve(destruct, "ruby_vm_destruct");
  if (destruct == nullptr) return err("ruby_vm_destruct not found: cannot tell when Ruby's VM ends");
  MEMPROF_TRY(hook, hook::EntryHook::install(reinterpret_cast<void*>(destruct), reinterpret_cast<void*>(&on_vm_destruct),
                                             {.publish_original = reinterpret_cast<void**>(&g_original_destruct)}));
  return std::unique_ptr<RubyVmEndWatch>(new RubyVmEndWatch(std::move(hook)));
}

bool ruby_vm_ended() noexcept { return g_vm_ended.load(std::memory_order_acquire); }

}  // namespace memprof::agent
