#include "pipeline/operators/op_util.h"

#include <algorithm>
#include <cmath>

#include "pipeline/spec.h"

namespace hdl::ops {

void require_hwc(const TensorSpec& s, std::initializer_list<DType> dtypes,
                 std::initializer_list<int64_t> channels) {
  const bool dtype_ok = dtypes.size() == 0 || std::find(dtypes.begin(), dtypes.end(), s.dtype) != dtypes.end();
  const int64_t c = dim(s, 2);
  const bool channels_ok = channels.size() == 0 || c < 0 ||
                           std::find(channels.begin(), channels.end(), c) != channels.end();
  if (s.layout == Layout::kHWC && s.shape.ndim() == 3 && dtype_ok && channels_ok) return;
  std::string want;
  for (DType t : dtypes) want += (want.empty() ? "" : " or ") + std::string(dtype_name(t));
  std::string chans;
  for (int64_t n : channels) chans += (chans.empty() ? "" : " or ") + std::to_string(n);
  throw ConfigError("input must be HWC " + (want.empty() ? std::string() : want + " ") + "images" +
                    (chans.empty() ? "" : " with " + chans + " channels") + ", got " +
                    dtype_name(s.dtype) + " " + layout_name(s.layout) + " " + s.shape.to_string());
}

Result<double> float_arg(const SampleIO& io, const char* name, double constant, double lo, double hi) {
  const double v = io.scalar_arg(name, constant);
  if (!(v >= lo && v <= hi)) {
    return Status::invalid_argument("argument \"" + std::string(name) + "\" must be in [" +
                                    std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                                    std::to_string(v));
  }
  return v;
}

ArgSchema probability_arg(double dflt) {
  return {"probability", ArgType::kFloat, ArgValue(dflt),
          "probability of applying it to a sample (per sample: e.g. one coin_flip bound to several "
          "operators applies all or none, as RandomApply)", in_range(0, 1), true};
}

Result<bool> apply_draw(SampleIO& io, double constant) {
  HDL_ASSIGN_OR_RETURN(const double p, float_arg(io, "probability", constant, 0, 1));
  if (p >= 1) return true;
  if (p <= 0) return false;
  return static_cast<double>(io.rng().uniform()) < p;
}

bool may_skip(const NodeSpec& n) {
  return n.arg_inputs.count("probability") != 0 || n.get_float("probability") < 1;
}

ArgValidator odd_positive() {
  return [](const ArgValue& v) -> std::string {
    if (v.type() != ArgType::kInts) return "";
    for (int64_t k : v.get<std::vector<int64_t>>())
      if (k <= 0 || k % 2 == 0) return "must be odd and positive, got " + std::to_string(k);
    return "";
  };
}

void check_fill(const std::vector<double>& fill, int64_t channels, const char* arg) {
  if (channels < 0 || fill.size() <= 1 || static_cast<int64_t>(fill.size()) == channels) return;
  throw ConfigError("argument \"" + std::string(arg) + "\" has " + std::to_string(fill.size()) +
                    " values for " + std::to_string(channels) + " channels");
}

std::vector<uint8_t> pil_fill_arg(const NodeSpec& n) {
  std::vector<uint8_t> fill;
  for (double f : n.get_floats("fill")) fill.push_back(static_cast<uint8_t>(std::trunc(f)));
  return fill;
}

TensorSpec pil_image_output(const TensorSpec& in, const std::vector<uint8_t>& fill) {
  require_hwc(in, {DType::kU8}, {1, 3});
  check_fill(std::vector<double>(fill.begin(), fill.end()), dim(in, 2));
  return in;
}

}  // namespace hdl::ops
