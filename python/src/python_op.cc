// python_function: a user's Python callable as a per-sample operator.
//
// Each worker thread takes the GIL only for the call itself, so Python functions serialise on
// the GIL while the rest of the graph (decode, resize, ...) runs in parallel around them.
#include <pybind11/numpy.h>

#include <cstring>

#include "pipeline/errors.h"
#include "pipeline/operator.h"
#include "python/src/bindings.h"

namespace hdl::python {
namespace {

constexpr const char* kOpName = "python_function";

// The callable, released under the GIL from whichever thread drops the last reference.
using SharedFunction = std::shared_ptr<py::object>;
SharedFunction share(py::object f) {
  return SharedFunction(new py::object(std::move(f)), [](py::object* p) {
    py::gil_scoped_acquire gil;
    delete p;
  });
}

Layout parse_layout(const std::string& s) {
  if (s.empty() || s == "none") return Layout::kNone;
  for (Layout l : {Layout::kHWC, Layout::kCHW, Layout::kFHWC, Layout::kFCHW, Layout::kCFHW})
    if (s == layout_name(l)) return l;
  throw ConfigError("argument \"output_layout\" must be one of \"\", HWC, CHW, FHWC, FCHW, CFHW, got \"" + s + "\"");
}

class PythonFunction final : public Operator {
 public:
  PythonFunction(const NodeSpec& n, SharedFunction fn, int num_outputs)
      : fn_(std::move(fn)), num_outputs_(num_outputs), describe_(n.describe()) {
    const auto& shape = n.get_ints("output_shape");
    declared_shape_ = !shape.empty();
    shape_ = Shape(shape.begin(), shape.end());
    if (const std::string& d = n.get_string("dtype"); !d.empty()) dtype_ = parse_dtype(d);
    layout_ = parse_layout(n.get_string("output_layout"));
    declared_layout_ = !n.get_string("output_layout").empty();
  }

  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec> in) const override {
    TensorSpec s;
    s.dtype = dtype_ ? *dtype_ : (in.empty() ? DType::kU8 : in[0].dtype);
    if (declared_shape_) {
      s.shape = shape_;
    } else if (!in.empty()) {
      for (int d = 0; d < in[0].shape.ndim(); ++d) s.shape.push_back(-1);
      if (s.shape.empty()) s.shape.push_back(-1);
    } else {
      s.shape = Shape{-1};
    }
    s.layout = declared_layout_ ? layout_ : (!in.empty() && in[0].shape.ndim() == s.shape.ndim() ? in[0].layout : Layout::kNone);
    expected_ = s;
    return std::vector<TensorSpec>(num_outputs_, s);
  }

  Status run(SampleIO& io) const override {
    py::gil_scoped_acquire gil;
    try {
      py::tuple args(io.num_inputs());
      for (int i = 0; i < io.num_inputs(); ++i) args[i] = view_to_numpy(io.input(i));
      py::object result = (*fn_)(*args);
      if (num_outputs_ == 1) return write(io, 0, result);
      if (!py::isinstance<py::tuple>(result) && !py::isinstance<py::list>(result))
        return Status::invalid_argument("returned " + type_name(result) + ", expected a tuple of " + std::to_string(num_outputs_));
      py::sequence seq = result;
      if (static_cast<int>(seq.size()) != num_outputs_)
        return Status::invalid_argument("returned " + std::to_string(seq.size()) + " values, expected num_outputs=" + std::to_string(num_outputs_));
      for (int k = 0; k < num_outputs_; ++k) HDL_RETURN_IF_ERROR(write(io, k, seq[k]));
      return Status::ok();
    } catch (py::error_already_set& e) {
      return Status::invalid_data(std::string("the Python function raised ") + e.what());
    } catch (const std::exception& e) {
      return Status::invalid_argument(std::string("the Python function's result: ") + e.what());
    }
  }

 private:
  static std::string type_name(py::handle h) { return py::str(py::type::handle_of(h).attr("__name__")); }

  // Copies one returned array (numpy, torch or anything numpy.asarray takes) into output k.
  Status write(SampleIO& io, int k, py::object r) const {
    if (py::hasattr(r, "detach") && py::hasattr(r, "numpy")) r = r.attr("detach")().attr("cpu")().attr("numpy")();
    py::module_ np = py::module_::import("numpy");
    if (dtype_) {
      if (*dtype_ == DType::kBF16) return Status::invalid_argument("dtype bfloat16 cannot come from numpy");
      r = np.attr("asarray")(r, py::str(dtype_name(*dtype_)));
    }
    py::array a = np.attr("ascontiguousarray")(r);
    const TensorSpec& want = expected_;
    const std::string got = py::str(a.dtype());
    if (got != dtype_name(want.dtype))
      return Status::invalid_argument("returned " + got + " where " + dtype_name(want.dtype) +
                                      " was expected (give dtype=\"" + got + "\" to declare it)");
    Shape shape;
    for (py::ssize_t d = 0; d < a.ndim(); ++d) shape.push_back(a.shape(d));
    bool ok = shape.ndim() == want.shape.ndim();
    for (int d = 0; ok && d < shape.ndim(); ++d) ok = want.shape[d] < 0 || want.shape[d] == shape[d];
    if (!ok)
      return Status::invalid_argument("returned shape " + shape.to_string() + ", declared or inferred " +
                                      want.shape.to_string() + " (give output_shape= to declare it)");
    HDL_ASSIGN_OR_RETURN(TensorView out, io.output(k, shape, want.dtype, want.layout));
    std::memcpy(out.data, a.data(), out.num_bytes());
    return Status::ok();
  }

