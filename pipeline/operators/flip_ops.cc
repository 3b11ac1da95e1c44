// Layout operators: flip, random_flip, transpose.
//
// flip and random_flip also run on the gpu stage (run_batch: one device flip per sample), with
// the flags drawn per sample by the same function as on the cpu stage.
#include "pipeline/kernels/crop.h"
#include "pipeline/kernels/cuda/geometry.h"
#include "pipeline/operators/op_util.h"
#include "pipeline/registry.h"
#include "pipeline/spec.h"

namespace hdl {
namespace {

struct Flips {
  bool horizontal = false, vertical = false;
};

// flip and random_flip: the per-sample flags (flips()) are the only difference; run() and
// run_batch() both take them from there, so the two stages cannot disagree.
template <typename Derived>
class FlipBase : public Operator {
 public:
  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec> in) const override {
    ops::require_hwc(in[0], {});
    return {in[0]};
  }

  Status run(SampleIO& io) const override {
    const Flips f = derived().flips(io);
    const ConstTensorView& in = io.input(0);
    HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, in.shape, in.dtype, Layout::kHWC));
    return kernels::flip(in, out, f.horizontal, f.vertical);
  }

  Status run_batch(BatchIO& io) const override {
    for (int64_t s = 0; s < io.size(); ++s) {
      const Flips f = derived().flips(io.sample_io(s));
      const ConstTensorView& in = io.input(0, s);
      HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, s, in.shape, in.dtype, Layout::kHWC));
      HDL_RETURN_IF_ERROR(kernels::cuda::flip(in, out, f.horizontal, f.vertical, io.stream()));
    }
    return Status::ok();
  }

 private:
  const Derived& derived() const { return static_cast<const Derived&>(*this); }
};

class FlipOp final : public FlipBase<FlipOp> {
 public:
  explicit FlipOp(const NodeSpec& n) : horizontal_(n.get_int("horizontal") != 0), vertical_(n.get_int("vertical") != 0) {}

  Flips flips(SampleIO& io) const {
    return {ops::flag_arg(io, "horizontal", horizontal_), ops::flag_arg(io, "vertical", vertical_)};
  }

 private:
  bool horizontal_, vertical_;
};

class RandomFlipOp final : public FlipBase<RandomFlipOp> {
 public:
  explicit RandomFlipOp(const NodeSpec& n)
      : probability_(n.get_float("probability")), horizontal_(n.get_string("direction") == "horizontal") {}

  Flips flips(SampleIO& io) const {
    // torchvision: `if torch.rand(1) < p: flip`.
    const bool flip = io.rng().uniform() < probability_;
    return {flip && horizontal_, flip && !horizontal_};
  }

 private:
  double probability_;
  bool horizontal_;
};

class TransposeOp final : public Operator {
 public:
  explicit TransposeOp(const NodeSpec& n) : layout_(ops::parse_layout(n.get_string("output_layout"))) {}

  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec> in) const override {
    const TensorSpec& s = in[0];
    if (s.shape.ndim() != 3 || (s.layout != Layout::kHWC && s.layout != Layout::kCHW))
      throw ConfigError("input must be HWC or CHW images, got " + std::string(layout_name(s.layout)) + " " +
                        s.shape.to_string());
    if (s.layout == layout_) return {s};
    const Shape& d = s.shape;
    const Shape out = layout_ == Layout::kCHW ? Shape{d[2], d[0], d[1]} : Shape{d[1], d[2], d[0]};
    return {TensorSpec{s.dtype, out, layout_}};
  }

  Status run(SampleIO& io) const override {
    const ConstTensorView& in = io.input(0);
    const Shape& d = in.shape;
    if (in.layout == layout_) {
      HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, d, in.dtype, layout_));
      copy(in, out);
      return Status::ok();
    }
    const bool to_chw = layout_ == Layout::kCHW;
    HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, to_chw ? Shape{d[2], d[0], d[1]} : Shape{d[1], d[2], d[0]},
                                                   in.dtype, layout_));
    return to_chw ? kernels::hwc_to_chw(in, out) : kernels::chw_to_hwc(in, out);
  }

 private:
  Layout layout_;
};

}  // namespace

OpSchema flip_schema() {
  OpSchema s;
  s.name = "flip";
  s.doc = "Flips HWC images (any dtype) left-right and/or up-down (torchvision F.hflip / "
          "F.vflip); both flags may be driven per sample (e.g. by coin_flip).";
  s.inputs = {{"images", "HWC, any dtype"}};
  s.outputs = {{"images", "same shape and dtype"}};
  s.args = {
      {"horizontal", ArgType::kInt, ArgValue(1), "1: flip left-right, 0: not", in_range(0, 1), true},
      {"vertical", ArgType::kInt, ArgValue(0), "1: flip up-down, 0: not", in_range(0, 1), true},
  };
  s.stages = {Stage::kCpu, Stage::kDevice};
  s.create = [](const NodeSpec& n) { return std::make_unique<FlipOp>(n); };
  s.create_device = s.create;
  return s;
}

OpSchema random_flip_schema() {
  OpSchema s;
  s.name = "random_flip";
  s.doc = "torchvision RandomHorizontalFlip / RandomVerticalFlip: flips each sample with the "
          "given probability.";
  s.inputs = {{"images", "HWC, any dtype"}};
  s.outputs = {{"images", "same shape and dtype"}};
  s.uses_randomness = true;
  s.args = {
      {"probability", ArgType::kFloat, ArgValue(0.5), "probability of flipping", in_range(0, 1)},
      {"direction", ArgType::kString, ArgValue("horizontal"), "horizontal or vertical", one_of({"horizontal", "vertical"})},
  };
  s.stages = {Stage::kCpu, Stage::kDevice};
  s.create = [](const NodeSpec& n) { return std::make_unique<RandomFlipOp>(n); };
  s.create_device = s.create;
  return s;
}

OpSchema transpose_schema() {
  OpSchema s;
  s.name = "transpose";
  s.doc = "Converts images between HWC and CHW (Tensor.permute(...).contiguous()), any dtype; "
          "an input already in output_layout is copied.";
  s.inputs = {{"images", "HWC or CHW, any dtype"}};
  s.outputs = {{"images", "in output_layout"}};
  s.args = {{"output_layout", ArgType::kString, ArgValue("CHW"), "CHW or HWC", one_of({"CHW", "HWC"})}};
  s.create = [](const NodeSpec& n) { return std::make_unique<TransposeOp>(n); };
  return s;
}

}  // namespace hdl
