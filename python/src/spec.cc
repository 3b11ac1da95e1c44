// Pipeline specs between Python and C++: the dict habana_dataloader._graph.to_spec makes (the
// JSON document's shape, with Python values) <-> PipelineSpec, in one step each way, and the
// JSON text form (pipeline/spec_json.h) for Pipeline.to_json / from_json.
#include <pybind11/stl.h>

#include <map>
#include <optional>
#include <string>

#include "pipeline/errors.h"
#include "pipeline/spec_json.h"
#include "python/src/bindings.h"

namespace hdl::python {
namespace {

TensorRef ref_from_py(py::handle r, const std::map<std::string, int>& index, const std::string& where) {
  const auto d = py::reinterpret_borrow<py::dict>(r);
  const std::string node = py::str(d["node"]);
  auto it = index.find(node);
  if (it == index.end()) throw ConfigError(where + ": no node named \"" + node + "\"");
  return {it->second, d.contains("output") ? d["output"].cast<int>() : 0};
}

py::dict ref_to_py(const PipelineSpec& spec, TensorRef r) {
  py::dict d;
  d["node"] = spec.nodes().at(r.node).name;
  d["output"] = r.output;
  return d;
}

}  // namespace

PipelineSpec spec_from_py(const py::dict& doc) {
  const py::list nodes = doc["nodes"];
  std::map<std::string, int> index;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (!index.emplace(py::str(nodes[i]["name"]), static_cast<int>(i)).second)
      throw ConfigError("two nodes are named \"" + std::string(py::str(nodes[i]["name"])) + "\"");
  PipelineSpec spec;
  for (const py::handle h : nodes) {
    const auto n = py::reinterpret_borrow<py::dict>(h);
    const std::string op = py::str(n["op"]), name = py::str(n["name"]);
    const std::string where = op + " \"" + name + "\"";
    Stage stage = Stage::kCpu;
    if (n.contains("stage")) {
      const std::string s = py::str(n["stage"]);
      const std::optional<Stage> parsed = stage_from_name(s);
      if (!parsed) throw ConfigError(where + ": stage must be \"cpu\", \"mixed\" or \"gpu\", got \"" + s + "\"");
      stage = *parsed;
    }
    std::vector<TensorRef> inputs;
    for (const py::handle r : py::list(n["inputs"])) inputs.push_back(ref_from_py(r, index, where));
    PipelineSpec::Args args;
    for (auto [k, v] : py::dict(n["args"])) args.emplace_back(py::str(k), to_arg(v, py::str(k)));
    PipelineSpec::ArgInputs arg_inputs;
    for (auto [k, r] : py::dict(n["arg_inputs"])) arg_inputs.emplace_back(py::str(k), ref_from_py(r, index, where));
    spec.add(op, std::move(inputs), std::move(args), std::move(arg_inputs), name, stage);
  }
  std::vector<TensorRef> outputs;
  for (const py::handle r : py::list(doc["outputs"])) outputs.push_back(ref_from_py(r, index, "pipeline output"));
  spec.set_outputs(std::move(outputs));
  return spec;
}

py::dict spec_to_py(const PipelineSpec& spec) {
  py::list nodes;
  for (const NodeSpec& n : spec.nodes()) {
    py::dict d, args, arg_inputs;
    py::list inputs;
    d["name"] = n.name;
    d["op"] = n.op;
    d["stage"] = stage_name(n.stage);
    for (TensorRef r : n.inputs) inputs.append(ref_to_py(spec, r));
    d["inputs"] = inputs;
    for (const auto& [k, v] : n.args) args[py::str(k)] = from_arg(v);
    d["args"] = args;
    for (const auto& [k, r] : n.arg_inputs) arg_inputs[py::str(k)] = ref_to_py(spec, r);
    d["arg_inputs"] = arg_inputs;
    nodes.append(d);
  }
  py::list outputs;
  for (TensorRef r : spec.outputs()) outputs.append(ref_to_py(spec, r));
  py::dict doc;
  doc["format"] = "hdl-pipeline-spec";
  doc["version"] = 1;
  doc["nodes"] = nodes;
  doc["outputs"] = outputs;
  return doc;
}

void bind_spec(py::module_& m) {
  m.def("spec_to_json", [](const py::dict& spec, int indent) { return to_json(spec_from_py(spec), indent); },
        py::arg("spec"), py::arg("indent") = 2, "A spec dict (_graph.to_spec) as a JSON document.");
  m.def("spec_from_json", [](const std::string& text) { return spec_to_py(spec_from_json(text)); },
        py::arg("text"), "A JSON document as a spec dict (ValueError names the JSON path of a mistake).");
}

}  // namespace hdl::python
