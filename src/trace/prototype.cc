// PrototypeSet and describe(); the parser is prototype_parser.cc.
#include "trace/prototype.h"

#include <fmt/format.h>

namespace memprof::trace {

bool is_integer(BaseType base) {
  switch (base) {
    case BaseType::kChar:
    case BaseType::kShort:
    case BaseType::kUShort:
    case BaseType::kInt:
    case BaseType::kUInt:
    case BaseType::kLong:
    case BaseType::kULong: return true;
    default: return false;
  }
}

bool is_floating(BaseType base) { return base == BaseType::kFloat || base == BaseType::kDouble; }

size_t width_of(BaseType base) {
  switch (base) {
    case BaseType::kVoid: return 0;
    case BaseType::kChar: return 1;
    case BaseType::kShort:
    case BaseType::kUShort: return 2;
    case BaseType::kInt:
    case BaseType::kUInt:
    case BaseType::kFloat: return 4;
    default: return 8;
  }
}

const Prototype* PrototypeSet::find(std::string_view function_name) const {
  auto it = prototypes_.find(function_name);
  return it == prototypes_.end() ? nullptr : &it->second;
}

void PrototypeSet::add(Prototype prototype) {
  std::string name = prototype.name;
  prototypes_.insert_or_assign(std::move(name), std::move(prototype));
}

const Type* PrototypeSet::find_type(std::string_view name) const {
  auto it = types_.find(name);
  return it == types_.end() ? nullptr : &it->second;
}

bool PrototypeSet::add_type(std::string name, Type type) {
  return types_.try_emplace(std::move(name), std::move(type)).second;
}

void PrototypeSet::add_rejected_type(std::string name, std::string origin) {
  rejected_types_.insert_or_assign(std::move(name), std::move(origin));
}

const std::string* PrototypeSet::rejected_type_origin(std::string_view name) const {
  auto it = rejected_types_.find(name);
  return it == rejected_types_.end() ? nullptr : &it->second;
}

namespace {

const char* base_name(BaseType base) {
  switch (base) {
    case BaseType::kVoid: return "void";
    case BaseType::kChar: return "char";
    case BaseType::kShort: return "short";
    case BaseType::kUShort: return "ushort";
    case BaseType::kInt: return "int";
    case BaseType::kUInt: return "uint";
    case BaseType::kLong: return "long";
    case BaseType::kULong: return "ulong";
    case BaseType::kFloat: return "float";
    case BaseType::kDouble: return "double";
    case BaseType::kAddress: return "addr";
    case BaseType::kString: return "string";
    case BaseType::kPointer: return "pointer";
  }
  return "?";
}

std::string length_expression(const StringLength& length) {
  switch (length.source) {
    case StringLength::Source::kTerminator: return "zero";
    case StringLength::Source::kConstant: return fmt::format("{}", length.value);
    case StringLength::Source::kArgument: return fmt::format("arg{}", length.value + 1);
    case StringLength::Source::kReturnValue: return "retval";
  }
  return "?";
}

std::string describe_string(const StringLength& length) {
  if (!length.stops_at_nul) return fmt::format("string(array(char, {})*)", length_expression(length));
  if (length.source == StringLength::Source::kTerminator) return "string";
  return fmt::format("string[{}]", length_expression(length));
}

std::string describe_unlensed(const Type& type) {
  if (type.base == BaseType::kString) return describe_string(type.length);
  if (type.base == BaseType::kPointer) return describe(*type.pointee) + "*";
  return base_name(type.base);
}

std::string describe_enum(const Type& type) {
  std::string text = type.base == BaseType::kInt ? "enum(" : fmt::format("enum[{}](", base_name(type.base));
  for (size_t i = 0; i < type.constants->size(); ++i) {
    const EnumConstant& constant = (*type.constants)[i];
    text += fmt::format("{}{}={}", i == 0 ? "" : ", ", constant.name, constant.value);
  }
  return text + ")";
}

}  // namespace

std::string describe(const Type& type) {
  std::string inner = describe_unlensed(type);
  switch (type.lens) {
    case Lens::kPlain: return inner;
    case Lens::kHex: return fmt::format("hex({})", inner);
    case Lens::kOctal: return fmt::format("oct({})", inner);
    case Lens::kBool: return fmt::format("bool({})", inner);
    case Lens::kBitvec: return fmt::format("bitvec({})", inner);
    case Lens::kHidden: return fmt::format("hide({})", inner);
    case Lens::kEnum: return describe_enum(type);
  }
  return inner;
}

std::string describe(const Prototype& prototype) {
  std::string text = fmt::format("{} {}(", describe(prototype.return_type), prototype.name);
  for (size_t i = 0; i < prototype.parameters.size(); ++i) {
    const Parameter& parameter = prototype.parameters[i];
    if (i > 0) text += ", ";
    if (parameter.is_output) text += '+';
    text += parameter.is_format ? "format" : describe(parameter.type);
  }
  return text + ")";
}

}  // namespace memprof::trace
