// Status: the error currency below the torch line.
//
// Code under csrc/kiln/{base,runtime,ir,compiler} never throws across a public
// function and never aborts the process on a recoverable error. It returns a
// Status (or StatusOr<T>), and the torch-facing layer turns a failed Status into
// the matching PyTorch exception exactly once, at the boundary.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace kiln {

enum class StatusCode {
  kOk,
  kInvalidArgument,     // caller passed something the runtime cannot accept
  kOutOfRange,          // an index (device, stream) beyond what exists
  kOutOfMemory,         // device or host memory capacity exhausted
  kFailedPrecondition,  // the call is not valid in the current state
  kUnimplemented,       // the feature is not provided by this driver
  kDeadlineExceeded,    // a wait ran past its deadline (a collective's peers)
  kUnavailable,         // a peer the call needs is gone (an exited rank)
  kInternal,            // a broken invariant inside Kiln
};

// Returns the code's name, e.g. "OutOfMemory".
const char* status_code_name(StatusCode code);

class Status {
 public:
  Status() = default;  // ok
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns a copy whose message is prefixed with `context` and ": ".
  Status with_context(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}
inline Status out_of_range(std::string message) {
  return Status(StatusCode::kOutOfRange, std::move(message));
}
inline Status out_of_memory(std::string message) {
  return Status(StatusCode::kOutOfMemory, std::move(message));
}
inline Status failed_precondition(std::string message) {
  return Status(StatusCode::kFailedPrecondition, std::move(message));
}
inline Status deadline_exceeded(std::string message) {
  return Status(StatusCode::kDeadlineExceeded, std::move(message));
}
inline Status unavailable(std::string message) {
  return Status(StatusCode::kUnavailable, std::move(message));
}
inline Status internal_error(std::string message) {
  return Status(StatusCode::kInternal, std::move(message));
}

// Either a value or a failed Status. Accessing value() of a failed StatusOr is a
// programming error (checked by an assert in debug builds).
template <typename T>
class StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  StatusOr(Status status) : status_(std::move(status)) {}  // NOLINT

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() { return *value_; }
  const T& value() const { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace kiln

#define KILN_RETURN_IF_ERROR(expression)             \
  do {                                               \
    ::kiln::Status kiln_status_ = (expression);      \
    if (!kiln_status_.ok()) return kiln_status_;     \
  } while (false)
