// Normalisation operators: crop_mirror_normalize, normalize, cast.
#include <algorithm>

#include "pipeline/decode/crop_geometry.h"
#include "pipeline/kernels/cuda/normalize.h"
#include "pipeline/kernels/normalize.h"
#include "pipeline/operators/op_util.h"
#include "pipeline/registry.h"
#include "pipeline/spec.h"

namespace hdl {
namespace {

std::vector<float> to_floats(const std::vector<double>& v) { return {v.begin(), v.end()}; }

kernels::NormalizeParams parse_norm(const NodeSpec& n) {
  const auto& sd = n.get_floats("std");
  if (std::any_of(sd.begin(), sd.end(), [](double x) { return !(x > 0); }))
    throw ConfigError("argument \"std\" must be > 0, got " + ArgValue(sd).to_string());
  if (!(n.get_float("scale") > 0)) throw ConfigError("argument \"scale\" must be > 0");
  return {to_floats(n.get_floats("mean")), to_floats(sd), static_cast<float>(n.get_float("scale"))};
}

// mean/std have 0, 1 or C values once C is known.
void check_channels(const kernels::NormalizeParams& p, int64_t c) {
  if (c < 0) return;
  for (const auto& [name, v] : {std::pair{"mean", &p.mean}, std::pair{"std", &p.std}}) {
    if (v->size() > 1 && static_cast<int64_t>(v->size()) != c)
      throw ConfigError("argument \"" + std::string(name) + "\" has " + std::to_string(v->size()) +
                        " values for " + std::to_string(c) + " channels");
  }
}

ArgSchema mean_arg() {
  return {"mean", ArgType::kFloats, ArgValue(std::vector<double>{}), "per-channel mean in units of x / scale (torchvision Normalize's), or one value; [] = 0"};
}
ArgSchema std_arg() {
  return {"std", ArgType::kFloats, ArgValue(std::vector<double>{}), "per-channel standard deviation (> 0), or one value; [] = 1"};
}
ArgSchema scale_arg() {
  return {"scale", ArgType::kFloat, ArgValue(255.0), "x is divided by this first (255: torchvision ToTensor on uint8)"};
}

// On the gpu stage (device = true) the whole batch goes through one launch of the batched
// device kernel, with the windows and mirror flags drawn per sample exactly as on the cpu.
class CropMirrorNormalizeOp final : public Operator {
 public:
  CropMirrorNormalizeOp(const NodeSpec& n, bool device)
      : device_(device), crop_(crop_size_arg(n.get_ints("crop"))), pos_x_(n.get_float("crop_pos_x")),
        pos_y_(n.get_float("crop_pos_y")), bins_(n.get_bool("crop_pos_bins")), mirror_(n.get_int("mirror") != 0),
        dtype_(parse_dtype(n.get_string("dtype"))) {
    options_.norm = parse_norm(n);
    const std::string& layout = n.get_string("output_layout");
    clip_channels_first_ = layout == "CFHW";
    options_.layout = ops::parse_layout(clip_channels_first_ ? "CHW" : layout);
    options_.fill = static_cast<float>(n.get_float("fill"));
  }

  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec> in) const override {
    if (in[0].shape.ndim() == 4) return {clip_spec(in[0])};
    if (clip_channels_first_) throw ConfigError("output_layout \"CFHW\" is for clips ([T, H, W, C] input)");
    ops::require_hwc(in[0], {DType::kU8, DType::kF32});
    if (device_ && in[0].dtype != DType::kU8)
      throw ConfigError("on the gpu stage the input must be uint8 (float32 input runs on the cpu stage)");
    if (dtype_ == DType::kU8 && in[0].dtype != DType::kU8)
      throw ConfigError("dtype \"uint8\" needs uint8 input (it only crops, mirrors and transposes)");
    const int64_t c = ops::dim(in[0], 2);
    check_channels(options_.norm, c);
    const int64_t h = crop_ ? crop_->h : ops::dim(in[0], 0), w = crop_ ? crop_->w : ops::dim(in[0], 1);
    return {spec(h, w, c)};
  }

