#include "pipeline/graph.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "pipeline/errors.h"

namespace hdl {
namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return row[b.size()];
}

// " (did you mean \"x\"?)" when a candidate is close, else "".
std::string suggest(const std::string& name, const std::vector<std::string>& candidates) {
  const std::string best = closest_name(name, candidates);
  return best.empty() ? "" : " (did you mean \"" + best + "\"?)";
}

std::string join_names(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

void validate_args(NodeSpec& node, const OpSchema& schema) {
  if (node.samples && !(schema.is_source && schema.find_arg("file_list")))
    throw ConfigError(node.describe() + ": samples given in memory (files=) are for readers of files only");
  std::vector<std::string> accepted;
  for (const auto& a : schema.args) accepted.push_back(a.name);
  for (const auto& [name, value] : node.args) {
    if (!schema.find_arg(name))
      throw ConfigError(node.describe() + ": unknown argument \"" + name + "\"" +
                        suggest(name, accepted) + "; accepted: " + join_names(accepted));
  }
  std::map<std::string, ArgValue> resolved;
  for (const auto& a : schema.args) {
    auto it = node.args.find(a.name);
    if (it == node.args.end()) {
      if (node.arg_inputs.count(a.name)) {
        if (a.default_value) resolved[a.name] = *a.default_value;
        continue;
      }
      if (!a.default_value)
        throw ConfigError(node.describe() + ": missing required argument \"" + a.name + "\" (" +
                          a.doc + ")");
      resolved[a.name] = *a.default_value;
      continue;
    }
    resolved[a.name] = check_arg(a, it->second, node.describe() + ": argument \"" + a.name + "\"");
  }
  for (const auto& [name, ref] : node.arg_inputs) {
    const ArgSchema* a = schema.find_arg(name);
    if (!a)
      throw ConfigError(node.describe() + ": unknown argument \"" + name + "\"" +
                        suggest(name, accepted) + "; accepted: " + join_names(accepted));
    if (!a->per_sample)
      throw ConfigError(node.describe() + ": argument \"" + name +
                        "\" cannot be driven per sample by another operator's output");
    if (node.args.count(name))
      throw ConfigError(node.describe() + ": argument \"" + name +
                        "\" given both as a constant and as a per-sample input");
  }
  node.args = std::move(resolved);
}

void check_ref(const NodeSpec& node, const std::string& what, const TensorRef& ref,
               const std::vector<NodeSpec>& nodes, const OpRegistry& registry) {
  if (ref.node < 0 || ref.node >= static_cast<int>(nodes.size()))
    throw ConfigError(node.describe() + ": " + what + " refers to node #" +
                      std::to_string(ref.node) + ", which does not exist");
  const OpSchema* producer = registry.find(nodes[ref.node].op);
  const int n_out = producer ? static_cast<int>(producer->outputs.size()) : 0;
  if (ref.output < 0 || ref.output >= n_out)
    throw ConfigError(node.describe() + ": " + what + " refers to output " +
                      std::to_string(ref.output) + " of " + nodes[ref.node].describe() +
                      ", which has " + std::to_string(n_out) + " output(s)");
}

// Kahn's algorithm; throws naming the nodes on a cycle.
std::vector<int> topological_order(const std::vector<NodeSpec>& nodes) {
  const int n = static_cast<int>(nodes.size());
  std::vector<std::set<int>> deps(n);
  std::vector<std::vector<int>> users(n);
  for (int i = 0; i < n; ++i) {
    for (const auto& r : nodes[i].inputs) deps[i].insert(r.node);
    for (const auto& [name, r] : nodes[i].arg_inputs) deps[i].insert(r.node);
    for (int d : deps[i]) users[d].push_back(i);
  }
  std::vector<int> order, ready;
  std::vector<size_t> missing(n);
  for (int i = 0; i < n; ++i)
    if ((missing[i] = deps[i].size()) == 0) ready.push_back(i);
  while (!ready.empty()) {
    // Lowest index first, so the order follows the spec where the edges allow.
    auto it = std::min_element(ready.begin(), ready.end());
    const int i = *it;
    ready.erase(it);
    order.push_back(i);
    for (int u : users[i])
      if (--missing[u] == 0) ready.push_back(u);
  }
  if (static_cast<int>(order.size()) != n) {
    std::vector<std::string> cyclic;
    for (int i = 0; i < n; ++i)
      if (missing[i] > 0) cyclic.push_back(nodes[i].describe());
    throw ConfigError("the pipeline graph has a cycle through: " + join_names(cyclic));
  }
  return order;
}

void check_stages(const std::vector<NodeSpec>& nodes) {
  for (const auto& node : nodes) {
    auto check = [&](const TensorRef& r) {
      const NodeSpec& from = nodes[r.node];
      // A mixed node reads cpu values only: its host half runs on the cpu stage.
      const bool ok = from.stage == Stage::kCpu ? true
                      : from.stage == Stage::kMixed ? node.stage == Stage::kDevice
                                                    : node.stage == Stage::kDevice;
      if (!ok)
        throw ConfigError(node.describe() + " (" + stage_name(node.stage) + ") reads the output of " +
                          from.describe() + " (" + stage_name(from.stage) +
                          "): stages must run cpu -> mixed -> gpu, and a mixed operator reads the cpu stage only");
    };
    for (const auto& r : node.inputs) check(r);
    for (const auto& [name, r] : node.arg_inputs) check(r);
  }
}

}  // namespace

