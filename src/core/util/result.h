// Errors as values. Every fallible operation in memprof returns Result<T>; nothing in the core
// throws across a module boundary, and nothing here allocates on the success path beyond T itself.
#pragma once

#include <string>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace memprof {

struct Error {
  std::string message;
};

// Builds an Error from a fmt format string: `return err("{}: not an ELF file", path);`
template <typename... Args>
Error err(fmt::format_string<Args...> format, Args&&... args) {
  return Error{fmt::format(format, std::forward<Args>(args)...)};
}

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Error error) : state_(std::move(error)) {}      // NOLINT: implicit by design

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { return std::get<1>(state_); }
  const std::string& message() const { return error().message; }

 private:
  std::variant<T, Error> state_;
};

// Result<void>: success carries nothing.
struct Ok {};
using Status = Result<Ok>;
inline Status ok_status() { return Ok{}; }

// Propagates an error from an expression returning Result<T>, or binds its value.
#define MEMPROF_TRY(var, expr)                          \
  auto var##_result = (expr);                           \
  if (!var##_result.ok()) return var##_result.error();  \
  auto& var = var##_result.value()

#define MEMPROF_TRY_STATUS(expr)                        \
  do {                                                  \
    auto status_ = (expr);                              \
    if (!status_.ok()) return status_.error();          \
  } while (0)

}  // namespace memprof
