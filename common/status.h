// Status and Result<T>: the error currency at every module boundary.
//
// Contract: a Status is either OK or carries a code and a human-readable message that names
// *where* and *what* (e.g. "plan.toml:12: unknown precision 'q5'"). Result<T> holds a value or a
// non-OK Status. Both are [[nodiscard]]: ignoring an error is a compile warning.
// Third-party exceptions never cross a module boundary; adapters catch and convert them.
// Misuse — value() of an error, a Result built from an OK Status — aborts (AM_CHECK) in every
// build type.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "common/check.h"

namespace am {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    // caller passed something malformed (plan, flag, message field)
  kNotFound,           // a named thing does not exist (model, file, job)
  kAlreadyExists,
  kFailedPrecondition, // the system is not in a state where the call makes sense
  kUnsupported,        // a backend/format/op combination that is not implemented
  kUnavailable,        // a peer or resource is temporarily unreachable
  kTimeout,
  kResourceExhausted,  // out of memory, size limit exceeded
  kIoError,
  kInternal,
};

std::string_view status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "InvalidArgument: plan.toml:3: ..." — for logs and CLI error lines.
  std::string to_string() const;
  // Returns a copy whose message is "<context>: <message>".
  Status with_context(std::string_view context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status not_found(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status failed_precondition(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
inline Status unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
inline Status unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status timeout_error(std::string m) { return {StatusCode::kTimeout, std::move(m)}; }
inline Status resource_exhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
inline Status io_error(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
inline Status internal_error(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}                  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {            // NOLINT: implicit by design
    // An OK status here would make a Result that is neither a value nor an error.
    AM_CHECK(!std::get<Status>(v_).ok(), "Result constructed from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(v_);
  }
  // Reading the value of an error is a bug in the caller: it aborts with a message, in every
  // build, rather than throwing std::bad_variant_access that some handler turns into a result.
  T& value() & { AM_CHECK(ok(), "Result::value() on an error"); return std::get<T>(v_); }
  const T& value() const& { AM_CHECK(ok(), "Result::value() on an error"); return std::get<T>(v_); }
  T&& value() && { AM_CHECK(ok(), "Result::value() on an error"); return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace am

#define AM_CONCAT_INNER_(a, b) a##b
#define AM_CONCAT_(a, b) AM_CONCAT_INNER_(a, b)

// Returns the Status from the enclosing function when `expr` is not OK.
#define AM_RETURN_IF_ERROR(expr)                 \
  do {                                           \
    ::am::Status am_status_ = (expr);            \
    if (!am_status_.ok()) return am_status_;     \
  } while (0)

// `AM_ASSIGN_OR_RETURN(auto x, make_x());` — unwraps a Result or returns its Status.
#define AM_ASSIGN_OR_RETURN(lhs, expr) AM_ASSIGN_OR_RETURN_IMPL_(AM_CONCAT_(am_result_, __LINE__), lhs, expr)
#define AM_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()
