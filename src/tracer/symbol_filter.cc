#include "tracer/symbol_filter.h"

#include <fnmatch.h>

#include <algorithm>

#include "tracer/trace_session.h"

namespace memprof::tracer {
namespace {

// The index of the ']' that closes the bracket expression opening at `open`, or npos. A ']'
// right after "[" or "[!" is a member, as in fnmatch.
size_t bracket_end(std::string_view text, size_t open) {
  size_t first = open + 1;
  if (first < text.size() && (text[first] == '!' || text[first] == '^')) ++first;
  if (first < text.size() && text[first] == ']') ++first;
  return text.find(']', first);
}

// The index of the first of `stops` in `text` from `from` that is neither escaped nor inside a
// bracket expression, or text.size().
size_t find_outside_brackets(std::string_view text, size_t from, std::string_view stops) {
  for (size_t i = from; i < text.size(); ++i) {
    if (text[i] == '\\') {
      ++i;
    } else if (text[i] == '[') {
      const size_t close = bracket_end(text, i);
      if (close == std::string_view::npos) return text.size();  // malformed_glob says why
      i = close;
    } else if (stops.find(text[i]) != std::string_view::npos) {
      return i;
    }
  }
  return text.size();
}

// ltrace's anchors: '^' and '$' mean the start and end of the name, which a glob matches whole.
std::string_view without_anchors(std::string_view glob) {
  if (glob.starts_with('^')) glob.remove_prefix(1);
  if (glob.ends_with('$') && !glob.ends_with("\\$")) glob.remove_suffix(1);
  return glob;
}

bool glob_matches(const std::string& glob, const char* name) { return ::fnmatch(glob.c_str(), name, 0) == 0; }

}  // namespace

Result<SymbolFilter> SymbolFilter::parse(std::string_view expression) {
  if (expression.empty()) return err("an empty filter");
  SymbolFilter filter;
  for (size_t at = 0; at < expression.size();) {
    Rule rule;
    const size_t start = at;
    if (expression[at] == '+' || expression[at] == '-') rule.add = expression[at++] == '+';
    const size_t end = find_outside_brackets(expression, at, "+-");
    const std::string_view text = expression.substr(at, end - at);
    at = end;
    // "@libstdc++.so.6", "@libruby-3.1.so*": a library name cut at its '+' or '-'.
    constexpr std::string_view kLibraryCut =
        "every '+' and '-' starts a rule, as in ltrace: write a library name that has one with '?' "
        "('@libruby?3.1*', '@libstdc??*') or give it to -l";
    if (text.empty()) return err("an empty rule (a '+' or '-' with nothing after it): {}", kLibraryCut);
    if (text[0] >= '0' && text[0] <= '9')
      return err("the rule '{}' names no function (no name starts with a digit): {}",
                 expression.substr(start, end - start), kLibraryCut);
    if (text.starts_with('/'))
      return err("'{}' is a regular expression, which memprof does not take: write a glob (*, ?, [...])", text);
    const size_t split = find_outside_brackets(text, 0, "@");
    const std::string_view symbol = without_anchors(text.substr(0, split));
    rule.symbol = symbol.empty() ? "*" : std::string(symbol);
    if (split < text.size()) {
      const std::string_view library = without_anchors(text.substr(split + 1));
      if (library.empty()) return err("'{}' names no library after '@'", text);
      if (library.size() > 1 && library.starts_with('/') && library.ends_with('/'))
        return err("'{}' is a regular expression, which memprof does not take: write a glob (*, ?, [...])", library);
      rule.library = std::string(library);
    }
    for (const std::string& glob : {rule.symbol, rule.library}) {
      if (std::string problem = malformed_glob(glob); !problem.empty()) {
        if (glob == expression) return err("{}", problem);  // the caller quotes the expression
        return err("'{}': {}", glob, problem);
      }
    }
    // A chain that starts by removing removes from everything, as in ltrace.
    if (filter.rules_.empty() && !rule.add) filter.rules_.push_back({true, "*", ""});
    filter.rules_.push_back(std::move(rule));
  }
  return filter;
}

bool SymbolFilter::selects(const std::string& symbol, const DefiningObject& object) const {
  auto in_library = [&](const std::string& library) {
    if (library.empty()) return true;
    if (library == "MAIN") return object.program;
    return glob_matches(library, library.starts_with('/') ? object.path : object.file_name);
  };
  bool marked = false;
  for (const Rule& rule : rules_)
    if (rule.add != marked && glob_matches(rule.symbol, symbol.c_str()) && in_library(rule.library)) marked = rule.add;
  return marked;
}

bool SymbolFilter::may_select(const std::string& symbol) const {
  return std::any_of(rules_.begin(), rules_.end(),
                     [&](const Rule& rule) { return rule.add && glob_matches(rule.symbol, symbol.c_str()); });
}

bool SymbolFilter::spells(std::string_view symbol) const {
  return std::any_of(rules_.begin(), rules_.end(), [&](const Rule& rule) { return rule.add && rule.symbol == symbol; });
}

std::optional<std::string> SymbolFilter::plain_glob() const {
  if (rules_.size() != 1 || !rules_[0].add || !rules_[0].library.empty()) return std::nullopt;
  return rules_[0].symbol;
}

bool SymbolFilter::names_a_library() const {
  return std::any_of(rules_.begin(), rules_.end(), [](const Rule& rule) { return !rule.library.empty(); });
}

bool selects_any(const std::vector<SymbolFilter>& filters, const std::string& symbol, const DefiningObject& object) {
  return std::any_of(filters.begin(), filters.end(),
                     [&](const SymbolFilter& filter) { return filter.selects(symbol, object); });
}

}  // namespace memprof::tracer
