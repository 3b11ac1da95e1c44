#include "pipeline/spec.h"

#include "pipeline/errors.h"

namespace hdl {
namespace {
template <typename T>
const T& get_typed(const NodeSpec& n, const std::string& arg, ArgType type) {
  auto it = n.args.find(arg);
  if (it == n.args.end()) throw ConfigError(n.describe() + ": no argument \"" + arg + "\"");
  if (it->second.type() != type)
    throw ArgumentTypeError(n.describe() + ": argument \"" + arg + "\" is " +
                            arg_type_name(it->second.type()) + ", not " + arg_type_name(type));
  return it->second.get<T>();
}
}  // namespace

bool NodeSpec::get_bool(const std::string& a) const { return get_typed<bool>(*this, a, ArgType::kBool); }
int64_t NodeSpec::get_int(const std::string& a) const { return get_typed<int64_t>(*this, a, ArgType::kInt); }
double NodeSpec::get_float(const std::string& a) const { return get_typed<double>(*this, a, ArgType::kFloat); }
const std::string& NodeSpec::get_string(const std::string& a) const {
  return get_typed<std::string>(*this, a, ArgType::kString);
}
const std::vector<int64_t>& NodeSpec::get_ints(const std::string& a) const {
  return get_typed<std::vector<int64_t>>(*this, a, ArgType::kInts);
}
const std::vector<double>& NodeSpec::get_floats(const std::string& a) const {
  return get_typed<std::vector<double>>(*this, a, ArgType::kFloats);
}
const std::vector<std::string>& NodeSpec::get_strings(const std::string& a) const {
  return get_typed<std::vector<std::string>>(*this, a, ArgType::kStrings);
}

NodeHandle PipelineSpec::add(const std::string& op, std::vector<TensorRef> inputs, Args args,
                             ArgInputs arg_inputs, std::string name, Stage stage) {
  NodeSpec n;
  n.op = op;
  if (name.empty()) {
    int same = 0;
    for (const auto& other : nodes_) same += other.op == op;
    name = op + "_" + std::to_string(same);
  }
  n.name = std::move(name);
  n.inputs = std::move(inputs);
  for (auto& [k, v] : args) {
    if (!n.args.emplace(k, std::move(v)).second)
      throw ConfigError(n.describe() + ": argument \"" + k + "\" given twice");
  }
  for (auto& [k, v] : arg_inputs) n.arg_inputs[k] = v;
  n.stage = stage;
  nodes_.push_back(std::move(n));
  return {static_cast<int>(nodes_.size()) - 1};
}

}  // namespace hdl
