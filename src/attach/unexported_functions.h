// Functions a process's objects define without exporting them: a static function, or one that
// visibility hides. `trace -x NAME` hooks exported functions (the dynamic symbol tables), and a
// pattern that matched none of those is told about these, instead of "no loaded object
// defines" a function that is there.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace memprof::attach {

// "name (object file name)" of up to `limit` functions matching the glob `pattern` that the
// objects of `pid` define in their full symbol tables only (an object stripped of its .symtab,
// without a debug file, shows none).
std::vector<std::string> unexported_functions(pid_t pid, const std::string& pattern, size_t limit);

}  // namespace memprof::attach
