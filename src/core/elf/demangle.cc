#include "core/elf/demangle.h"

#include <cxxabi.h>

#include <array>
#include <cstdlib>
#include <memory>

namespace memprof::elf {

std::string demangle(std::string_view name) {
  if (!name.starts_with("_Z")) return std::string(name);
  std::string mangled(name);  // __cxa_demangle needs a NUL-terminated string
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> text(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), &std::free);
  if (status != 0 || !text) return mangled;
  return text.get();
}

namespace {

bool is_identifier_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// What follows "operator" in an operator's name, longest first ("<<=" before "<<" before "<").
constexpr std::array<std::string_view, 39> kOperatorSymbols = {
    "()", "[]", "<=>", "<<=", ">>=", "->*", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "++", "--",
    "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "->", ",", "<", ">", "+", "-", "*", "/", "%", "&",
    "|", "^", "~", "!", "="};

struct OperatorName {
  size_t length = 0;        // 0: no operator's name starts here
  bool conversion = false;  // "operator T": the type T follows, spaces and all
};

// The operator's name starting at `at`: "operator<<", "operator()", "operator new[]",
// "operator\"\" _km", or "operator " of a conversion operator. Its '<' and '(' are not a
// template's or a parameter list's. A space the demangler puts between the name and a template
// argument list ("operator<< <char>") is taken with it.
OperatorName operator_at(std::string_view name, size_t at) {
  constexpr std::string_view kOperator = "operator";
  if (name.substr(at, kOperator.size()) != kOperator || (at > 0 && is_identifier_char(name[at - 1]))) return {};
  const size_t end = at + kOperator.size();
  const std::string_view rest = name.substr(end);
  if (rest.empty() || is_identifier_char(rest[0])) return {};
  size_t length = 0;
  if (rest.starts_with(' ')) {
    for (std::string_view word : {" new[]", " delete[]", " new", " delete"})
      if (rest.starts_with(word)) length = word.size();
    if (length == 0) return {kOperator.size() + 1, true};
  } else if (rest.starts_with("\"\"")) {
    length = rest.find('(');  // operator"" _km(unsigned long long)
    if (length == std::string_view::npos) length = rest.size();
  } else {
    for (std::string_view symbol : kOperatorSymbols)
      if (rest.starts_with(symbol)) {
        length = symbol.size();
        break;
      }
    if (length == 0) return {};
  }
  if (rest.substr(length).starts_with(" <")) ++length;
  return {kOperator.size() + length, false};
}

// The index just past the bracket that closes the one at `open` ('<', '(', '{' or '['), or npos.
// Operators' names inside ("std::less<...>::operator()") and "->" do not count.
size_t past_closing(std::string_view name, size_t open) {
  size_t depth = 0;
  for (size_t i = open; i < name.size(); ++i) {
    if (OperatorName op = operator_at(name, i); op.length > 0 && !op.conversion) {
      i += op.length - 1;
      continue;
    }
    const char c = name[i];
    if (c == '-' && i + 1 < name.size() && name[i + 1] == '>') {
      ++i;
    } else if (c == '<' || c == '(' || c == '{' || c == '[') {
      ++depth;
    } else if (c == '>' || c == ')' || c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

// "non-virtual thunk to ", "guard variable for ": kept in front of the name they are about.
size_t special_prefix_length(std::string_view name) {
  const std::string_view head = name.substr(0, name.find_first_of("<({:"));
  for (std::string_view words : {" to ", " for "})
    if (size_t found = head.rfind(words); found != std::string_view::npos) return found + words.size();
  return 0;
}

}  // namespace

std::string short_function_name(std::string_view demangled) {
  const size_t prefix = special_prefix_length(demangled);
  std::string out;
  size_t name_start = 0;    // in `out`, past the last space: what comes before is a return type
  bool conversion = false;  // in "operator T": T's spaces are its own
  for (size_t i = prefix; i < demangled.size();) {
    if (OperatorName op = operator_at(demangled, i); op.length > 0) {
      out += demangled.substr(i, op.length);
      conversion = op.conversion;
      i += op.length;
      continue;
    }
    if (constexpr std::string_view kAnonymous = "(anonymous namespace)"; demangled.substr(i).starts_with(kAnonymous)) {
      out += kAnonymous;  // its parentheses are no parameter list, its space no return type's
      i += kAnonymous.size();
      continue;
    }
    const char c = demangled[i];
    if (c == '<' || c == '{' || c == '(') {
      const size_t end = past_closing(demangled, i);
      if (end == std::string_view::npos) return std::string(demangled);  // unbalanced: shown as it is
      if (c == '<') {
        out += "<...>";
      } else if (c == '{') {
        out += demangled.substr(i, end - i);  // {lambda(int)#1}, {unnamed type#1}
      } else if (!demangled.substr(end).starts_with("::")) {
        // The function's own parameters: the rest is qualifiers and clone suffixes, and the
        // words before its name were its return type.
        out.erase(0, name_start);
        break;
      }
      i = end;
      continue;
    }
    out += c;
    if (c == ' ' && !conversion) name_start = out.size();
    ++i;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();  // "operator void (Foo::*)()"
  if (out.empty()) return std::string(demangled);
  return std::string(demangled.substr(0, prefix)) + out;
}

}  // namespace memprof::elf