std::string closest_name(const std::string& name, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = name.size() / 2 + 2;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(name, c);
    if (d < best_d) best_d = d, best = c;
  }
  return best;
}

ArgValue check_arg(const ArgSchema& arg, const ArgValue& value, const std::string& subject) {
  std::optional<ArgValue> converted = value.convert_to(arg.type);
  if (!converted)
    throw ArgumentTypeError(subject + " must be " + arg_type_name(arg.type) + ", got " +
                            arg_type_name(value.type()) + " " + value.to_string());
  if (arg.validate)
    if (std::string err = arg.validate(*converted); !err.empty()) throw ConfigError(subject + " " + err);
  return std::move(*converted);
}

const SourceOperator& Graph::source_op() const {
  return static_cast<const SourceOperator&>(*nodes_[source_].op);
}

SourceOperator& Graph::source_op() { return static_cast<SourceOperator&>(*nodes_[source_].op); }

Graph Graph::build(const PipelineSpec& pipeline, const OpRegistry& registry) {
  std::vector<NodeSpec> specs = pipeline.nodes();
  if (specs.empty()) throw ConfigError("the pipeline has no operators");
  if (pipeline.outputs().empty()) throw ConfigError("the pipeline has no outputs (set_outputs)");

  std::vector<std::string> known;
  for (const OpSchema* s : registry.all()) known.push_back(s->name);
  std::set<std::string> names;
  std::vector<const OpSchema*> schemas;
  for (auto& node : specs) {
    const OpSchema* schema = registry.find(node.op);
    if (!schema)
      throw ConfigError("node \"" + node.name + "\": unknown operator \"" + node.op + "\"" +
                        suggest(node.op, known));
    if (!names.insert(node.name).second)
      throw ConfigError("two nodes are named \"" + node.name + "\"; node names must be unique");
    if (std::find(schema->stages.begin(), schema->stages.end(), node.stage) == schema->stages.end())
      throw ConfigError(node.describe() + ": cannot run on stage \"" + stage_name(node.stage) + "\"");
    if (node.inputs.size() != schema->inputs.size())
      throw ConfigError(node.describe() + ": takes " + std::to_string(schema->inputs.size()) +
                        " input(s), got " + std::to_string(node.inputs.size()));
    validate_args(node, *schema);
    schemas.push_back(schema);
  }
  for (const auto& node : specs) {
    for (size_t i = 0; i < node.inputs.size(); ++i)
      check_ref(node, "input " + std::to_string(i), node.inputs[i], specs, registry);
    for (const auto& [name, r] : node.arg_inputs)
      check_ref(node, "argument \"" + name + "\"", r, specs, registry);
  }
  NodeSpec outputs_node;
  outputs_node.op = "pipeline";
  outputs_node.name = "outputs";
  for (size_t i = 0; i < pipeline.outputs().size(); ++i)
    check_ref(outputs_node, "output " + std::to_string(i), pipeline.outputs()[i], specs, registry);

  const std::vector<int> order = topological_order(specs);
  check_stages(specs);

  // Every node must feed a pipeline output, directly or through others.
  std::vector<bool> used(specs.size(), false);
  std::vector<int> stack;
  for (const auto& r : pipeline.outputs()) stack.push_back(r.node);
  while (!stack.empty()) {
    const int i = stack.back();
    stack.pop_back();
    if (used[i]) continue;
    used[i] = true;
    for (const auto& r : specs[i].inputs) stack.push_back(r.node);
    for (const auto& [name, r] : specs[i].arg_inputs) stack.push_back(r.node);
  }
  for (size_t i = 0; i < specs.size(); ++i)
    if (!used[i])
      throw ConfigError(specs[i].describe() + ": its outputs are never used (neither a pipeline "
                        "output nor the input of an operator that leads to one)");

  Graph g;
  std::vector<int> first_value(specs.size());  // value id of output 0 of spec node i
  int next_value = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    first_value[i] = next_value;
    next_value += static_cast<int>(schemas[i]->outputs.size());
  }
  g.value_specs_.resize(next_value);
  g.value_names_.resize(next_value);
  for (int idx : order) {
    if (schemas[idx]->is_source) {
      if (g.source_ >= 0)
        throw ConfigError(specs[idx].describe() + ": a pipeline has exactly one reader, and " +
                          g.nodes_[g.source_].spec.describe() + " is already one");
      g.source_ = static_cast<int>(g.nodes_.size());
    }
    GraphNode node;
    node.schema = schemas[idx];
    node.spec = specs[idx];
    std::vector<TensorSpec> in_specs;
    for (const auto& r : specs[idx].inputs) {
      node.inputs.push_back(first_value[r.node] + r.output);
      in_specs.push_back(g.value_specs_[node.inputs.back()]);
    }
    for (const auto& [name, r] : specs[idx].arg_inputs)
      node.arg_inputs.emplace_back(name, first_value[r.node] + r.output);
    try {
      const bool device = node.spec.stage != Stage::kCpu;
      if (device && !node.schema->create_device)
        throw ConfigError(std::string("has no ") + stage_name(node.spec.stage) + "-stage implementation");
      node.op = device ? node.schema->create_device(node.spec) : node.schema->create(node.spec);
      std::vector<TensorSpec> out_specs = node.op->infer_outputs(in_specs);
      if (out_specs.size() != node.schema->outputs.size())
        throw ConfigError("produces " + std::to_string(out_specs.size()) + " outputs, schema says " +
                          std::to_string(node.schema->outputs.size()));
      for (size_t o = 0; o < out_specs.size(); ++o) {
        const int v = first_value[idx] + static_cast<int>(o);
        node.outputs.push_back(v);
        g.value_specs_[v] = out_specs[o];
        g.value_names_[v] = node.spec.name + "." + node.schema->outputs[o].name;
      }
    } catch (const ConfigError& e) {
      const std::string prefix = node.spec.describe();
      const std::string msg = e.what();
      const std::string full = msg.rfind(prefix, 0) == 0 ? msg : prefix + ": " + msg;
      if (dynamic_cast<const ArgumentTypeError*>(&e)) throw ArgumentTypeError(full);
      throw ConfigError(full);
    }
    g.nodes_.push_back(std::move(node));
  }
  if (g.source_ < 0)
    throw ConfigError("the pipeline has no reader (e.g. file_reader): something must produce samples");
  for (const auto& r : pipeline.outputs()) g.outputs_.push_back(first_value[r.node] + r.output);
  return g;
}

}  // namespace hdl
