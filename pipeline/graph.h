// Graph: a validated, instantiated pipeline spec, ready for the executor.
//
// Graph::build checks everything that can be checked before data is seen and throws a
// ConfigError (ArgumentTypeError for wrong types) naming the node and argument:
//   unknown operator or argument, missing required argument, wrong type or range,
//   dangling or missing inputs, unused nodes, cycles, stage order (cpu -> mixed -> gpu),
//   one reader per pipeline, and what operators say about their inputs (infer_outputs).
//
// check_arg and closest_name are the checks Graph::build runs on each argument, public so that
// the Python bindings check an fn.* call with the same code (and the same messages) at the line
// that made it, before any graph exists.
//
// Thread safety: immutable after build; shared by all worker threads. The free functions are
// pure.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "media/api.h"
#include "pipeline/operator.h"
#include "pipeline/registry.h"
#include "pipeline/spec.h"

HDL_API_BEGIN
namespace hdl {

/// The closest of `candidates` to `name` (Levenshtein, fewer than name.size() / 2 + 2 edits),
/// or "" when none is that close: the "did you mean" of every unknown-name message.
std::string closest_name(const std::string& name, const std::vector<std::string>& candidates);

/// One constant argument checked as Graph::build checks it: `value` converted to `arg.type`
/// (int -> float, list[int] -> list[float]), then `arg.validate` run on it. `subject` starts
/// any message: `resize "r": argument "size"` in a graph, `resize() argument 'size'` from a
/// Python call. Returns the converted value; throws ArgumentTypeError for a wrong type
/// (`... must be list[int], got str "big"`), ConfigError for a refused value (`... must be
/// one of "bilinear", ...`).
ArgValue check_arg(const ArgSchema& arg, const ArgValue& value, const std::string& subject);

/// A node of a built graph. Values (node outputs) are numbered densely across the graph.
struct GraphNode {
  NodeSpec spec;                      ///< arguments validated, defaults filled, types converted
  const OpSchema* schema = nullptr;
  std::unique_ptr<Operator> op;
  std::vector<int> inputs;            ///< value ids
  std::vector<std::pair<std::string, int>> arg_inputs;  ///< argument name, value id
  std::vector<int> outputs;           ///< value ids
};

class Graph {
 public:
  /// Validates `spec` against `registry` and instantiates its operators. Throws ConfigError.
  static Graph build(const PipelineSpec& spec, const OpRegistry& registry = OpRegistry::builtin());

  /// Nodes in topological order (a node after every node it reads from).
  const std::vector<GraphNode>& nodes() const { return nodes_; }
  /// Index (in nodes()) of the reader.
  int source() const { return source_; }
  const SourceOperator& source_op() const;
  SourceOperator& source_op();
  int num_values() const { return static_cast<int>(value_specs_.size()); }
  const TensorSpec& value_spec(int value) const { return value_specs_[value]; }
  /// "decode.images" style name of a value, for messages.
  const std::string& value_name(int value) const { return value_names_[value]; }
  /// The pipeline outputs, as value ids, in order.
  const std::vector<int>& outputs() const { return outputs_; }

 private:
  std::vector<GraphNode> nodes_;
  std::vector<TensorSpec> value_specs_;
  std::vector<std::string> value_names_;
  std::vector<int> outputs_;
  int source_ = -1;
};

}  // namespace hdl
HDL_API_END
