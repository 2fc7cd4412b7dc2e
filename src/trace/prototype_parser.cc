// The ltrace.conf(5) grammar of ltrace 0.7.3 (Debian 12's), one line at a time, with memprof's
// size_t, ssize_t and bare bool; docs/trace.md says what is left out and why:
//
//   line      := blank | ';' comment | '#' comment | typedef | prototype
//   typedef   := 'typedef' NAME '=' lens [';'] [comment]
//   prototype := lens NAME '(' [param {',' param}] ')' [';'] [comment]
//   param     := ['+'] ('format' | lens)
//   lens      := ('hex'|'oct'|'octal'|'bool'|'bitvec'|'hide') '(' lens ')' | 'octal' | 'bool'
//              | 'enum' ['[' type ']'] '(' NAME['='INT] {',' NAME['='INT]} ')' | type
//   type      := nonpointer {'*'}
//   string    := 'string' | 'string'N | 'string[' length ']' | 'string(' (type | array '*') ')'
//   length    := INT | 'arg'N | 'retval' | 'zero' ['(' length ')']
//
// A line that does not fit becomes one message naming the file, the line and the reason.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>

#include "trace/prototype.h"

namespace memprof::trace {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
// Symbol names may carry a version or come from C++ ("memcpy@GLIBC_2.2.5", "_ZN3foo3barEv").
bool is_symbol_char(char c) { return is_word_char(c) || c == '.' || c == '@' || c == '$'; }

// The scalar type names, ltrace's and memprof's additions (size_t, ssize_t).
std::optional<BaseType> builtin_type(std::string_view name) {
  static constexpr std::pair<std::string_view, BaseType> kNames[] = {
      {"void", BaseType::kVoid},     {"char", BaseType::kChar},      {"short", BaseType::kShort},
      {"ushort", BaseType::kUShort}, {"int", BaseType::kInt},        {"uint", BaseType::kUInt},
      {"long", BaseType::kLong},     {"ulong", BaseType::kULong},    {"float", BaseType::kFloat},
      {"double", BaseType::kDouble}, {"addr", BaseType::kAddress},   {"file", BaseType::kAddress},
      {"size_t", BaseType::kULong},  {"ssize_t", BaseType::kLong},
  };
  for (const auto& [type_name, base] : kNames) {
    if (name == type_name) return base;
  }
  return std::nullopt;
}

std::optional<Lens> lens_named(std::string_view name) {
  if (name == "hex") return Lens::kHex;
  if (name == "oct" || name == "octal") return Lens::kOctal;
  if (name == "bool") return Lens::kBool;
  if (name == "bitvec") return Lens::kBitvec;
  if (name == "hide") return Lens::kHidden;
  return std::nullopt;
}

Type scalar(BaseType base, Lens lens = Lens::kPlain) {
  Type type;
  type.base = base;
  type.lens = lens;
  return type;
}

Type string_type(StringLength length) {
  Type type = scalar(BaseType::kString);
  type.length = length;
  return type;
}

// Reads one line left to right; every read skips the blanks before it.
class LineCursor {
 public:
  explicit LineCursor(std::string_view text) : text_(text) {}

