// The builtin types memprof tracks. The free-event-less liveness scheme (see tracker.h) is only
// sound for a type whose every allocation the hooks see: tests/ruby/robustness_test.rb checks
// each of these against Ruby's NEWOBJ event. T_IMEMO and T_NODE (VM internals allocated inside
// gc.c without an exported entry point) and T_ICLASS are not tracked; T_NONE, T_ZOMBIE and
// T_MOVED are slot states, never allocation results.
#pragma once

#include <cstdint>

#include "ruby/ruby_headers.h"

namespace memprof::ruby {

constexpr uint32_t type_bit(int type) { return 1u << type; }

constexpr uint32_t kTrackedTypes =
    type_bit(RUBY_T_OBJECT) | type_bit(RUBY_T_CLASS) | type_bit(RUBY_T_MODULE) |
    type_bit(RUBY_T_FLOAT) | type_bit(RUBY_T_STRING) | type_bit(RUBY_T_REGEXP) |
    type_bit(RUBY_T_ARRAY) | type_bit(RUBY_T_HASH) | type_bit(RUBY_T_STRUCT) |
    type_bit(RUBY_T_BIGNUM) | type_bit(RUBY_T_FILE) | type_bit(RUBY_T_DATA) |
    type_bit(RUBY_T_MATCH) | type_bit(RUBY_T_COMPLEX) | type_bit(RUBY_T_RATIONAL) |
    type_bit(RUBY_T_SYMBOL);

constexpr bool is_tracked_type(int type) { return (kTrackedTypes >> type) & 1u; }

}  // namespace memprof::ruby
