// PipelineSpec: the declarative description of a pipeline graph.
//
// A spec is plain data (operator names, argument values, edges) built in C++, from Python, or
// from a JSON file; nothing is checked until it is validated (pipeline/graph.h), which names
// the node and argument of every mistake.
//
//   hdl::PipelineSpec spec;
//   auto files  = spec.add("file_reader", {}, {{"file_root", "data/train"}, {"shuffle", true}});
//   auto images = spec.add("image_decoder", {files[0]}, {{"output_type", "rgb"}});
//   auto small  = spec.add("resize", {images[0]}, {{"size", {224, 224}}});
//   spec.set_outputs({small[0], files[1]});
//
// Thread safety: a value; not synchronised.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "media/api.h"
#include "pipeline/schema.h"

HDL_API_BEGIN
namespace hdl {

class Dataset;

/// An output of a node in a spec: node index and output index.
struct TensorRef {
  int node = -1;
  int output = 0;
  friend bool operator==(const TensorRef&, const TensorRef&) = default;
  friend auto operator<=>(const TensorRef&, const TensorRef&) = default;
};

/// One node: an operator with its arguments and inputs.
struct NodeSpec {
  std::string op;                             ///< schema name
  std::string name;                           ///< unique in the spec; seeds its random stream
  std::vector<TensorRef> inputs;
  std::map<std::string, ArgValue> args;       ///< after validation: every argument, defaults filled
  std::map<std::string, TensorRef> arg_inputs;  ///< arguments driven per sample by another node
  Stage stage = Stage::kCpu;
  /// A reader's samples given in memory (Dataset::from_samples) instead of its file_root or
  /// file_list: typed, never text. Not part of the JSON form (to_json refuses such a spec).
  std::shared_ptr<const Dataset> samples;

  /// Typed access to validated arguments. Throws ConfigError if absent or of another type.
  bool get_bool(const std::string& arg) const;
  int64_t get_int(const std::string& arg) const;
  double get_float(const std::string& arg) const;
  const std::string& get_string(const std::string& arg) const;
  const std::vector<int64_t>& get_ints(const std::string& arg) const;
  const std::vector<double>& get_floats(const std::string& arg) const;
  const std::vector<std::string>& get_strings(const std::string& arg) const;
  bool has_arg(const std::string& arg) const { return args.count(arg) != 0; }
  /// `op "name"`, the prefix of every error about this node.
  std::string describe() const { return op + " \"" + name + "\""; }
};

/// Handle returned by PipelineSpec::add: index its outputs with [].
struct NodeHandle {
  int node = -1;
  TensorRef operator[](int output) const { return {node, output}; }
};

class PipelineSpec {
 public:
  using Args = std::vector<std::pair<std::string, ArgValue>>;
  using ArgInputs = std::vector<std::pair<std::string, TensorRef>>;

  /// Adds a node running `op` on `inputs`. `name` defaults to "<op>_<n>"; `stage` to cpu.
  NodeHandle add(const std::string& op, std::vector<TensorRef> inputs = {}, Args args = {},
                 ArgInputs arg_inputs = {}, std::string name = "", Stage stage = Stage::kCpu);
  /// The tensors a pipeline iteration returns, in order.
  void set_outputs(std::vector<TensorRef> outputs) { outputs_ = std::move(outputs); }

  const std::vector<NodeSpec>& nodes() const { return nodes_; }
  std::vector<NodeSpec>& nodes() { return nodes_; }
  const std::vector<TensorRef>& outputs() const { return outputs_; }

 private:
  std::vector<NodeSpec> nodes_;
  std::vector<TensorRef> outputs_;
};

}  // namespace hdl
HDL_API_END