  Status run(SampleIO& io) const override {
    const ConstTensorView& in = io.input(0);
    const bool clip = in.ndim() == 4;  // [T, H, W, C]: the same window and mirror for every frame
    const int64_t h = in.shape[clip ? 1 : 0], w = in.shape[clip ? 2 : 1], c = in.shape[clip ? 3 : 2];
    HDL_ASSIGN_OR_RETURN(double px, ops::float_arg(io, "crop_pos_x", pos_x_, 0, 1));
    HDL_ASSIGN_OR_RETURN(double py, ops::float_arg(io, "crop_pos_y", pos_y_, 0, 1));
    const SizeHW size = crop_ ? *crop_ : SizeHW{h, w};
    kernels::CropMirrorNormalizeOptions o = options_;
    o.top = offset(h, size.h, py);
    o.left = offset(w, size.w, px);
    o.mirror = ops::flag_arg(io, "mirror", mirror_);
    if (!clip) {
      const TensorSpec s = spec(size.h, size.w, c);
      HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, s.shape, s.dtype, s.layout));
      return kernels::crop_mirror_normalize(in, out, o);
    }
    const TensorSpec s = clip_spec({in.dtype, in.shape, in.layout});
    HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, s.shape, s.dtype, s.layout));
    const int fdim = clip_channels_first_ ? 1 : 0;  // the frames' dimension of the output
    for (int64_t f = 0; f < in.shape[0]; ++f)
      HDL_RETURN_IF_ERROR(kernels::crop_mirror_normalize(in.select(0, f, Layout::kHWC),
                                                         out.select(fdim, f, options_.layout), o));
    return Status::ok();
  }

  Status run_batch(BatchIO& io) const override {
    const int64_t n = io.size();
    if (n > 0 && io.input(0, 0).ndim() == 4) return run_clips(io);
    srcs_.clear(), windows_.clear();
    for (int64_t s = 0; s < n; ++s) {
      const ConstTensorView& in = io.input(0, s);
      SampleIO& a = io.sample_io(s);
      HDL_ASSIGN_OR_RETURN(double px, ops::float_arg(a, "crop_pos_x", pos_x_, 0, 1));
      HDL_ASSIGN_OR_RETURN(double py, ops::float_arg(a, "crop_pos_y", pos_y_, 0, 1));
      const SizeHW size = crop_ ? *crop_ : SizeHW{in.shape[0], in.shape[1]};
      srcs_.push_back(in);
      windows_.push_back({offset(in.shape[0], size.h, py), offset(in.shape[1], size.w, px),
                          ops::flag_arg(a, "mirror", mirror_)});
    }
    kernels::cuda::CmnBatchOptions o{options_.fill, options_.layout, options_.norm};
    if (n == 0) return Status::ok();
    if (io.dense(0)) {  // a crop, or inputs of one known size: the whole batch in one launch
      const SizeHW size = crop_ ? *crop_ : SizeHW{srcs_[0].shape[0], srcs_[0].shape[1]};
      const TensorSpec sp = spec(size.h, size.w, srcs_[0].shape[2]);
      HDL_ASSIGN_OR_RETURN(TensorView out, io.dense_output(0, sp.shape, sp.dtype, sp.layout));
      return kernels::cuda::crop_mirror_normalize(srcs_, windows_, out, o, io.workspace(), io.stream());
    }
    // Images of different sizes without a crop: one launch per sample.
    for (int64_t s = 0; s < n; ++s) {
      const TensorSpec sp = spec(srcs_[s].shape[0], srcs_[s].shape[1], srcs_[s].shape[2]);
      HDL_ASSIGN_OR_RETURN(TensorView one, io.output(0, s, sp.shape, sp.dtype, sp.layout));
      const TensorView out(one.data, sp.shape.prepend(1), sp.dtype, sp.layout, one.device);
      HDL_RETURN_IF_ERROR(kernels::cuda::crop_mirror_normalize({&srcs_[s], 1}, {&windows_[s], 1}, out, o,
                                                               io.workspace(), io.stream()));
    }
    return Status::ok();
  }

 private:
  // Clips ([T, H, W, C] uint8) on the gpu stage: one launch per clip, its frames as the
  // kernel's samples (one window and mirror for all), written through a view of the clip's
  // output whose first dimension walks the frames: [T, C, h, w] for CFHW ([C, T, h, w] in
  // memory) and FCHW, [T, h, w, C] for FHWC.
  Status run_clips(BatchIO& io) const {
    const kernels::cuda::CmnBatchOptions o{options_.fill, options_.layout, options_.norm};
    for (int64_t s = 0; s < io.size(); ++s) {
      const ConstTensorView& in = io.input(0, s);
      SampleIO& a = io.sample_io(s);
      HDL_ASSIGN_OR_RETURN(double px, ops::float_arg(a, "crop_pos_x", pos_x_, 0, 1));
      HDL_ASSIGN_OR_RETURN(double py, ops::float_arg(a, "crop_pos_y", pos_y_, 0, 1));
      const int64_t t = in.shape[0], h = in.shape[1], w = in.shape[2];
      const SizeHW size = crop_ ? *crop_ : SizeHW{h, w};
      const kernels::cuda::CmnWindow window{offset(h, size.h, py), offset(w, size.w, px),
                                            ops::flag_arg(a, "mirror", mirror_)};
      const TensorSpec sp = clip_spec({in.dtype, in.shape, in.layout});
      HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, s, sp.shape, sp.dtype, sp.layout));
      TensorView frames = out;
      if (clip_channels_first_) {  // [C, T, h, w] seen as [T, C, h, w]
        frames.shape = Shape{t, sp.shape[0], size.h, size.w};
        frames.strides = Shape{out.strides[1], out.strides[0], out.strides[2], out.strides[3]};
      }
      frames.layout = options_.layout;
      srcs_.clear(), windows_.clear();
      for (int64_t f = 0; f < t; ++f) {
        srcs_.push_back(in.select(0, f, Layout::kHWC));
        windows_.push_back(window);
      }
      HDL_RETURN_IF_ERROR(kernels::cuda::crop_mirror_normalize(srcs_, windows_, frames, o, io.workspace(), io.stream()));
    }
    return Status::ok();
  }

  int64_t offset(int64_t size, int64_t crop, double pos) const {
    return bins_ ? crop_offset_binned(size, crop, pos) : crop_offset(size, crop, pos);
  }

  TensorSpec spec(int64_t h, int64_t w, int64_t c) const {
    if (options_.layout == Layout::kCHW) return TensorSpec{dtype_, Shape{c, h, w}, Layout::kCHW};
    return TensorSpec{dtype_, Shape{h, w, c}, Layout::kHWC};
  }

  // A clip's output: [T, C, h, w] (CHW), [T, h, w, C] (HWC) or [C, T, h, w] (CFHW).
  TensorSpec clip_spec(const TensorSpec& in) const {
    if (device_ && in.dtype != DType::kU8)
      throw ConfigError("on the gpu stage clips must be uint8 (float32 input runs on the cpu stage)");
    if (in.layout != Layout::kFHWC || (in.dtype != DType::kU8 && in.dtype != DType::kF32))
      throw ConfigError("input must be HWC images or FHWC clips, uint8 or float32, got " +
                        std::string(dtype_name(in.dtype)) + " " + layout_name(in.layout) + " " + in.shape.to_string());
    if (dtype_ == DType::kU8 && in.dtype != DType::kU8)
      throw ConfigError("dtype \"uint8\" needs uint8 input (it only crops, mirrors and transposes)");
    const int64_t t = in.shape[0], c = in.shape[3];
    check_channels(options_.norm, c);
    const int64_t h = crop_ ? crop_->h : in.shape[1], w = crop_ ? crop_->w : in.shape[2];
    if (clip_channels_first_) return TensorSpec{dtype_, Shape{c, t, h, w}, Layout::kCFHW};
    if (options_.layout == Layout::kCHW) return TensorSpec{dtype_, Shape{t, c, h, w}, Layout::kFCHW};
    return TensorSpec{dtype_, Shape{t, h, w, c}, Layout::kFHWC};
  }

  bool device_;
  bool clip_channels_first_ = false;
  std::optional<SizeHW> crop_;
  double pos_x_, pos_y_;
  bool bins_;  // crop_pos_bins
  bool mirror_;
  DType dtype_;
  kernels::CropMirrorNormalizeOptions options_;
  // run_batch's scratch: the device stage runs one batch at a time.
  mutable std::vector<ConstTensorView> srcs_;
  mutable std::vector<kernels::cuda::CmnWindow> windows_;
};

