// ltrace's filter expressions, as `memprof trace -x` (and -e) take them: a chain of rules
// [+-]SYMBOL[@LIBRARY], both parts globs (a missing one is '*'), that marks (+) and unmarks (-)
// each defined function in turn; the functions left marked are traced.
//
//   malloc+free             malloc and free, wherever they are defined
//   'sqlite3_*@libsqlite3*'  the sqlite3_ functions libsqlite3 defines
//   '*@MAIN-main'            every function of the program itself but main
//
// LIBRARY matches the file name of the object that defines the function (as -l does; ltrace
// reads the SONAME, which for a library is nearly always its file name), MAIN the program
// itself, and a pattern starting with '/' the object's path. As in ltrace, a first rule
// without a sign adds, and one with '-' removes from every function ('-free' is '*-free').
// Every '+' and '-' outside a [...] starts a rule, as in ltrace: a library whose name has one
// is written with '?' or a bracket ('@ld?linux*', '@libstdc[+][+]*'), or given to -l.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/result.h"

namespace memprof::tracer {

// The object defining a function, as a filter sees it (C strings: fnmatch's).
struct DefiningObject {
  const char* path = "";       // the loader's name of the object (the program: its resolved path)
  const char* file_name = "";  // the last component of path
  bool program = false;        // the main program (LIBRARY "MAIN")
};

class SymbolFilter {
 public:
  // The filter `expression` spells, or why it is not one (a regular expression, a '[' no ']'
  // closes, an empty rule).
  static Result<SymbolFilter> parse(std::string_view expression);

  // Whether the chain leaves `symbol`, defined in `object`, marked.
  bool selects(const std::string& symbol, const DefiningObject& object) const;
  // Whether `symbol` is marked in some object: a rule that adds names it. (For what the CLI
  // decides without the objects: which prototypes to send, whether a filter matched.)
  bool may_select(const std::string& symbol) const;
  // Whether a rule that adds spells `symbol` out, not as a glob: that name wins among aliases.
  bool spells(std::string_view symbol) const;
  // The symbol glob, when the filter is that one glob alone ("malloc", "sqlite3_*").
  std::optional<std::string> plain_glob() const;
  // Whether some rule names a library (ltrace's -e, where @LIBRARY means the caller, refuses it).
  bool names_a_library() const;

 private:
  struct Rule {
    bool add = true;
    std::string symbol;   // glob; "*" when the rule has none
    std::string library;  // glob; "" when the rule has none (every object)
  };
  std::vector<Rule> rules_;
};

// Whether one of `filters` selects `symbol` defined in `object`.
bool selects_any(const std::vector<SymbolFilter>& filters, const std::string& symbol, const DefiningObject& object);

}  // namespace memprof::tracer
