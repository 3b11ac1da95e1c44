#include "pipeline/spec_json.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>

#include "pipeline/errors.h"

namespace hdl {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kFormat = "hdl-pipeline-spec";
constexpr int kVersion = 1;

// ---- writing ----------------------------------------------------------------------------

double finite(double d, const std::string& where) {
  if (!std::isfinite(d)) throw ConfigError(where + ": JSON cannot hold the float " + std::to_string(d));
  return d;
}

Json arg_to_json(const ArgValue& v, const std::string& where) {
  switch (v.type()) {
    case ArgType::kBool: return v.get<bool>();
    case ArgType::kInt: return v.get<int64_t>();
    case ArgType::kFloat: return finite(v.get<double>(), where);
    case ArgType::kString: return v.get<std::string>();
    case ArgType::kInts: return v.get<std::vector<int64_t>>();
    case ArgType::kFloats: {
      Json a = Json::array();
      for (double d : v.get<std::vector<double>>()) a.push_back(finite(d, where));
      return a;
    }
    case ArgType::kStrings: return v.get<std::vector<std::string>>();
  }
  return nullptr;
}

Json ref_to_json(const PipelineSpec& spec, TensorRef r, const std::string& where) {
  if (r.node < 0 || r.node >= static_cast<int>(spec.nodes().size()))
    throw ConfigError(where + ": refers to node " + std::to_string(r.node) + ", which does not exist");
  return Json{{"node", spec.nodes()[r.node].name}, {"output", r.output}};
}

// ---- reading ----------------------------------------------------------------------------

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw ConfigError(path + ": " + what);
}

// Text from the document quoted in a message, cut short: a hostile spec may hold megabytes.
std::string quoted(const std::string& s) {
  constexpr size_t kShown = 80;
  std::string out = "\"";
  out.append(s, 0, kShown);
  out += '"';
  if (s.size() > kShown) out += "... (" + std::to_string(s.size()) + " bytes)";
  return out;
}

// Rejects nesting deeper than kSpecMaxDepth before nlohmann-json sees the text (its dump(),
// copies and comparisons recurse; a spec is 5 levels deep). Linear, string-aware.
void check_depth(const std::string& text) {
  int depth = 0;
  int64_t line = 1;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '\n') ++line;
    else if (c == '[' || c == '{') {
      if (++depth > kSpecMaxDepth)
        fail("$", "nested deeper than " + std::to_string(kSpecMaxDepth) + " levels (byte " +
                      std::to_string(i) + ", line " + std::to_string(line) + ")");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

// A JSON integer as int64 (nlohmann keeps integers above INT64_MAX as unsigned).
int64_t to_int64(const Json& j, const std::string& path) {
  if (j.is_number_unsigned() && j.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
    fail(path, "integer " + j.dump() + " is out of range (at most 9223372036854775807)");
  return j.get<int64_t>();
}

// A JSON number as a finite double. nlohmann-json refuses literals past a double (1e400)
// while parsing; this keeps a non-finite value, which to_json could not write back, out anyway.
double to_double(const Json& j, const std::string& path) {
  const double d = j.get<double>();
  if (!std::isfinite(d)) fail(path, "number is out of range for a float (at most about 1.8e308)");
  return d;
}

const char* kind_of(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::object: return "an object";
    case Json::value_t::array: return "a list";
    case Json::value_t::string: return "a string";
    case Json::value_t::boolean: return "a bool";
    case Json::value_t::binary: return "binary";
    case Json::value_t::discarded: return "nothing";
    default: return "a number";
  }
}

const Json& member(const Json& obj, const std::string& path, const char* key, Json::value_t type,
                   const char* type_text) {
  auto it = obj.find(key);
  if (it == obj.end()) fail(path, std::string("missing \"") + key + "\"");
  const bool ok = it->type() == type ||
                  (type == Json::value_t::number_integer && it->is_number_unsigned());
  if (!ok) fail(path + "." + key, std::string("expected ") + type_text + ", got " + kind_of(*it));
  return *it;
}

// Optional member: nullptr when absent.
const Json* optional_member(const Json& obj, const std::string& path, const char* key,
                            bool (Json::*is)() const noexcept, const char* type_text) {
  auto it = obj.find(key);
  if (it == obj.end()) return nullptr;
  if (!((*it).*is)()) fail(path + "." + key, std::string("expected ") + type_text + ", got " + kind_of(*it));
  return &*it;
}

ArgValue arg_from_json(const Json& j, const std::string& path) {
  if (j.is_boolean()) return ArgValue(j.get<bool>());
  if (j.is_number_integer()) return ArgValue(to_int64(j, path));
  if (j.is_number_float()) return ArgValue(to_double(j, path));
  if (j.is_string()) return ArgValue(j.get<std::string>());
  if (!j.is_array()) fail(path, std::string("expected a bool, number, string or list, got ") + kind_of(j));
  if (j.empty()) return ArgValue(std::vector<int64_t>{});
  if (j[0].is_string()) {
    std::vector<std::string> out;
    for (size_t i = 0; i < j.size(); ++i) {
      if (!j[i].is_string())
        fail(path + "[" + std::to_string(i) + "]", std::string("expected a string, got ") + kind_of(j[i]));
      out.push_back(j[i].get<std::string>());
    }
    return ArgValue(std::move(out));
  }
  bool any_float = false;
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_number())
      fail(path + "[" + std::to_string(i) + "]", std::string("expected a number, got ") + kind_of(j[i]));
    any_float |= j[i].is_number_float();
  }
  const auto at = [&](size_t i) { return path + "[" + std::to_string(i) + "]"; };
  if (any_float) {
    std::vector<double> out;
    out.reserve(j.size());
    for (size_t i = 0; i < j.size(); ++i) out.push_back(to_double(j[i], at(i)));
    return ArgValue(std::move(out));
  }
  std::vector<int64_t> out;
  out.reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i) out.push_back(to_int64(j[i], at(i)));
  return ArgValue(std::move(out));
}

