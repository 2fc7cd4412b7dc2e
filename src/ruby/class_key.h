// The class an object is shown under, as an opaque key: its real class, or the object itself
// when it is a singleton class (every `class Foo` makes one, #<Class:Foo>, besides Foo). Read
// from the object's header only, so it is safe inside GC callbacks and under the tracker's lock.
#pragma once

#include <cstdint>

#include "ruby/ruby_headers.h"

namespace memprof::ruby {

// Low bit of a class key: the object is itself a singleton class, shown as #<Class:...>
// rather than as a Class (heap objects are at least 8-byte aligned, so the bit is free).
constexpr uint64_t kSingletonClassKey = 1;

inline uint64_t class_key_of(uintptr_t address, VALUE klass) {
  const auto* basic = reinterpret_cast<const struct RBasic*>(address);
  if ((basic->flags & RUBY_T_MASK) == RUBY_T_CLASS && (basic->flags & RUBY_FL_SINGLETON))
    return address | kSingletonClassKey;
  return rb_class_real(klass);
}

}  // namespace memprof::ruby
