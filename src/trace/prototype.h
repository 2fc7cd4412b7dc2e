// Function prototypes in ltrace's ltrace.conf(5) language, and their parser. A prototype says
// how to show one call: which argument registers hold what, and how to print each value.
//
// Supported: the scalar types, addr/file, string in all its spellings, format, octal, T*
// of a supported type, the hex/oct/octal/hide/bool/bitvec lenses, enum, typedef, '+' output
// parameters, and memprof's size_t/ssize_t/bool. Not supported (each a line-numbered error, never
// a silently wrong prototype): struct, array outside string(array(char, N)*), eltN lengths.
// docs/trace.md lists the differences from ltrace.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/result.h"

namespace memprof::trace {

enum class BaseType {
  kVoid,
  kChar,
  kShort,
  kUShort,
  kInt,
  kUInt,
  kLong,
  kULong,
  kFloat,
  kDouble,
  kAddress,  // addr and file: a pointer shown as a number
  kString,   // char* shown as text
  kPointer,  // T*: shown as the T it points to
};

// How a value is shown, given its base type (ltrace calls these lenses).
enum class Lens { kPlain, kHex, kOctal, kBool, kBitvec, kEnum, kHidden };

// Where a string's length comes from. ltrace's `string` and `string[EXPR]` stop at the first
// NUL as well (the length is only a maximum); string(array(char, EXPR)*) shows exactly that many
// bytes, NULs included (memcpy's source).
struct StringLength {
  enum class Source { kTerminator, kConstant, kArgument, kReturnValue };
  Source source = Source::kTerminator;
  uint64_t value = 0;  // the constant, or the argument's index counting from 0
  bool stops_at_nul = true;
};

// char, short, ushort, int, uint, long, ulong.
bool is_integer(BaseType base);
bool is_floating(BaseType base);
// Bytes a value of the type occupies in memory and in the low end of its register.
size_t width_of(BaseType base);

struct EnumConstant {
  std::string name;
  int64_t value;
};

struct Type {
  BaseType base = BaseType::kVoid;
  Lens lens = Lens::kPlain;
  StringLength length;                                         // kString only
  std::shared_ptr<const Type> pointee;                         // kPointer only
  std::shared_ptr<const std::vector<EnumConstant>> constants;  // Lens::kEnum only
};

struct Parameter {
  Type type;
  // After ltrace's '+': the function writes it, so it is meaningful once the call returned.
  bool is_output = false;
  // ltrace's `format`: a printf format string, followed by the arguments it converts.
  bool is_format = false;
};

struct Prototype {
  std::string name;
  Type return_type;
  std::vector<Parameter> parameters;
  // "FILE:LINE" of the definition, for messages.
  std::string origin;
};

// Prototypes by function name, and the typedefs that later lines (and files) may use.
class PrototypeSet {
 public:
  const Prototype* find(std::string_view function_name) const;
  size_t size() const { return prototypes_.size(); }
  const std::map<std::string, Prototype, std::less<>>& prototypes() const { return prototypes_; }

  // A later definition of the same function replaces the earlier one, as in ltrace, where
  // ~/.ltrace.conf overrides /etc/ltrace.conf.
  void add(Prototype prototype);

  // Typedefs, and the names whose typedef was rejected (so that a line using one can say why
  // instead of reporting an unknown type).
  const Type* find_type(std::string_view name) const;
  bool add_type(std::string name, Type type);  // false when the name is already defined
  void add_rejected_type(std::string name, std::string origin);
  const std::string* rejected_type_origin(std::string_view name) const;

 private:
  std::map<std::string, Prototype, std::less<>> prototypes_;
  std::map<std::string, Type, std::less<>> types_;
  std::map<std::string, std::string, std::less<>> rejected_types_;
};

// Adds every prototype and typedef of `text` to `set` and returns one message per line it could
// not use ("protos.conf:12: unknown type 'strnig' in 'int f(strnig);'"); other lines still count,
// as in ltrace, which warns and goes on.
std::vector<std::string> add_prototypes(PrototypeSet& set, std::string_view text,
                                        std::string_view file_name);

// All or nothing: the prototypes of `text`, or an error whose message has one line per rejected
// line of `text`.
Result<PrototypeSet> parse_prototypes(std::string_view text, std::string_view file_name);

// The prototype in ltrace's syntax, typedefs expanded: "long write(int, string[arg3], ulong)".
std::string describe(const Prototype& prototype);
std::string describe(const Type& type);

}  // namespace memprof::trace