  bool at_end() {
    skip_spaces();
    return pos_ == text_.size();
  }
  char peek() {
    skip_spaces();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  bool consume(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  std::string_view word() { return take_while(is_word_char); }
  std::string_view symbol() { return take_while(is_symbol_char); }
  // The next word if it is `keyword`, consumed; otherwise nothing moves.
  bool consume_keyword(std::string_view keyword) {
    size_t saved = pos_;
    if (word() == keyword) return true;
    pos_ = saved;
    return false;
  }
  // A C integer (decimal, 0x hex or 0 octal), optionally negative.
  std::optional<int64_t> integer() {
    skip_spaces();
    bool negative = pos_ < text_.size() && text_[pos_] == '-';
    size_t start = pos_ + (negative ? 1 : 0);
    int base = 10;
    if (text_.substr(start, 2) == "0x" || text_.substr(start, 2) == "0X") {
      base = 16;
      start += 2;
    } else if (text_.substr(start, 1) == "0" && start + 1 < text_.size() &&
               std::isdigit(static_cast<unsigned char>(text_[start + 1]))) {
      base = 8;
    }
    uint64_t magnitude = 0;
    auto [end, ec] = std::from_chars(text_.data() + start, text_.data() + text_.size(), magnitude, base);
    const char* limit = text_.data() + text_.size();
    if (ec != std::errc() || (end < limit && is_word_char(*end))) return std::nullopt;
    pos_ = static_cast<size_t>(end - text_.data());
    return negative ? -static_cast<int64_t>(magnitude) : static_cast<int64_t>(magnitude);
  }
  // What comes next, for messages: "'int'", "')'" or "end of line".
  std::string next_for_message() {
    skip_spaces();
    if (pos_ == text_.size()) return "end of line";
    size_t end = pos_;
    while (end < text_.size() && is_word_char(text_[end])) ++end;
    if (end == pos_) end = pos_ + 1;
    return fmt::format("'{}'", text_.substr(pos_, end - pos_));
  }
  size_t position() const { return pos_; }
  void rewind(size_t position) { pos_ = position; }

 private:
  void skip_spaces() {
    while (pos_ < text_.size() && is_space(text_[pos_])) ++pos_;
  }
  template <typename Predicate>
  std::string_view take_while(Predicate accepted) {
    skip_spaces();
    size_t start = pos_;
    while (pos_ < text_.size() && accepted(text_[pos_])) ++pos_;
    return text_.substr(start, pos_ - start);
  }

  std::string_view text_;
  size_t pos_ = 0;
};

// Parses one non-comment line against the typedefs known so far.
class LineParser {
 public:
  LineParser(PrototypeSet& set, std::string_view text, std::string origin)
      : set_(set), cursor_(text), origin_(std::move(origin)) {}

  Status parse_line() {
    if (cursor_.consume_keyword("typedef")) return parse_typedef();
    return parse_prototype();
  }

 private:
  Error expected(std::string_view what) {
    return err("expected {}, found {}", what, cursor_.next_for_message());
  }
  Status expect(char c, std::string_view context) {
    if (cursor_.consume(c)) return ok_status();
    return expected(fmt::format("'{}' {}", c, context));
  }
  // Nothing but an optional ';' and a comment may follow a definition.
  Status expect_line_end() {
    cursor_.consume(';');
    if (cursor_.at_end() || cursor_.peek() == ';' || cursor_.peek() == '#') return ok_status();
    return err("unexpected {} after the definition", cursor_.next_for_message());
  }

  Status parse_typedef() {
    std::string name(cursor_.word());
    if (name.empty()) return expected("the typedef's name");
    MEMPROF_TRY_STATUS(expect('=', fmt::format("after 'typedef {}'", name)));
    auto type = parse_lens();
    if (!type.ok()) {
      set_.add_rejected_type(name, origin_);
      return type.error();
    }
    MEMPROF_TRY_STATUS(expect_line_end());
    if (!set_.add_type(name, std::move(*type))) return err("redefinition of typedef '{}'", name);
    return ok_status();
  }

  Status parse_prototype() {
    Prototype prototype;
    prototype.origin = origin_;
    MEMPROF_TRY(return_type, parse_lens());
    prototype.return_type = std::move(return_type);
    prototype.name = std::string(cursor_.symbol());
    if (prototype.name.empty()) return expected("the function's name");
    MEMPROF_TRY_STATUS(expect('(', fmt::format("after '{}'", prototype.name)));
    MEMPROF_TRY(parameters, parse_parameters());
    prototype.parameters = std::move(parameters);
    MEMPROF_TRY_STATUS(expect_line_end());
    MEMPROF_TRY_STATUS(check_lengths(prototype));
    set_.add(std::move(prototype));
    return ok_status();
  }

  Result<std::vector<Parameter>> parse_parameters() {
    std::vector<Parameter> parameters;
    if (cursor_.consume(')')) return parameters;
    for (;;) {
      Parameter parameter;
      parameter.is_output = cursor_.consume('+');
      if (cursor_.consume_keyword("format")) {
        parameter.is_format = true;
        parameter.type = string_type({});
      } else {
        MEMPROF_TRY(type, parse_lens());
        parameter.type = std::move(type);
      }
      parameters.push_back(std::move(parameter));
      if (cursor_.consume(',')) continue;
      if (cursor_.consume(')')) break;
      return expected("',' or ')' after a parameter");
    }
    return with_void_parameters_resolved(std::move(parameters));
  }

  // ltrace's rules for void parameters: `f(void)` takes none; a void among others is an int that
  // is not shown (what pre-0.7 files meant by it). A format must come last because the arguments
  // it converts follow it.
  Result<std::vector<Parameter>> with_void_parameters_resolved(std::vector<Parameter> parameters) {
    if (parameters.size() == 1 && parameters[0].type.base == BaseType::kVoid) return std::vector<Parameter>{};
    size_t formats = 0;
    for (size_t i = 0; i < parameters.size(); ++i) {
      Parameter& parameter = parameters[i];
      if (parameter.type.base == BaseType::kVoid) parameter.type = scalar(BaseType::kInt, Lens::kHidden);
      if (!parameter.is_format) continue;
      if (++formats > 1) return err("only one 'format' per function");
      if (i + 1 != parameters.size()) return err("'format' must be the last parameter");
    }
    return parameters;
  }

  // argN lengths must name a parameter the function has.
  Status check_lengths(const Prototype& prototype) {
    Status status = ok_status();
    auto check = [&](const Type& type, auto& self) -> void {
      if (type.base == BaseType::kPointer) return self(*type.pointee, self);
      if (type.base != BaseType::kString || type.length.source != StringLength::Source::kArgument) return;
      if (type.length.value < prototype.parameters.size()) return;
      status = err("'arg{}' names a parameter that {} does not have (it has {})", type.length.value + 1,
                   prototype.name, prototype.parameters.size());
    };
    check(prototype.return_type, check);
    for (const Parameter& parameter : prototype.parameters) check(parameter.type, check);
    return status;
  }

  Result<Type> parse_lens() {
    size_t start = cursor_.position();
    std::string_view name = cursor_.word();
    if (name == "enum") return parse_enum();
    std::optional<Lens> lens = lens_named(name);
    if (!lens) {
      cursor_.rewind(start);
      return parse_type();
    }
    // Bare `octal` is ltrace's oct(int); bare `bool` is memprof's C bool (one byte).
    if (cursor_.peek() != '(') {
      if (*lens == Lens::kOctal) return scalar(BaseType::kInt, Lens::kOctal);
      if (*lens == Lens::kBool) return scalar(BaseType::kChar, Lens::kBool);
    }
    MEMPROF_TRY_STATUS(expect('(', fmt::format("after '{}'", name)));
    MEMPROF_TRY(inner, parse_lens());
    MEMPROF_TRY_STATUS(expect(')', fmt::format("closing '{}('", name)));
    return with_lens(*lens, name, std::move(inner));
  }

  Result<Type> with_lens(Lens lens, std::string_view lens_name, Type type) {
    bool fits = false;
    switch (lens) {
      case Lens::kHidden: fits = true; break;
      case Lens::kHex: fits = is_integer(type.base) || is_floating(type.base) || type.base == BaseType::kAddress; break;
      case Lens::kOctal: fits = is_integer(type.base) || type.base == BaseType::kAddress; break;
      case Lens::kBool:
      case Lens::kBitvec: fits = is_integer(type.base); break;
      default: break;
    }
    if (!fits) return err("{}() does not apply to '{}'", lens_name, describe(type));
    type.lens = lens;
    return type;
  }

  Result<Type> parse_type() {
    MEMPROF_TRY(type, parse_nonpointer());
    while (cursor_.consume('*')) {
      if (type.base == BaseType::kVoid) {  // void* is a pointer shown as a number, like addr
        type = scalar(BaseType::kAddress);
        continue;
      }
      Type pointer = scalar(BaseType::kPointer);
      pointer.pointee = std::make_shared<const Type>(std::move(type));
      type = std::move(pointer);
    }
    return type;
  }

  Result<Type> parse_nonpointer() {
    std::string_view name = cursor_.word();
    if (name.empty()) return expected("a type");
    if (auto base = builtin_type(name)) return scalar(*base);
    if (is_string_keyword(name)) return parse_string(name.substr(6));
    if (name == "enum") return parse_enum();
    if (name == "struct") return err("struct types are not supported");
    if (name == "array") return err("array types are supported only as string(array(char, LENGTH)*)");
    if (name == "format") return err("'format' can only be a parameter");
    if (const Type* type = set_.find_type(name)) return *type;
    if (const std::string* origin = set_.rejected_type_origin(name)) {
      return err("type '{}' is unusable: its typedef at {} was rejected", name, *origin);
    }
    return err("unknown type '{}'", name);
  }

  // "string", or ltrace's old "stringN" (string0 is string[retval], stringN is string[argN]).
  static bool is_string_keyword(std::string_view name) {
    if (!name.starts_with("string")) return false;
    name.remove_prefix(6);
    return std::all_of(name.begin(), name.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  }

  // `suffix` is what followed "string" in the same word: "" or the N of stringN.
  Result<Type> parse_string(std::string_view suffix) {
    if (!suffix.empty()) {
      uint64_t n = 0;
      std::from_chars(suffix.data(), suffix.data() + suffix.size(), n);
      return string_type(argument_length(n));
    }
    if (cursor_.consume('[')) {
      MEMPROF_TRY(length, parse_length());
      length.stops_at_nul = true;
      MEMPROF_TRY_STATUS(expect(']', "closing 'string['"));
      return string_type(length);
    }
    if (cursor_.consume('(')) {
      MEMPROF_TRY(type, parse_string_lens_argument());
      MEMPROF_TRY_STATUS(expect(')', "closing 'string('"));
      return type;
    }
    return string_type({});
  }

  // string(char*) or string(array(char, LENGTH)*).
  Result<Type> parse_string_lens_argument() {
    if (cursor_.consume_keyword("array")) {
      MEMPROF_TRY_STATUS(expect('(', "after 'array'"));
      MEMPROF_TRY(element, parse_lens());
      if (element.base != BaseType::kChar) return err("string(array(...)) needs char elements, not '{}'", describe(element));
      MEMPROF_TRY_STATUS(expect(',', "after the array's element type"));
      MEMPROF_TRY(length, parse_length());
      MEMPROF_TRY_STATUS(expect(')', "closing 'array('"));
      if (!cursor_.consume('*')) {
        return err("string(array(char, N)) without '*' is an array inside a struct, which is not supported");
      }
      return string_type(length);
    }
    MEMPROF_TRY(type, parse_type());
    if (type.base != BaseType::kPointer || type.pointee->base != BaseType::kChar) {
      return err("string() needs char* or array(char, LENGTH)*, not '{}'", describe(type));
    }
    return string_type({});
  }

  // INT, argN, retval, zero or zero(LENGTH). Only zero stops at a NUL: a bare length is exact.
  Result<StringLength> parse_length() {
    StringLength length;
    length.stops_at_nul = false;
    if (std::isdigit(static_cast<unsigned char>(cursor_.peek()))) {
      auto value = cursor_.integer();
      if (!value) return expected("a length");
      length.source = StringLength::Source::kConstant;
      length.value = static_cast<uint64_t>(*value);
      return length;
    }
    std::string name(cursor_.word());
    if (name == "retval") {
      length.source = StringLength::Source::kReturnValue;
      return length;
    }
    if (name == "zero") {
      if (!cursor_.consume('(')) return StringLength{};
      MEMPROF_TRY(bound, parse_length());
      MEMPROF_TRY_STATUS(expect(')', "closing 'zero('"));
      bound.stops_at_nul = true;
      return bound;
    }
    uint64_t n = 0;
    std::string_view digits = std::string_view(name).substr(std::min<size_t>(3, name.size()));
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    bool numbered = !digits.empty() && ec == std::errc() && end == digits.data() + digits.size();
    if (numbered && name.starts_with("arg")) {
      StringLength argument = argument_length(n);
      argument.stops_at_nul = false;
      return argument;
    }
    if (numbered && name.starts_with("elt")) {
      return err("'{}' lengths refer to struct fields, which are not supported", name);
    }
    if (name.empty()) return expected("a length (N, argN, retval or zero)");
    return err("unknown length '{}' (expected N, argN, retval or zero)", name);
  }

  // arg0 is the return value, as in ltrace.
  static StringLength argument_length(uint64_t n) {
    StringLength length;
    if (n == 0) {
      length.source = StringLength::Source::kReturnValue;
    } else {
      length.source = StringLength::Source::kArgument;
      length.value = n - 1;
    }
    return length;
  }

  // After 'enum': ['[' type ']'] '(' NAME['=' INT] {',' NAME['=' INT]} ')'. Values without '='
  // follow the previous one, starting at 0.
  Result<Type> parse_enum() {
    Type type = scalar(BaseType::kInt);
    if (cursor_.consume('[')) {
      MEMPROF_TRY(underlying, parse_type());
      if (!is_integer(underlying.base) || underlying.lens != Lens::kPlain) {
        return err("enum[] needs a plain integer type, not '{}'", describe(underlying));
      }
      type = std::move(underlying);
      MEMPROF_TRY_STATUS(expect(']', "closing 'enum['"));
    }
    MEMPROF_TRY_STATUS(expect('(', "after 'enum'"));
    auto constants = std::make_shared<std::vector<EnumConstant>>();
    int64_t next_value = 0;
    while (!cursor_.consume(')')) {
      if (!constants->empty()) MEMPROF_TRY_STATUS(expect(',', "between enum constants"));
      std::string name(cursor_.word());
      if (name.empty()) return expected("an enum constant's name");
      if (cursor_.consume('=')) {
        auto value = cursor_.integer();
        if (!value) return expected(fmt::format("a number after '{}='", name));
        next_value = *value;
      }
      constants->push_back({std::move(name), next_value++});
    }
    type.lens = Lens::kEnum;
    type.constants = std::move(constants);
    return type;
  }

  PrototypeSet& set_;
  LineCursor cursor_;
  std::string origin_;
};

std::string_view trimmed(std::string_view line) {
  while (!line.empty() && is_space(line.front())) line.remove_prefix(1);
  while (!line.empty() && is_space(line.back())) line.remove_suffix(1);
  return line;
}

}  // namespace

std::vector<std::string> add_prototypes(PrototypeSet& set, std::string_view text, std::string_view file_name) {
  std::vector<std::string> problems;
  size_t line_number = 0;
  while (!text.empty()) {
    size_t newline = text.find('\n');
    std::string_view line = trimmed(text.substr(0, newline));
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    ++line_number;
    if (line.empty() || line.front() == ';' || line.front() == '#') continue;
    std::string origin = fmt::format("{}:{}", file_name, line_number);
    Status parsed = LineParser(set, line, origin).parse_line();
    if (!parsed.ok()) problems.push_back(fmt::format("{}: {} in '{}'", origin, parsed.message(), line));
  }
  return problems;
}

Result<PrototypeSet> parse_prototypes(std::string_view text, std::string_view file_name) {
  PrototypeSet set;
  std::vector<std::string> problems = add_prototypes(set, text, file_name);
  if (problems.empty()) return set;
  std::string message = problems[0];
  for (size_t i = 1; i < problems.size(); ++i) message += "\n" + problems[i];
  return Error{std::move(message)};
}

}  // namespace memprof::trace
