// Exceptions, argument conversion and the schema export that fn.* is generated from.
#include <pybind11/stl.h>

#include <algorithm>

#include "media/text.h"
#include "pipeline/errors.h"
#include "pipeline/graph.h"
#include "python/src/bindings.h"

namespace hdl::python {
namespace {

bool is_int(py::handle h) { return !PyBool_Check(h.ptr()) && (PyLong_Check(h.ptr()) || PyIndex_Check(h.ptr())); }
bool is_float(py::handle h) { return PyFloat_Check(h.ptr()) || (!is_int(h) && !PyBool_Check(h.ptr()) && py::hasattr(h, "__float__") && !PyUnicode_Check(h.ptr())); }
bool is_bool(py::handle h) {
  if (PyBool_Check(h.ptr())) return true;
  const std::string t = py::str(py::type::handle_of(h).attr("__name__"));
  return t == "bool_" || t == "bool";  // numpy.bool_
}

py::dict schema_to_dict(const OpSchema& s) {
  py::dict d;
  d["name"] = s.name;
  d["doc"] = s.doc;
  d["reference"] = s.reference_doc();
  auto ports = [](const std::vector<PortSchema>& ps) {
    py::list l;
    for (const auto& p : ps) l.append(py::make_tuple(p.name, p.doc));
    return l;
  };
  d["inputs"] = ports(s.inputs);
  d["outputs"] = ports(s.outputs);
  py::list args;
  for (const auto& a : s.args) {
    py::dict ad;
    ad["name"] = a.name;
    ad["type"] = arg_type_name(a.type);
    ad["required"] = !a.default_value.has_value();
    ad["default"] = a.default_value ? from_arg(*a.default_value) : py::none();
    ad["doc"] = a.doc;
    ad["per_sample"] = a.per_sample;
    args.append(ad);
  }
  d["args"] = args;
  d["uses_randomness"] = s.uses_randomness;
  d["is_source"] = s.is_source;
  py::list stages;
  for (Stage st : s.stages) stages.append(stage_name(st));
  d["stages"] = stages;
  return d;
}

const OpSchema& find_schema(const std::string& op) {
  static const OpSchema py_fn = python_function_schema();
  if (op == py_fn.name) return py_fn;
  const OpSchema* s = OpRegistry::builtin().find(op);
  if (!s) throw ConfigError("unknown operator \"" + op + "\"");
  return *s;
}

// Checks and converts one call's arguments against `op`'s schema with Graph::build's own
// checks (pipeline/graph.h), so that a mistake raises at the line that made it, in the words
// the graph would use. Returns {name: python value}.
py::dict check_args(const std::string& op, const py::dict& args, const std::vector<std::string>& skip) {
  const OpSchema& schema = find_schema(op);
  py::dict out;
  for (auto [k, v] : args) {
    const std::string name = py::str(k);
    if (std::find(skip.begin(), skip.end(), name) != skip.end()) continue;
    const ArgSchema* a = schema.find_arg(name);
    if (!a) {
      std::vector<std::string> accepted;
      for (const auto& cand : schema.args) accepted.push_back(cand.name);
      const std::string best = closest_name(name, accepted);
      throw py::type_error(op + "() got an unexpected keyword argument '" + name + "'" +
                           (best.empty() ? "" : " (did you mean '" + best + "'?)"));
    }
    ArgValue value = to_arg(v, name);
    // Python call sugar, not a graph rule: a scalar where the schema wants a list (size=224 is [224]).
    if (a->type == ArgType::kInts && value.type() == ArgType::kInt) value = ArgValue(std::vector<int64_t>{value.get<int64_t>()});
    if (a->type == ArgType::kFloats && (value.type() == ArgType::kFloat || value.type() == ArgType::kInt))
      value = ArgValue(std::vector<double>{value.type() == ArgType::kInt ? double(value.get<int64_t>()) : value.get<double>()});
    if (a->type == ArgType::kStrings && value.type() == ArgType::kString)
      value = ArgValue(std::vector<std::string>{value.get<std::string>()});
    out[py::str(name)] = from_arg(check_arg(*a, value, op + "() argument '" + name + "'"));
  }
  return out;
}

}  // namespace

ArgValue to_arg(py::handle v, const std::string& arg) {
  auto bad = [&](const std::string& what) {
    return py::type_error("argument '" + arg + "': expected bool, int, float, str or a list of them, got " + what);
  };
  if (is_bool(v)) return ArgValue(v.cast<bool>());
  if (is_int(v)) return ArgValue(static_cast<int64_t>(py::int_(py::reinterpret_borrow<py::object>(v))));
  if (PyUnicode_Check(v.ptr())) return ArgValue(v.cast<std::string>());
  if (PyFloat_Check(v.ptr())) return ArgValue(v.cast<double>());
  if (py::hasattr(v, "tolist")) {  // numpy arrays and scalars, torch tensors
    py::object l = v.attr("tolist")();
    if (!py::isinstance<py::list>(l)) return to_arg(l, arg);
    return to_arg(l, arg);
  }
  if (is_float(v)) return ArgValue(static_cast<double>(py::float_(py::reinterpret_borrow<py::object>(v))));
  if (!py::isinstance<py::sequence>(v) || PyBytes_Check(v.ptr()))
    throw bad(std::string(py::str(py::type::handle_of(v).attr("__name__"))));
  py::object seq = py::reinterpret_borrow<py::object>(v);
  std::vector<py::object> items;
  for (py::handle h : seq) items.push_back(py::reinterpret_borrow<py::object>(h));
  if (items.empty()) return ArgValue(std::vector<int64_t>{});
  if (std::all_of(items.begin(), items.end(), [](auto& h) { return PyUnicode_Check(h.ptr()); })) {
    std::vector<std::string> s;
    for (auto& h : items) s.push_back(h.template cast<std::string>());
    return ArgValue(std::move(s));
  }
  if (std::all_of(items.begin(), items.end(), [](auto& h) { return is_int(h) || PyBool_Check(h.ptr()); })) {
    std::vector<int64_t> s;
    for (auto& h : items) s.push_back(static_cast<int64_t>(py::int_(h)));
    return ArgValue(std::move(s));
  }
  std::vector<double> s;
  for (auto& h : items) {
    if (!is_int(h) && !is_float(h)) throw bad("a list containing " + std::string(py::str(py::type::handle_of(h).attr("__name__"))));
    s.push_back(static_cast<double>(py::float_(h)));
  }
  return ArgValue(std::move(s));
}

py::object from_arg(const ArgValue& v) {
  return std::visit([](const auto& x) -> py::object { return py::cast(x); }, v.variant());
}

void bind_errors(py::module_& m) {
  static py::exception<DataError> data_error(m, "DataError", PyExc_RuntimeError);
  data_error.doc() = "A sample could not be produced (corrupt file, unreadable path, ...). "
                     "The message names operator, sample and file; .code is the status code name.";
  // Every message is printable() (media/text.h): Python decodes strictly, so a byte that is not
  // UTF-8 (a tar member's name, a key) would replace the error with a UnicodeDecodeError; and no
  // URL secret is shown. pybind11's own exceptions pass on to its translator.
  py::register_exception_translator([](std::exception_ptr p) {
    const auto set = [](PyObject* type, const char* what) { PyErr_SetString(type, printable(what).c_str()); };
    try {
      if (p) std::rethrow_exception(p);
    } catch (const py::builtin_exception&) {
      throw;
    } catch (const py::error_already_set&) {
      throw;
    } catch (const ArgumentTypeError& e) {
      set(PyExc_TypeError, e.what());
    } catch (const ConfigError& e) {
      set(PyExc_ValueError, e.what());
    } catch (const PipelineStateError& e) {
      set(PyExc_RuntimeError, e.what());
    } catch (const DataError& e) {
      py::object err = py::reinterpret_borrow<py::object>(data_error.ptr())(printable(e.what()));
      err.attr("code") = status_code_name(e.status().code());
      PyErr_SetObject(data_error.ptr(), err.ptr());
    } catch (const std::bad_alloc&) {
      PyErr_SetString(PyExc_MemoryError, "out of memory");
    } catch (const std::invalid_argument& e) {
      set(PyExc_ValueError, e.what());
    } catch (const std::domain_error& e) {
      set(PyExc_ValueError, e.what());
    } catch (const std::length_error& e) {
      set(PyExc_ValueError, e.what());
    } catch (const std::out_of_range& e) {
      set(PyExc_IndexError, e.what());
    } catch (const std::exception& e) {
      set(PyExc_RuntimeError, e.what());
    }
  });
  m.def("printable", [](const std::string& text) { return printable(text); }, py::arg("text"),
        "text as it may be shown: valid UTF-8 (other bytes as \\xNN) with URL secrets (a presigned query's "
        "signature and token, a password) redacted (media/text.h). Every message of the library passes through it.");
}

void bind_schemas(py::module_& m) {
  m.def("schemas", [] {
    py::list out;
    for (const OpSchema* s : OpRegistry::builtin().all()) out.append(schema_to_dict(*s));
    out.append(schema_to_dict(python_function_schema()));
    return out;
  }, "Every operator's schema as a dict (name, doc, reference, inputs, outputs, args, ...).");
  m.def("check_args", &check_args, py::arg("op"), py::arg("args"), py::arg("skip") = std::vector<std::string>{},
        "Validates and converts keyword arguments of `op`; TypeError/ValueError name the argument.");
}

}  // namespace hdl::python