  SharedFunction fn_;
  int num_outputs_;
  std::string describe_;
  bool declared_shape_ = false;
  Shape shape_;
  std::optional<DType> dtype_;
  Layout layout_ = Layout::kNone;
  bool declared_layout_ = false;
  mutable TensorSpec expected_;  // set once by infer_outputs, before any run()
};

OpSchema base_schema() {
  OpSchema s;
  s.name = kOpName;
  s.doc = "Runs a Python callable per sample: function(*inputs) gets read-only numpy views of the "
          "sample's inputs (valid only during the call: copy what you keep) and returns a numpy "
          "array or torch tensor (a tuple of num_outputs of them). Outputs are ragged unless "
          "output_shape declares every dim. Calls serialise on the GIL (the rest of the graph "
          "keeps running in parallel), so keep the function small. Saved in JSON by its import "
          "path (module:qualname).";
  s.inputs = {{"input", "any tensor (any number of inputs)"}};
  s.outputs = {{"output", "the function's result"}};
  s.args = {
      {"function", ArgType::kString, std::nullopt, "the callable (fn.python_function takes the object; the spec stores its name)"},
      {"num_outputs", ArgType::kInt, ArgValue(1), "how many arrays the function returns", in_range(1, 64)},
      {"batch_processing", ArgType::kBool, ArgValue(false), "True: called once per batch, in the consumer thread, with the batch's tensors (outputs must be pipeline outputs)"},
      {"output_shape", ArgType::kInts, ArgValue(std::vector<int64_t>{}), "per-sample shape of every output, -1 for a dim only known at run time; [] = unknown (ragged)"},
      {"dtype", ArgType::kString, ArgValue(""), "output dtype (results are converted to it); \"\" = the first input's dtype"},
      {"output_layout", ArgType::kString, ArgValue(""), "HWC, CHW, ...; \"\" = the first input's when the ndim matches"},
  };
  s.create = [](const NodeSpec& n) -> std::unique_ptr<Operator> {
    throw ConfigError(n.describe() + ": a python_function runs only in a pipeline built from Python");
  };
  return s;
}

}  // namespace

OpSchema python_function_schema() { return base_schema(); }

std::shared_ptr<OpRegistry> registry_for(PipelineSpec& spec, const py::dict& functions) {
  auto registry = std::make_shared<OpRegistry>(OpRegistry::builtin());
  std::map<std::string, bool> added;
  for (NodeSpec& n : spec.nodes()) {
    if (n.op != kOpName) continue;
    auto f = n.args.find("function");
    if (f == n.args.end() || f->second.type() != ArgType::kString)
      throw ConfigError(n.describe() + ": argument \"function\" (the callable's name) is required");
    const std::string key = f->second.get<std::string>();
    if (!functions.contains(key))
      throw ConfigError(n.describe() + ": no Python function \"" + key + "\" was given (pass functions={\"" + key + "\": f})");
    int num_outputs = 1;
    if (auto o = n.args.find("num_outputs"); o != n.args.end() && o->second.type() == ArgType::kInt)
      num_outputs = static_cast<int>(o->second.get<int64_t>());
    const int num_inputs = static_cast<int>(n.inputs.size());
    // A schema per node: its arity and its callable.
    OpSchema s = base_schema();
    s.name = std::string(kOpName) + "[" + n.name + "]";
    s.inputs.clear();
    for (int i = 0; i < num_inputs; ++i) s.inputs.push_back({"input" + std::to_string(i), ""});
    s.outputs.clear();
    for (int k = 0; k < num_outputs; ++k) s.outputs.push_back({"output" + std::to_string(k), ""});
    SharedFunction fn = share(functions[py::str(key)]);
    s.create = [fn, num_outputs](const NodeSpec& node) -> std::unique_ptr<Operator> {
      if (node.get_bool("batch_processing"))
        throw ConfigError(node.describe() + ": batch_processing=True runs in Python, not in the graph");
      return std::make_unique<PythonFunction>(node, fn, num_outputs);
    };
    n.op = s.name;
    if (!added.emplace(s.name, true).second) throw ConfigError(n.describe() + ": node name used twice");
    registry->add(std::move(s));
  }
  return registry;
}

}  // namespace hdl::python
