#include "pipeline/schema.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace hdl {

const char* arg_type_name(ArgType t) {
  switch (t) {
    case ArgType::kBool: return "bool";
    case ArgType::kInt: return "int";
    case ArgType::kFloat: return "float";
    case ArgType::kString: return "str";
    case ArgType::kInts: return "list[int]";
    case ArgType::kFloats: return "list[float]";
    case ArgType::kStrings: return "list[str]";
  }
  return "?";
}

const char* stage_name(Stage s) {
  switch (s) {
    case Stage::kCpu: return "cpu";
    case Stage::kMixed: return "mixed";
    case Stage::kDevice: return "gpu";
  }
  return "?";
}

std::optional<ArgValue> ArgValue::convert_to(ArgType t) const {
  if (type() == t) return *this;
  if (t == ArgType::kFloat && type() == ArgType::kInt) return ArgValue(static_cast<double>(get<int64_t>()));
  if (t == ArgType::kFloats && type() == ArgType::kInts) {
    const auto& v = get<std::vector<int64_t>>();
    return ArgValue(std::vector<double>(v.begin(), v.end()));
  }
  // An empty list literal is typed list[int]; it is a valid empty list of any element type.
  if (type() == ArgType::kInts && get<std::vector<int64_t>>().empty()) {
    if (t == ArgType::kStrings) return ArgValue(std::vector<std::string>{});
  }
  return std::nullopt;
}

namespace {
std::string format_double(double d) {
  std::ostringstream os;
  os << d;
  std::string s = os.str();
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}
}  // namespace

namespace {
struct ToText {
  std::string operator()(bool b) const { return b ? "True" : "False"; }
  std::string operator()(int64_t i) const { return std::to_string(i); }
  std::string operator()(double d) const { return format_double(d); }
  std::string operator()(const std::string& s) const { return "\"" + s + "\""; }
  template <typename T>
  std::string operator()(const std::vector<T>& v) const {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + (*this)(v[i]);
    return out + "]";
  }
};
}  // namespace

std::string ArgValue::to_string() const { return std::visit(ToText{}, v_); }

namespace {
// Applies `check` to a scalar number or to each element of a numeric list.
std::string check_numbers(const ArgValue& v, const std::function<std::string(double)>& check) {
  switch (v.type()) {
    case ArgType::kInt: return check(static_cast<double>(v.get<int64_t>()));
    case ArgType::kFloat: return check(v.get<double>());
    case ArgType::kInts:
      for (int64_t x : v.get<std::vector<int64_t>>())
        if (auto e = check(static_cast<double>(x)); !e.empty()) return e;
      return "";
    case ArgType::kFloats:
      for (double x : v.get<std::vector<double>>())
        if (auto e = check(x); !e.empty()) return e;
      return "";
    default: return "";
  }
}
std::string num(double d) {
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == std::floor(d) && std::abs(d) < 1e15) return std::to_string(static_cast<int64_t>(d));
  return format_double(d);
}
}  // namespace

ArgValidator in_range(double lo, double hi) {
  return [lo, hi](const ArgValue& v) {
    return check_numbers(v, [&](double x) {
      return (x >= lo && x <= hi) ? std::string()
                                  : "must be in [" + num(lo) + ", " + num(hi) + "], got " + num(x);
    });
  };
}

ArgValidator at_least(double lo) {
  return [lo](const ArgValue& v) {
    return check_numbers(v, [&](double x) {
      return x >= lo ? std::string() : "must be >= " + num(lo) + ", got " + num(x);
    });
  };
}

ArgValidator one_of(std::vector<std::string> choices) {
  return [choices = std::move(choices)](const ArgValue& v) -> std::string {
    auto check = [&](const std::string& s) -> std::string {
      if (std::find(choices.begin(), choices.end(), s) != choices.end()) return "";
      std::string list;
      for (const auto& c : choices) list += (list.empty() ? "" : ", ") + ("\"" + c + "\"");
      return "must be one of " + list + ", got \"" + s + "\"";
    };
    if (v.type() == ArgType::kString) return check(v.get<std::string>());
    if (v.type() != ArgType::kStrings) return "";
    for (const auto& s : v.get<std::vector<std::string>>()) {
      if (std::string e = check(s); !e.empty()) return "each element " + e;
    }
    return "";
  };
}

ArgValidator list_size(std::vector<size_t> allowed) {
  return [allowed = std::move(allowed)](const ArgValue& v) -> std::string {
    size_t n = 0;
    switch (v.type()) {
      case ArgType::kInts: n = v.get<std::vector<int64_t>>().size(); break;
      case ArgType::kFloats: n = v.get<std::vector<double>>().size(); break;
      case ArgType::kStrings: n = v.get<std::vector<std::string>>().size(); break;
      default: return "";
    }
    if (std::find(allowed.begin(), allowed.end(), n) != allowed.end()) return "";
    std::string sizes;
    for (size_t a : allowed) sizes += (sizes.empty() ? "" : " or ") + std::to_string(a);
    return "must have " + sizes + " elements, got " + std::to_string(n);
  };
}

ArgValidator all_of(std::vector<ArgValidator> validators) {
  return [vs = std::move(validators)](const ArgValue& v) -> std::string {
    for (const auto& f : vs)
      if (auto e = f(v); !e.empty()) return e;
    return "";
  };
}

const ArgSchema* OpSchema::find_arg(const std::string& n) const {
  for (const auto& a : args)
    if (a.name == n) return &a;
  return nullptr;
}

int OpSchema::output_index(const std::string& n) const {
  for (size_t i = 0; i < outputs.size(); ++i)
    if (outputs[i].name == n) return static_cast<int>(i);
  return -1;
}

std::string OpSchema::reference_doc() const {
  std::ostringstream os;
  os << "### `" << name << "`\n\n" << doc << "\n\n";
  os << "Stages: ";
  for (size_t i = 0; i < stages.size(); ++i) os << (i ? ", " : "") << stage_name(stages[i]);
  os << (uses_randomness ? ". Draws random numbers (seeded per sample)." : ".") << "\n\n";
  if (!inputs.empty()) {
    os << "Inputs:\n";
    for (const auto& p : inputs) os << "- `" << p.name << "`: " << p.doc << "\n";
    os << "\n";
  }
  os << "Outputs:\n";
  for (const auto& p : outputs) os << "- `" << p.name << "`: " << p.doc << "\n";
  if (!args.empty()) {
    os << "\n| argument | type | default | per-sample | description |\n|---|---|---|---|---|\n";
    for (const auto& a : args) {
      os << "| `" << a.name << "` | " << arg_type_name(a.type) << " | "
         << (a.default_value ? "`" + a.default_value->to_string() + "`" : "required") << " | "
         << (a.per_sample ? "yes" : "") << " | " << a.doc << " |\n";
    }
  }
  return os.str();
}

}  // namespace hdl
