// Making a dump line valid UTF-8. Ruby writes some strings of a dump (file names, method and
// class names) as the raw bytes it holds, which need not be UTF-8; simdjson, rightly, rejects
// such a line. The reader repairs the line instead of losing the object.
#pragma once

#include <string>
#include <string_view>

namespace memprof::heap {

// Appends `text` to `out` with every byte that is not part of a well-formed UTF-8 sequence
// (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF) replaced by U+FFFD.
void append_repaired_utf8(std::string_view text, std::string& out);

}  // namespace memprof::heap
