// Typed front ends for GotHook and EntryHook (heaptrack style): the replacement must have the
// hooked function's exact type, checked at compile time, and the original comes back typed.
//
//   static decltype(&::malloc) real_malloc;
//   static void* counting_malloc(size_t n) noexcept { ++calls; return real_malloc(n); }
//   auto hook = MEMPROF_GOT_HOOK(malloc, counting_malloc, &real_malloc);
//   // real_malloc was set before the first slot was written; hook is Result<TypedGotHook<...>>
#pragma once

#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "core/hook/entry_hook.h"
#include "core/hook/got_hook.h"

namespace memprof::hook {

template <typename Fn>
class TypedGotHook {
  static_assert(std::is_function_v<Fn>, "TypedGotHook<Fn>: Fn is a function type, e.g. decltype(malloc)");

 public:
  // `original_out`, when given, receives the original before any slot is written.
  static Result<TypedGotHook> install(std::string symbol, Fn* replacement,
                                      Fn** original_out = nullptr, GotHookOptions options = {}) {
    options.publish_original = reinterpret_cast<void**>(original_out);
    MEMPROF_TRY(hook, GotHook::install(std::move(symbol), reinterpret_cast<void*>(replacement),
                                       std::move(options)));
    return TypedGotHook(std::move(hook));
  }
  Fn* original() const { return reinterpret_cast<Fn*>(hook_->original()); }
  GotHook& untyped() { return *hook_; }
  void reset() { hook_.reset(); }

 private:
  explicit TypedGotHook(std::unique_ptr<GotHook> hook) : hook_(std::move(hook)) {}
  std::unique_ptr<GotHook> hook_;
};

template <typename Fn>
class TypedEntryHook {
  static_assert(std::is_function_v<Fn>, "TypedEntryHook<Fn>: Fn is a function type");

 public:
  static Result<TypedEntryHook> install(Fn* target, Fn* replacement, Fn** original_out = nullptr,
                                        EntryHookOptions options = {}) {
    options.publish_original = reinterpret_cast<void**>(original_out);
    MEMPROF_TRY(hook, EntryHook::install(reinterpret_cast<void*>(target),
                                         reinterpret_cast<void*>(replacement), options));
    return TypedEntryHook(std::move(hook));
  }
  Fn* original() const { return reinterpret_cast<Fn*>(hook_->original()); }
  EntryHook& untyped() { return *hook_; }
  void reset() { hook_.reset(); }

 private:
  explicit TypedEntryHook(std::unique_ptr<EntryHook> hook) : hook_(std::move(hook)) {}
  std::unique_ptr<EntryHook> hook_;
};

}  // namespace memprof::hook

// Hooks `function` (a declared function, named as in the GOT) with `replacement`, which must
// have exactly its type (noexcept included); `original_out` (Fn**) receives the original first.
#define MEMPROF_GOT_HOOK(function, replacement, original_out)                                  \
  ([&] {                                                                                        \
    static_assert(std::is_same_v<decltype(&function), decltype(&replacement)>,                 \
                  "the replacement for " #function " must have exactly its type");             \
    return ::memprof::hook::TypedGotHook<decltype(function)>::install(#function, &replacement, \
                                                                      original_out);          \
  }())

#define MEMPROF_ENTRY_HOOK(function, replacement, original_out)                                 \
  ([&] {                                                                                         \
    static_assert(std::is_same_v<decltype(&function), decltype(&replacement)>,                  \
                  "the replacement for " #function " must have exactly its type");              \
    return ::memprof::hook::TypedEntryHook<decltype(function)>::install(&function, &replacement, \
                                                                        original_out);          \
  }())
