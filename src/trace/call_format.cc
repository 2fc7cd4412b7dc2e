#include "trace/call_format.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "trace/printf_arguments.h"
#include "trace/value_text.h"

namespace memprof::trace {
namespace {

// Shown in place of an argument the captured registers do not hold, and of all after it.
constexpr std::string_view kUnavailable = "...";
// Bytes of a format string read to find its conversions (what is shown obeys the string limit).
constexpr size_t kFormatBytes = 4096;
// int** and deeper are followed this far, then shown as addresses.
constexpr int kMaxPointerDepth = 8;

// Hands out argument registers in System V order: integers and floating-point values each from
// their own bank.
class RegisterCursor {
 public:
  explicit RegisterCursor(const ArgumentRegisters& registers) : registers_(registers) {}

  std::optional<uint64_t> take(BaseType base) {
    if (is_floating(base)) return next(registers_.vector, next_vector_);
    return next(registers_.integer, next_integer_);
  }

 private:
  template <size_t N>
  static std::optional<uint64_t> next(const std::array<uint64_t, N>& bank, size_t& index) {
    if (index == N) return std::nullopt;
    return bank[index++];
  }

  const ArgumentRegisters& registers_;
  size_t next_integer_ = 0;
  size_t next_vector_ = 0;
};

// Values joined by ", ".
class ArgumentList {
 public:
  void add(std::string_view text) {
    if (!text_.empty()) text_ += ", ";
    text_ += text;
  }
  std::string take() { return std::move(text_); }

 private:
  std::string text_;
};

class CallFormatter {
 public:
  CallFormatter(const Prototype& prototype, const CapturedCall& call, const MemoryReader& read,
                const FormatOptions& options)
      : prototype_(prototype), call_(call), read_(read), options_(options), registers_(call.arguments) {
    // Every parameter's register first: a string's length may be a later argument (write's arg3).
    for (const Parameter& parameter : prototype.parameters) {
      parameter_bits_.push_back(registers_.take(parameter.type.base));
    }
  }

  std::string arguments() {
    ArgumentList list;
    for (size_t i = 0; i < prototype_.parameters.size(); ++i) {
      const Parameter& parameter = prototype_.parameters[i];
      if (!parameter_bits_[i]) {
        list.add(kUnavailable);
        return list.take();
      }
      if (parameter.type.lens == Lens::kHidden) continue;
      list.add(value_text(parameter.type, *parameter_bits_[i]));
      if (parameter.is_format) add_printf_arguments(*parameter_bits_[i], list);
    }
    return list.take();
  }

  std::optional<std::string> return_value() {
    if (!call_.returned) return std::nullopt;
    const Type& type = prototype_.return_type;
    if (type.base == BaseType::kVoid) return "<void>";
    return value_text(type, is_floating(type.base) ? call_.returned->vector : call_.returned->integer);
  }

 private:
  // The arguments after a format string, typed by its conversions, from the registers left.
  void add_printf_arguments(uint64_t format_address, ArgumentList& list) {
    if (format_address == 0) return;
    std::string format(kFormatBytes, '\0');
    format.resize(read_(format_address, format.data(), format.size()));
    format.resize(std::min(format.size(), format.find('\0')));
    for (const PrintfArgument& argument : printf_arguments(format)) {
      std::optional<uint64_t> bits;
      if (!argument.on_stack) bits = registers_.take(argument.type.base);
      if (!bits) {
        list.add(kUnavailable);
        return;
      }
      list.add(value_text(argument.type, *bits));
    }
  }

  std::string value_text(const Type& type, uint64_t bits, int depth = 0) {
    if (type.lens == Lens::kHidden) return "";
    switch (type.base) {
      case BaseType::kVoid: return "<void>";
      case BaseType::kString: return string_text(bits, type.length);
      case BaseType::kPointer: return pointee_text(*type.pointee, bits, depth);
      case BaseType::kFloat:
      case BaseType::kDouble: return floating_text(type, bits);
      default: return integer_text(type, bits);
    }
  }