Stage stage_at(const std::string& s, const std::string& path) {
  if (std::optional<Stage> stage = stage_from_name(s)) return *stage;
  fail(path, "stage must be \"cpu\", \"mixed\" or \"gpu\", got " + quoted(s));
}

// A {"node": name, "output": i} reference; node names resolve to indices in `index`.
TensorRef ref_from_json(const Json& j, const std::string& path, const std::map<std::string, int>& index) {
  if (!j.is_object()) fail(path, std::string("expected {\"node\": name, \"output\": index}, got ") + kind_of(j));
  const std::string& node = member(j, path, "node", Json::value_t::string, "a node name").get_ref<const std::string&>();
  auto it = index.find(node);
  if (it == index.end()) fail(path + ".node", "no node named " + quoted(node));
  int output = 0;
  if (auto o = j.find("output"); o != j.end()) {
    // nlohmann keeps non-negative integers as unsigned, past INT64_MAX too: compare as uint64.
    constexpr auto kMaxOutput = uint64_t(std::numeric_limits<int>::max());
    const bool ok = o->is_number_unsigned() ? o->get<uint64_t>() <= kMaxOutput
                    : o->is_number_integer() && o->get<int64_t>() >= 0 && uint64_t(o->get<int64_t>()) <= kMaxOutput;
    if (!ok)
      fail(path + ".output", std::string("expected an output index in [0, 2147483647], got ") +
                                 (o->is_number() ? o->dump() : kind_of(*o)));
    output = static_cast<int>(o->get<int64_t>());
  }
  return {it->second, output};
}

}  // namespace

std::optional<Stage> stage_from_name(const std::string& name) {
  if (name == "cpu") return Stage::kCpu;
  if (name == "mixed") return Stage::kMixed;
  if (name == "gpu" || name == "device") return Stage::kDevice;
  return std::nullopt;
}

std::string to_json(const PipelineSpec& spec, int indent) {
  Json doc;
  doc["format"] = kFormat;
  doc["version"] = kVersion;
  Json nodes = Json::array();
  std::map<std::string, int> seen;
  for (size_t i = 0; i < spec.nodes().size(); ++i) {
    const NodeSpec& n = spec.nodes()[i];
    const std::string where = "node " + std::to_string(i) + " (" + n.describe() + ")";
    if (n.name.empty()) throw ConfigError(where + ": has no name");
    if (!seen.emplace(n.name, static_cast<int>(i)).second)
      throw ConfigError(where + ": the name is used by another node too");
    if (n.samples)
      throw ConfigError(where + ": its samples were given in memory (files=); a JSON spec cannot hold them: "
                        "write them as a file_list");
    Json node;
    node["name"] = n.name;
    node["op"] = n.op;
    node["stage"] = stage_name(n.stage);
    node["inputs"] = Json::array();
    for (TensorRef r : n.inputs) node["inputs"].push_back(ref_to_json(spec, r, where));
    node["args"] = Json::object();
    for (const auto& [k, v] : n.args) node["args"][k] = arg_to_json(v, where + " argument \"" + k + "\"");
    node["arg_inputs"] = Json::object();
    for (const auto& [k, r] : n.arg_inputs) node["arg_inputs"][k] = ref_to_json(spec, r, where);
    nodes.push_back(std::move(node));
  }
  doc["nodes"] = std::move(nodes);
  doc["outputs"] = Json::array();
  for (TensorRef r : spec.outputs()) doc["outputs"].push_back(ref_to_json(spec, r, "pipeline output"));
  return doc.dump(indent);
}

