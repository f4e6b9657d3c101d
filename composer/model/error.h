// Errors are values: every fallible call returns Result<T>. Codes map 1:1 onto gRPC canonical codes
// (net/grpc_status.cpp) and later onto Redfish Base messages; nothing else may invent codes.
#pragma once

#include <expected>
#include <string>
#include <string_view>
#include <utility>

namespace switchyard {

enum class Code {
  kOk = 0,
  kInvalidArgument,     // the request itself is wrong; retrying will not help
  kNotFound,            // a named host, device, system or operation does not exist
  kAlreadyExists,       // e.g. a system name in use
  kFailedPrecondition,  // the state forbids it now: device busy, system mid-operation
  kResourceExhausted,   // does not fit: the packing core's explanation is the message
  kDeadlineExceeded,    // a switch or host did not answer in time (the outcome is unknown)
  kUnavailable,         // a switch or the store cannot be reached; retry later
  kAborted,             // the daemon is shutting down or the operation was cancelled
  kInternal,            // a bug or a broken invariant
  kPermissionDenied,    // the caller's role or tenant does not allow it
  kUnauthenticated,     // no valid credentials (client certificate, bearer token, password)
};

[[nodiscard]] std::string_view codeName(Code code);

struct Error {
  Code code = Code::kInternal;
  std::string message;

  // Prefixes context ("bind sw0-gpu3: " + message) while keeping the code.
  [[nodiscard]] Error wrap(std::string_view context) const {
    return Error{code, std::string(context) + ": " + message};
  }
};

template <typename T>
using Result = std::expected<T, Error>;

[[nodiscard]] inline std::unexpected<Error> fail(Code code, std::string message) {
  return std::unexpected<Error>(Error{code, std::move(message)});
}

[[nodiscard]] inline std::unexpected<Error> fail(Error error) {
  return std::unexpected<Error>(std::move(error));
}

}  // namespace switchyard

// Returns the error of a failed Result<...> expression from the enclosing function.
#define SY_TRY(expr)                                                            \
  do {                                                                          \
    if (auto sy_try_result_ = (expr); !sy_try_result_)                          \
      return ::switchyard::fail(std::move(sy_try_result_).error());             \
  } while (0)

#define SY_CONCAT_INNER(a, b) a##b
#define SY_CONCAT(a, b) SY_CONCAT_INNER(a, b)
// Declares `decl` from the value of a Result<T> expression, or returns its error.
#define SY_ASSIGN(decl, expr) SY_ASSIGN_IMPL(SY_CONCAT(sy_assign_, __LINE__), decl, expr)
#define SY_ASSIGN_IMPL(tmp, decl, expr)                                  \
  auto tmp = (expr);                                                     \
  if (!tmp) return ::switchyard::fail(std::move(tmp).error());           \
  decl = std::move(*tmp)