class NormalizeOp final : public Operator {
 public:
  explicit NormalizeOp(const NodeSpec& n) : params_(parse_norm(n)) {}

  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec> in) const override {
    const TensorSpec& s = in[0];
    if (s.shape.ndim() != 3 || (s.layout != Layout::kHWC && s.layout != Layout::kCHW) ||
        (s.dtype != DType::kU8 && s.dtype != DType::kF32))
      throw ConfigError("input must be HWC or CHW uint8 or float32 images, got " + std::string(dtype_name(s.dtype)) +
                        " " + layout_name(s.layout) + " " + s.shape.to_string());
    check_channels(params_, s.shape[s.layout == Layout::kCHW ? 0 : 2]);
    return {TensorSpec{DType::kF32, s.shape, s.layout}};
  }

  Status run(SampleIO& io) const override {
    const ConstTensorView& in = io.input(0);
    HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, in.shape, DType::kF32, in.layout));
    return kernels::normalize(in, out, params_, in.layout == Layout::kCHW ? 0 : 2);
  }

 private:
  kernels::NormalizeParams params_;
};

class CastOp final : public Operator {
 public:
  explicit CastOp(const NodeSpec& n) : dtype_(parse_dtype(n.get_string("dtype"))) {}

  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec> in) const override {
    return {TensorSpec{dtype_, in[0].shape, in[0].layout}};
  }

  Status run(SampleIO& io) const override {
    const ConstTensorView& in = io.input(0);
    HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, in.shape, dtype_, in.layout));
    return kernels::cast(in, out);
  }

 private:
  DType dtype_;
};

