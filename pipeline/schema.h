// Operator schemas: an operator's contract as data.
//
// One schema per operator gives its name, doc, inputs, outputs, typed arguments (defaults,
// validators, whether a per-sample input may drive them), whether it draws random numbers and
// which stages it runs on. The same schema validates a pipeline before it runs, generates the
// Python fn.* functions and their docstrings, and the reference docs (docs/operators.md).
//
// Thread safety: schemas are immutable after registration.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "media/api.h"

HDL_API_BEGIN
namespace hdl {

class Operator;
struct NodeSpec;

/// The type of an argument.
enum class ArgType { kBool, kInt, kFloat, kString, kInts, kFloats, kStrings };
const char* arg_type_name(ArgType t);  ///< "bool", "int", "float", "str", "list[int]", ...

/// An argument value. Constructible from literals: {"size", {224, 224}}, {"shuffle", true}.
class ArgValue {
 public:
  using Variant = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>,
                               std::vector<double>, std::vector<std::string>>;
  ArgValue() = default;
  ArgValue(bool v) : v_(v) {}
  ArgValue(int v) : v_(int64_t{v}) {}
  ArgValue(int64_t v) : v_(v) {}
  ArgValue(double v) : v_(v) {}
  ArgValue(const char* v) : v_(std::string(v)) {}
  ArgValue(std::string v) : v_(std::move(v)) {}
  ArgValue(std::vector<int64_t> v) : v_(std::move(v)) {}
  ArgValue(std::vector<double> v) : v_(std::move(v)) {}
  ArgValue(std::vector<std::string> v) : v_(std::move(v)) {}
  ArgValue(std::initializer_list<int> v) : v_(std::vector<int64_t>(v.begin(), v.end())) {}
  ArgValue(std::initializer_list<double> v) : v_(std::vector<double>(v)) {}
  ArgValue(std::initializer_list<const char*> v) : v_(std::vector<std::string>(v.begin(), v.end())) {}

  ArgType type() const { return static_cast<ArgType>(v_.index()); }
  const Variant& variant() const { return v_; }
  template <typename T> const T& get() const { return std::get<T>(v_); }
  /// Converts to `t` where that loses nothing (int -> float, list[int] -> list[float]);
  /// nullopt otherwise.
  std::optional<ArgValue> convert_to(ArgType t) const;
  /// Python-like text: True, 3, 0.5, "rgb", [224, 224].
  std::string to_string() const;
  friend bool operator==(const ArgValue&, const ArgValue&) = default;

 private:
  Variant v_;
};

/// A validator returns an error text ("must be in [0, 1]") or an empty string.
using ArgValidator = std::function<std::string(const ArgValue&)>;

/// Validators for common constraints. Lists are checked element-wise.
ArgValidator in_range(double lo, double hi);
ArgValidator at_least(double lo);
ArgValidator one_of(std::vector<std::string> choices);
ArgValidator list_size(std::vector<size_t> allowed_sizes);
ArgValidator all_of(std::vector<ArgValidator> validators);

struct ArgSchema {
  std::string name;
  ArgType type = ArgType::kInt;
  std::optional<ArgValue> default_value;  ///< nullopt: required
  std::string doc;
  ArgValidator validate;                  ///< may be empty
  bool per_sample = false;                ///< may be bound to a per-sample input (argument input)
};

struct PortSchema {
  std::string name;
  std::string doc;
};

/// Where an operator runs. Stages must be ordered cpu -> mixed -> device along every edge.
enum class Stage { kCpu = 0, kMixed = 1, kDevice = 2 };
const char* stage_name(Stage s);  ///< "cpu", "mixed", "gpu"

struct OpSchema {
  std::string name;
  std::string doc;
  std::vector<PortSchema> inputs;
  std::vector<PortSchema> outputs;
  std::vector<ArgSchema> args;
  bool uses_randomness = false;
  bool is_source = false;  ///< a reader: no inputs, defines the dataset and the epoch
  std::vector<Stage> stages = {Stage::kCpu};
  /// Builds the operator from a node whose arguments have been validated against this schema.
  std::function<std::unique_ptr<Operator>(const NodeSpec&)> create;
  /// Builds the gpu-stage operator (whose run_batch does the work), or the mixed-stage one
  /// (host half: run() per sample on the cpu stage, writing the outputs run_batch reads as
  /// BatchIO::staged; device half: run_batch in the device stage); set for operators with
  /// Stage::kDevice or Stage::kMixed in `stages`. Same node, same arguments, same random draws
  /// per sample.
  std::function<std::unique_ptr<Operator>(const NodeSpec&)> create_device;

  const ArgSchema* find_arg(const std::string& name) const;
  int output_index(const std::string& name) const;  ///< -1 if absent
  /// Markdown reference for docs/operators.md and the Python docstrings.
  std::string reference_doc() const;
};

}  // namespace hdl
HDL_API_END
