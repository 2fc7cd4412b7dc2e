// GOT hooks in Debian's libruby (BIND_NOW, full RELRO: its GOT is read-only after start-up),
// the real target of the Ruby profiler. libruby allocates its objects through its own PLT slot
// for rb_wb_protected_newobj_of, so a hook there sees every Array a Ruby loop creates.
#include <sys/mman.h>

#include <atomic>

#include <gtest/gtest.h>

#include "core/hook/got_hook.h"
#include "test_support.h"

// Last: ruby.h defines macros that break fmt and the standard headers included after it.
#include <ruby.h>

namespace memprof::hook {
namespace {

std::atomic<long> allocations{0};

// Ruby 3.1's allocation entry points (internal/gc.h); libruby calls them through its own PLT.
using NewObj = VALUE(VALUE klass, VALUE flags, size_t size);
using EcNewObj = VALUE(void* ec, VALUE klass, VALUE flags, size_t size);
NewObj* real_protected = nullptr;
NewObj* real_unprotected = nullptr;
EcNewObj* real_ec_protected = nullptr;
VALUE counting_protected(VALUE klass, VALUE flags, size_t size) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  return real_protected(klass, flags, size);
}
VALUE counting_unprotected(VALUE klass, VALUE flags, size_t size) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  return real_unprotected(klass, flags, size);
}
VALUE counting_ec_protected(void* ec, VALUE klass, VALUE flags, size_t size) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  return real_ec_protected(ec, klass, flags, size);
}

long total_allocated() { return static_cast<long>(rb_gc_stat(ID2SYM(rb_intern("total_allocated_objects")))); }

Result<std::unique_ptr<GotHook>> hook(const char* symbol, void* replacement, void* original_out) {
  return GotHook::install(symbol, replacement, {.publish_original = static_cast<void**>(original_out)});
}

TEST(RubyGot, SeesEveryArrayAllocatedInLibruby) {
  RUBY_INIT_STACK;
  ruby_init();
  // Compiled before the hook, so the measured call allocates nothing but its arrays.
  rb_eval_string("def memprof_make_arrays(n) i = 0; a = nil; while i < n; a = [i]; i += 1; end; nil; end");

  std::vector<void**> slots = testing::got_slots_from_file("libruby-3.1.so.3.1", "rb_ec_wb_protected_newobj_of");
  ASSERT_EQ(slots.size(), 1u);
  EXPECT_EQ(testing::protection_of(slots[0]), PROT_READ);  // RELRO
  void* bound = *slots[0];

  // Warm-up: the first call interns the key and creates the method's call caches (imemo
  // objects allocated inside gc.c, which no GOT hook sees; the Ruby profiler's issue covers them).
  total_allocated();
  rb_funcall(rb_cObject, rb_intern("memprof_make_arrays"), 1, INT2FIX(1));
  long allocated_before = total_allocated();
  {
    auto ec_protected = hook("rb_ec_wb_protected_newobj_of", (void*)&counting_ec_protected, &real_ec_protected);
    auto protected_ = hook("rb_wb_protected_newobj_of", (void*)&counting_protected, &real_protected);
    auto unprotected = hook("rb_wb_unprotected_newobj_of", (void*)&counting_unprotected, &real_unprotected);
    ASSERT_TRUE(ec_protected.ok()) << ec_protected.message();
    ASSERT_TRUE(protected_.ok()) << protected_.message();
    ASSERT_TRUE(unprotected.ok()) << unprotected.message();
    EXPECT_EQ((*ec_protected)->original(), bound);  // BIND_NOW: the slot held the resolved function
    EXPECT_EQ(*slots[0], reinterpret_cast<void*>(&counting_ec_protected));
    EXPECT_EQ(testing::protection_of(slots[0]), PROT_READ);
    rb_funcall(rb_cObject, rb_intern("memprof_make_arrays"), 1, INT2FIX(1000));
  }
  long allocated = total_allocated() - allocated_before;

  EXPECT_EQ(allocated, 1000);  // Ruby's own count
  EXPECT_EQ(allocations.load(), 1000);  // nothing missed, nothing counted twice
  EXPECT_EQ(*slots[0], bound);
  EXPECT_EQ(testing::protection_of(slots[0]), PROT_READ);
  ruby_cleanup(0);
}

}  // namespace
}  // namespace memprof::hook
