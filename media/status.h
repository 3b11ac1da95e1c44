// Status and Result<T>: how data errors travel.
//
// Bad data is expected at scale (corrupt files, lying headers, unreadable paths), so decoders,
// readers and kernels report it as a value, never as an exception or a crash. Configuration and
// programming errors (unknown operator, wrong argument type) are exceptions instead; see
// pipeline/errors.h.
//
// Thread safety: Status and Result are values; distinct objects may be used from any thread.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

#include "media/api.h"

HDL_API_BEGIN
namespace hdl {

/// What went wrong with a piece of data. Stable: mapped one to one to Python and to JSON.
enum class StatusCode {
  kOk = 0,
  kInvalidData,        ///< the bytes are corrupt or truncated
  kUnsupported,        ///< well-formed, but a format or feature this build cannot decode
  kNotFound,           ///< a file or key does not exist
  kIoError,            ///< the operating system refused a read
  kResourceExhausted,  ///< over a configured limit (max pixels, max bytes)
  kInvalidArgument,    ///< a per-sample argument is out of range (e.g. a crop outside the image)
  kCancelled,          ///< the pipeline was stopped while the work was in flight
  kInternal,           ///< a bug: an invariant did not hold
};

/// Human-readable name of a code ("invalid data", "unsupported", ...).
const char* status_code_name(StatusCode code);

/// The result of an operation that can fail on bad data: a code and a message.
/// An ok Status carries no message and costs no allocation. The message is kept as
/// printable() makes it (media/text.h): valid UTF-8, URL secrets redacted, whatever bytes the
/// data put in it.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message);

  static Status ok() { return {}; }
  static Status invalid_data(std::string m) { return {StatusCode::kInvalidData, std::move(m)}; }
  static Status unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
  static Status not_found(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status io_error(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
  static Status resource_exhausted(std::string m) {
    return {StatusCode::kResourceExhausted, std::move(m)};
  }
  static Status invalid_argument(std::string m) {
    return {StatusCode::kInvalidArgument, std::move(m)};
  }
  static Status cancelled(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }
  static Status internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

  bool is_ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  /// "invalid data: premature end of data segment"; "ok" for an ok status.
  std::string to_string() const;

  /// The same status with `context` put in front of the message: "context: message".
  /// Used as errors climb from a kernel to the executor, which adds operator, sample and file.
  Status with_context(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

/// Either a value or a non-ok Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) { assert(!std::get<Status>(v_).is_ok()); }

  bool is_ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return is_ok(); }

  /// Precondition: is_ok().
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  /// The error, or an ok Status when a value is held.
  Status status() const { return is_ok() ? Status() : std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace hdl
HDL_API_END

/// Returns early from the enclosing function if `expr` (a Status) is not ok.
#define HDL_RETURN_IF_ERROR(expr)            \
  do {                                       \
    ::hdl::Status hdl_status_ = (expr);      \
    if (!hdl_status_.is_ok()) return hdl_status_; \
  } while (0)

#define HDL_CONCAT_INNER_(a, b) a##b
#define HDL_CONCAT_(a, b) HDL_CONCAT_INNER_(a, b)

/// `HDL_ASSIGN_OR_RETURN(auto x, make_x());` declares x from a Result or returns its Status.
#define HDL_ASSIGN_OR_RETURN(lhs, expr) \
  HDL_ASSIGN_OR_RETURN_IMPL_(HDL_CONCAT_(hdl_result_, __LINE__), lhs, expr)
#define HDL_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.is_ok()) return tmp.status();           \
  lhs = std::move(tmp).value()
