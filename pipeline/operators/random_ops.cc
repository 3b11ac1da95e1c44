// Random number operators: per-sample scalars that can drive other operators' arguments.
#include "pipeline/errors.h"
#include "pipeline/operator.h"
#include "pipeline/registry.h"
#include "pipeline/spec.h"

namespace hdl {
namespace {

// Writes one scalar of `dtype` as output 0.
Status write_scalar(SampleIO& io, DType dtype, double value) {
  HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, Shape{}, dtype, Layout::kNone));
  switch (dtype) {
    case DType::kF32: *out.typed<float>() = static_cast<float>(value); break;
    case DType::kI32: *out.typed<int32_t>() = static_cast<int32_t>(value); break;
    case DType::kI64: *out.typed<int64_t>() = static_cast<int64_t>(value); break;
    case DType::kU8: *out.typed<uint8_t>() = static_cast<uint8_t>(value); break;
    default: return Status::internal("unsupported scalar dtype");
  }
  return Status::ok();
}

class ScalarRandom : public Operator {
 public:
  explicit ScalarRandom(DType dtype) : dtype_(dtype) {}
  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec>) const override {
    return {TensorSpec{dtype_, Shape{}, Layout::kNone}};
  }

 protected:
  DType dtype_;
};

class CoinFlip final : public ScalarRandom {
 public:
  explicit CoinFlip(const NodeSpec& n) : ScalarRandom(parse_dtype(n.get_string("dtype"))), p_(n.get_float("probability")) {}
  Status run(SampleIO& io) const override {
    const double p = io.scalar_arg("probability", p_);
    return write_scalar(io, dtype_, io.rng().bernoulli(p) ? 1.0 : 0.0);
  }

 private:
  double p_;
};

class RandomUniform final : public ScalarRandom {
 public:
  explicit RandomUniform(const NodeSpec& n) : ScalarRandom(DType::kF32) {
    const auto& r = n.get_floats("range");
    lo_ = r[0], hi_ = r[1];
    if (hi_ < lo_) throw ConfigError("argument \"range\" must be [low, high] with low <= high");
  }
  Status run(SampleIO& io) const override { return write_scalar(io, dtype_, io.rng().uniform(lo_, hi_)); }

 private:
  double lo_, hi_;
};

class RandomNormal final : public ScalarRandom {
 public:
  explicit RandomNormal(const NodeSpec& n)
      : ScalarRandom(DType::kF32), mean_(n.get_float("mean")), stddev_(n.get_float("stddev")) {}
  Status run(SampleIO& io) const override {
    return write_scalar(io, dtype_, mean_ + stddev_ * io.rng().normal());
  }

 private:
  double mean_, stddev_;
};

}  // namespace

OpSchema coin_flip_schema() {
  OpSchema s;
  s.name = "coin_flip";
  s.doc = "A per-sample Bernoulli draw: 1 with the given probability, else 0.";
  s.uses_randomness = true;
  s.outputs = {{"value", "0 or 1 (scalar)"}};
  s.args = {{"probability", ArgType::kFloat, ArgValue(0.5), "probability of 1", in_range(0, 1), true},
            {"dtype", ArgType::kString, ArgValue("int32"), "output type", one_of({"int32", "int64", "uint8", "float32"})}};
  s.create = [](const NodeSpec& n) { return std::make_unique<CoinFlip>(n); };
  return s;
}

OpSchema random_uniform_schema() {
  OpSchema s;
  s.name = "random_uniform";
  s.doc = "A per-sample float32 drawn uniformly from [low, high).";
  s.uses_randomness = true;
  s.outputs = {{"value", "float32 scalar"}};
  s.args = {{"range", ArgType::kFloats, ArgValue({0.0, 1.0}), "[low, high]", list_size({2})}};
  s.create = [](const NodeSpec& n) { return std::make_unique<RandomUniform>(n); };
  return s;
}

OpSchema random_normal_schema() {
  OpSchema s;
  s.name = "random_normal";
  s.doc = "A per-sample float32 drawn from a normal distribution.";
  s.uses_randomness = true;
  s.outputs = {{"value", "float32 scalar"}};
  s.args = {{"mean", ArgType::kFloat, ArgValue(0.0), "mean"},
            {"stddev", ArgType::kFloat, ArgValue(1.0), "standard deviation", at_least(0)}};
  s.create = [](const NodeSpec& n) { return std::make_unique<RandomNormal>(n); };
  return s;
}

}  // namespace hdl