const std::vector<std::string> kDtypes = {"uint8", "int16", "int32", "int64", "float16", "bfloat16", "float32"};

}  // namespace

OpSchema crop_mirror_normalize_schema() {
  OpSchema s;
  s.name = "crop_mirror_normalize";
  s.doc = "Crop, mirror, normalise, change layout and cast in one pass, as torchvision "
          "CenterCrop + hflip + ToTensor + Normalize: out = (x / scale - mean) / std in float32, "
          "then rounded to dtype. uint8 output only crops, mirrors and transposes. Window pixels "
          "outside the image read as `fill`.";
  s.inputs = {{"images", "HWC uint8 or float32 images, or FHWC clips ([T, H, W, C]: every frame gets the same window and mirror)"}};
  s.outputs = {{"images", "[C, h, w] (CHW) or [h, w, C] (HWC) of dtype; clips: [T, C, h, w] (CHW), [T, h, w, C] (HWC) or [C, T, h, w] (CFHW)"}};
  s.args = {
      {"crop", ArgType::kInts, ArgValue(std::vector<int64_t>{}), "[] (no crop), [s] or [h, w]", all_of({list_size({0, 1, 2}), at_least(1)})},
      {"crop_pos_x", ArgType::kFloat, ArgValue(0.5), "relative horizontal window position (0.5: CenterCrop)", in_range(0, 1), true},
      {"crop_pos_y", ArgType::kFloat, ArgValue(0.5), "relative vertical window position (0.5: CenterCrop)", in_range(0, 1), true},
      {"crop_pos_bins", ArgType::kBool, ArgValue(false), "false: the window's offset is round(pos * (H - h)) (pos 0.5: CenterCrop); true: floor(pos * (H - h + 1)), at most H - h, so that a uniform crop_pos (random_uniform) gives every integer offset equally often, as torchvision's RandomCrop (torch.randint(0, H - h + 1)) does, where rounding gives the two end offsets half as often"},
      {"mirror", ArgType::kInt, ArgValue(0), "1: flip the window left-right", in_range(0, 1), true},
      mean_arg(),
      std_arg(),
      scale_arg(),
      {"dtype", ArgType::kString, ArgValue("float32"), "float32, float16, bfloat16 or uint8", one_of({"float32", "float16", "bfloat16", "uint8"})},
      {"output_layout", ArgType::kString, ArgValue("CHW"), "CHW or HWC; for clips also CFHW (channels first, as 3-D CNNs take)", one_of({"CHW", "HWC", "CFHW"})},
      {"fill", ArgType::kFloat, ArgValue(0.0), "source value of window pixels outside the image"},
  };
  s.stages = {Stage::kCpu, Stage::kDevice};
  s.create = [](const NodeSpec& n) { return std::make_unique<CropMirrorNormalizeOp>(n, false); };
  s.create_device = [](const NodeSpec& n) { return std::make_unique<CropMirrorNormalizeOp>(n, true); };
  return s;
}

OpSchema normalize_schema() {
  OpSchema s;
  s.name = "normalize";
  s.doc = "torchvision ToTensor + Normalize arithmetic on HWC or CHW uint8/float32 images: "
          "out = (x / scale - mean[c]) / std[c] in float32; the layout is kept.";
  s.inputs = {{"images", "HWC or CHW, uint8 or float32"}};
  s.outputs = {{"images", "float32, same shape and layout"}};
  s.args = {mean_arg(), std_arg(), scale_arg()};
  s.create = [](const NodeSpec& n) { return std::make_unique<NormalizeOp>(n); };
  return s;
}

OpSchema cast_schema() {
  OpSchema s;
  s.name = "cast";
  s.doc = "Converts tensors to another dtype as Tensor.to(): float -> integer truncates toward "
          "zero (saturating), float16/bfloat16 round to nearest even.";
  s.inputs = {{"input", "any tensor"}};
  s.outputs = {{"output", "same shape and layout"}};
  s.args = {{"dtype", ArgType::kString, std::nullopt, "uint8, int16, int32, int64, float16, bfloat16 or float32", one_of(kDtypes)}};
  s.create = [](const NodeSpec& n) { return std::make_unique<CastOp>(n); };
  return s;
}

}  // namespace hdl