  std::string string_text(uint64_t address, const StringLength& length) {
    if (address == 0) return "nil";
    const size_t limit = options_.string_limit;
    // One byte past the limit tells whether "..." is due.
    size_t wanted = limit + 1;
    if (std::optional<uint64_t> bound = length_bound(length)) wanted = std::min<uint64_t>(wanted, *bound);
    std::string bytes(wanted, '\0');
    bytes.resize(wanted == 0 ? 0 : read_(address, bytes.data(), wanted));
    if (bytes.empty() && wanted > 0) return hex_text(address);  // nothing there can be read
    if (length.stops_at_nul) bytes.resize(std::min(bytes.size(), bytes.find('\0')));
    const bool truncated = bytes.size() > limit;
    if (truncated) bytes.resize(limit);
    return quoted_string(bytes, truncated);
  }

  // T* shows the T it points to, as in ltrace.
  std::string pointee_text(const Type& pointee, uint64_t address, int depth) {
    if (address == 0) return "nil";
    const size_t width = width_of(pointee.base);
    char buffer[8] = {};
    if (depth >= kMaxPointerDepth || read_(address, buffer, width) < width) return hex_text(address);
    uint64_t bits = 0;
    std::memcpy(&bits, buffer, width);
    return value_text(pointee, bits, depth + 1);
  }

  // The most bytes a string may have; none when it ends only at its NUL, or when the argument
  // holding its length was not captured.
  std::optional<uint64_t> length_bound(const StringLength& length) {
    switch (length.source) {
      case StringLength::Source::kTerminator: return std::nullopt;
      case StringLength::Source::kConstant: return length.value;
      case StringLength::Source::kArgument: {
        if (length.value >= parameter_bits_.size() || !parameter_bits_[length.value]) return std::nullopt;
        return integer_value(prototype_.parameters[length.value].type.base, *parameter_bits_[length.value]);
      }
      case StringLength::Source::kReturnValue: {
        if (!call_.returned) return std::nullopt;
        return integer_value(prototype_.return_type.base, call_.returned->integer);
      }
    }
    return std::nullopt;
  }

  const Prototype& prototype_;
  const CapturedCall& call_;
  const MemoryReader& read_;
  const FormatOptions& options_;
  RegisterCursor registers_;
  std::vector<std::optional<uint64_t>> parameter_bits_;
};

// ltrace's guess for a function it has no prototype for: a few integer registers and rax.
FormattedCall guessed_call(const CapturedCall& call, const FormatOptions& options) {
  FormattedCall formatted;
  ArgumentList list;
  RegisterCursor registers(call.arguments);
  for (size_t i = 0; i < options.arguments_without_prototype; ++i) {
    std::optional<uint64_t> bits = registers.take(BaseType::kLong);
    if (!bits) {
      list.add(kUnavailable);
      break;
    }
    list.add(guessed_text(*bits));
  }
  formatted.arguments = list.take();
  if (call.returned) formatted.return_value = guessed_text(call.returned->integer);
  return formatted;
}

}  // namespace

FormattedCall format_call(const Prototype* prototype, const CapturedCall& call, const MemoryReader& read,
                          const FormatOptions& options) {
  if (prototype == nullptr) return guessed_call(call, options);
  CallFormatter formatter(*prototype, call, read, options);
  FormattedCall formatted;
  formatted.arguments = formatter.arguments();
  formatted.return_value = formatter.return_value();
  return formatted;
}

std::string call_line(std::string_view function_name, const FormattedCall& call, size_t align_column) {
  std::string line = fmt::format("{}({}", function_name, call.arguments);
  if (!call.return_value) return line + " <unfinished ...>";
  line += ')';
  if (line.size() + 2 < align_column) line.resize(align_column - 2, ' ');
  return line + " = " + *call.return_value;
}

}  // namespace memprof::trace