PipelineSpec spec_from_json(const std::string& text) {
  if (text.size() > kSpecMaxBytes)
    fail("$", "spec is " + std::to_string(text.size()) + " bytes, over the limit of " +
                  std::to_string(kSpecMaxBytes) + " (kSpecMaxBytes)");
  check_depth(text);
  Json doc;
  try {
    doc = Json::parse(text);
  } catch (const Json::parse_error& e) {
    // e.byte is the position; nlohmann's message says what it expected there.
    throw ConfigError("$: not valid JSON (byte " + std::to_string(e.byte) + "): " + e.what());
  } catch (const Json::exception& e) {
    // out_of_range 406: a number literal past a double ("number overflow parsing '1e400'").
    throw ConfigError(std::string("$: not valid JSON: ") + e.what());
  }
  if (!doc.is_object()) fail("$", std::string("expected an object, got ") + kind_of(doc));
  if (auto f = optional_member(doc, "$", "format", &Json::is_string, "a string"))
    if (f->get<std::string>() != kFormat)
      fail("$.format", "expected \"" + std::string(kFormat) + "\", got " + quoted(f->get<std::string>()));
  if (auto v = optional_member(doc, "$", "version", &Json::is_number_integer, "an integer"))
    if (v->get<int64_t>() != kVersion)
      fail("$.version", "this build reads version " + std::to_string(kVersion) + ", got " + v->dump());
  const Json& nodes = member(doc, "$", "nodes", Json::value_t::array, "a list of nodes");

  // First pass: names, so that edges may point forwards as well as backwards.
  std::map<std::string, int> index;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string path = "$.nodes[" + std::to_string(i) + "]";
    if (!nodes[i].is_object()) fail(path, std::string("expected an object, got ") + kind_of(nodes[i]));
    const auto& name = member(nodes[i], path, "name", Json::value_t::string, "a string").get_ref<const std::string&>();
    if (name.empty()) fail(path + ".name", "must not be empty");
    if (!index.emplace(name, static_cast<int>(i)).second) fail(path + ".name", quoted(name) + " is used twice");
  }
  PipelineSpec spec;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Json& j = nodes[i];
    const std::string path = "$.nodes[" + std::to_string(i) + "]";
    const auto& op = member(j, path, "op", Json::value_t::string, "an operator name").get_ref<const std::string&>();
    Stage stage = Stage::kCpu;
    if (auto s = optional_member(j, path, "stage", &Json::is_string, "a string"))
      stage = stage_at(s->get<std::string>(), path + ".stage");
    std::vector<TensorRef> inputs;
    if (auto in = optional_member(j, path, "inputs", &Json::is_array, "a list"))
      for (size_t k = 0; k < in->size(); ++k)
        inputs.push_back(ref_from_json((*in)[k], path + ".inputs[" + std::to_string(k) + "]", index));
    PipelineSpec::Args args;
    if (auto a = optional_member(j, path, "args", &Json::is_object, "an object"))
      for (const auto& [k, v] : a->items()) args.emplace_back(k, arg_from_json(v, path + ".args." + k));
    PipelineSpec::ArgInputs arg_inputs;
    if (auto a = optional_member(j, path, "arg_inputs", &Json::is_object, "an object"))
      for (const auto& [k, v] : a->items())
        arg_inputs.emplace_back(k, ref_from_json(v, path + ".arg_inputs." + k, index));
    for (const auto& [k, v] : j.items())
      if (k != "name" && k != "op" && k != "stage" && k != "inputs" && k != "args" && k != "arg_inputs")
        fail(path + "." + k, "unknown key (expected name, op, stage, inputs, args, arg_inputs)");
    spec.add(op, std::move(inputs), std::move(args), std::move(arg_inputs),
             j["name"].get<std::string>(), stage);
  }
  std::vector<TensorRef> outputs;
  const Json& outs = member(doc, "$", "outputs", Json::value_t::array, "a list of outputs");
  for (size_t k = 0; k < outs.size(); ++k)
    outputs.push_back(ref_from_json(outs[k], "$.outputs[" + std::to_string(k) + "]", index));
  spec.set_outputs(std::move(outputs));
  return spec;
}

}  // namespace hdl
