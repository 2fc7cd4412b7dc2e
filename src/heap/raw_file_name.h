// Ruby writes an allocation's "file" into a dump as the bytes it holds, unescaped (objspace's
// dump of every version up to 3.4): a file under a directory named `x"q` makes the line
// `..., "file":"/app/x"q/a.rb", "line":3, ...`, which is not JSON. The reader escapes that one
// value instead of losing the object.
#pragma once

#include <string>
#include <string_view>

namespace memprof::heap {

// When the "file" value of `line` (up to the `", "line":` Ruby writes after it) holds a quote,
// a backslash or a control character, writes the line with them escaped to `out` and returns
// true; otherwise returns false and leaves `out` alone.
bool escape_raw_file_name(std::string_view line, std::string& out);

}  // namespace memprof::heap
