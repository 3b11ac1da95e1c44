// Exceptions for configuration and usage errors, and the one for data errors that reach the
// consumer. (Data errors travel inside the library as hdl::Status; see media/status.h.)
//
// The Python bindings map: ArgumentTypeError -> TypeError, ConfigError -> ValueError,
// DataError -> RuntimeError (with the status code attached), PipelineStateError -> RuntimeError.
#pragma once

#include <stdexcept>
#include <string>

#include "media/api.h"
#include "media/status.h"

HDL_API_BEGIN
namespace hdl {

/// A pipeline description is wrong: unknown operator or argument, out-of-range value, dangling
/// input, cycle, bad device order. The message names the node and the argument.
class ConfigError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// An argument has the wrong type ("size" given a string where a list of ints is expected).
class ArgumentTypeError : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

/// A sample could not be produced and the error policy says raise (or the failure budget of
/// the skip policy ran out). The message names operator, sample and file.
class DataError : public std::runtime_error {
 public:
  explicit DataError(Status status) : std::runtime_error(status.message()), status_(std::move(status)) {}
  const Status& status() const { return status_; }

 private:
  Status status_;
};

/// The pipeline was used out of order (restoring a state from another pipeline, ...).
class PipelineStateError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

}  // namespace hdl
HDL_API_END
