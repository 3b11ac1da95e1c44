// Colour operators: color_space_conversion, grayscale, solarize, brightness, contrast, saturation, hue.
//
// All but solarize also run on the gpu stage (run_batch: the device kernels of
// pipeline/kernels/cuda/color.h, one sample at a time), with each sample's arguments and
// random draws taken by the same member function as on the cpu stage. color_space_conversion
// converts between rgb, bgr and gray there (ycbcr has no device kernel yet).
#include <optional>
#include <type_traits>

#include "pipeline/kernels/color.h"
#include "pipeline/kernels/cuda/color.h"
#include "pipeline/kernels/cuda/geometry.h"
#include "pipeline/operators/op_util.h"
#include "pipeline/registry.h"
#include "pipeline/spec.h"

namespace hdl {
namespace {

enum class ColorSpace { kRgb, kBgr, kGray, kYCbCr };

ColorSpace parse_space(const std::string& s) {
  if (s == "rgb") return ColorSpace::kRgb;
  if (s == "bgr") return ColorSpace::kBgr;
  if (s == "gray") return ColorSpace::kGray;
  return ColorSpace::kYCbCr;
}

int64_t channels_of(ColorSpace s) { return s == ColorSpace::kGray ? 1 : 3; }

// The same pixels with the channel order reversed (BGR seen as RGB), without a copy.
template <typename View>
View reversed_channels(View v) {
  using Byte = std::conditional_t<std::is_same_v<View, TensorView>, uint8_t, const uint8_t>;
  v.data = static_cast<Byte*>(v.data) + (v.shape[2] - 1) * v.strides[2];
  v.strides[2] = -v.strides[2];
  return v;
}

// A device copy (a crop at the origin of the same size): a skipped sample, or from == to.
Status device_copy(const ConstTensorView& in, const TensorView& out, hdl::cuda::Stream& stream) {
  return kernels::cuda::crop(in, 0, 0, out, stream);
}

struct ScratchState final : OpState {
  std::vector<uint8_t> rgb;  // an intermediate RGB image
};

class ColorSpaceConversionOp final : public Operator {
 public:
  ColorSpaceConversionOp(const NodeSpec& n, bool device)
      : device_(device), from_(parse_space(n.get_string("image_type"))), to_(parse_space(n.get_string("output_type"))) {}

  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec> in) const override {
    ops::require_hwc(in[0], {DType::kU8}, {channels_of(from_)});
    if (device_ && from_ != to_ && (from_ == ColorSpace::kYCbCr || to_ == ColorSpace::kYCbCr))
      throw ConfigError("on the gpu stage the colour spaces are rgb, bgr and gray (ycbcr runs on the cpu stage)");
    return {ops::hwc_spec(DType::kU8, ops::dim(in[0], 0), ops::dim(in[0], 1), channels_of(to_))};
  }

  Status run(SampleIO& io) const override {
    const ConstTensorView& in = io.input(0);
    HDL_ASSIGN_OR_RETURN(const Shape shape, out_shape(in.shape));
    HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, shape, DType::kU8, Layout::kHWC));
    if (from_ == to_) {
      copy(in, out);
      return Status::ok();
    }
    HDL_ASSIGN_OR_RETURN(ConstTensorView rgb, as_rgb(in, static_cast<ScratchState*>(io.state())->rgb));
    return from_rgb(rgb, out);
  }

  // rgb <-> bgr swap channels; to gray reads the input as rgb (bgr through a reversed-channel
  // view); from gray the grayscale kernel repeats the one channel, as the cpu's two steps do.
  Status run_batch(BatchIO& io) const override {
    for (int64_t s = 0; s < io.size(); ++s) {
      const ConstTensorView& in = io.input(0, s);
      HDL_ASSIGN_OR_RETURN(const Shape shape, out_shape(in.shape));
      HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, s, shape, DType::kU8, Layout::kHWC));
      hdl::cuda::Stream& stream = io.stream();
      Status st;
      if (from_ == to_) {
        st = device_copy(in, out, stream);
      } else if (from_ == ColorSpace::kGray) {
        st = kernels::cuda::rgb_to_grayscale(in, out, stream);
      } else if (to_ == ColorSpace::kGray) {
        st = kernels::cuda::rgb_to_grayscale(from_ == ColorSpace::kBgr ? reversed_channels(in) : in, out, stream);
      } else if (from_ != ColorSpace::kYCbCr && to_ != ColorSpace::kYCbCr) {
        st = kernels::cuda::swap_red_blue(in, out, stream);  // rgb <-> bgr
      } else {
        st = Status::internal("ycbcr on the gpu stage");  // refused by infer_outputs
      }
      HDL_RETURN_IF_ERROR(st);
    }
    return Status::ok();
  }

  std::unique_ptr<OpState> make_state() const override { return std::make_unique<ScratchState>(); }

 private:
  // Both stages: the channel check and the output's shape.
  Result<Shape> out_shape(const Shape& in) const {
    if (in[2] != channels_of(from_)) return Status::invalid_argument("input has " + std::to_string(in[2]) + " channels");
    return Shape{in[0], in[1], channels_of(to_)};
  }

  // The input as RGB: a view for rgb/bgr, else converted into `scratch`.
  Result<ConstTensorView> as_rgb(const ConstTensorView& in, std::vector<uint8_t>& scratch) const {
    if (from_ == ColorSpace::kRgb) return in;
    if (from_ == ColorSpace::kBgr) return reversed_channels(in);
    scratch.resize(static_cast<size_t>(in.shape[0] * in.shape[1] * 3));
    const TensorView rgb(scratch.data(), Shape{in.shape[0], in.shape[1], 3}, DType::kU8, Layout::kHWC);
    // Gray -> RGB repeats the value (torchvision's num_output_channels=3 path copies a 1-channel image).
    HDL_RETURN_IF_ERROR(from_ == ColorSpace::kGray ? kernels::rgb_to_grayscale(in, rgb) : kernels::ycbcr_to_rgb(in, rgb));
    return ConstTensorView(rgb);
  }

  Status from_rgb(const ConstTensorView& rgb, const TensorView& out) const {
    switch (to_) {
      case ColorSpace::kRgb: copy(rgb, out); return Status::ok();
      case ColorSpace::kBgr: copy(rgb, reversed_channels(out)); return Status::ok();
      case ColorSpace::kGray: return kernels::rgb_to_grayscale(rgb, out);
      case ColorSpace::kYCbCr: return kernels::rgb_to_ycbcr(rgb, out);
    }
    return Status::internal("unknown colour space");
  }

  bool device_;
  ColorSpace from_, to_;
};

class GrayscaleOp final : public Operator {
 public:
  explicit GrayscaleOp(const NodeSpec& n)
      : channels_(n.get_int("num_output_channels")), probability_(n.get_float("probability")), may_skip_(ops::may_skip(n)) {}

  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec> in) const override {
    ops::require_hwc(in[0], {DType::kU8}, {1, 3});
    const int64_t c = ops::dim(in[0], 2);
    // A skipped sample keeps its channels: every sample must have the same count.
    if (may_skip_ && channels_ != 0 && c >= 0 && c != channels_)
      throw ConfigError("argument \"num_output_channels\" must be 0 or the input's " + std::to_string(c) +
                        " when \"probability\" may be below 1, got " + std::to_string(channels_));
    return {ops::hwc_spec(DType::kU8, ops::dim(in[0], 0), ops::dim(in[0], 1), channels_ ? channels_ : c)};
  }

  Status run(SampleIO& io) const override {
    const ConstTensorView& in = io.input(0);
    HDL_ASSIGN_OR_RETURN(const Draw d, draw(io, in.shape));
    HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, d.shape, DType::kU8, Layout::kHWC));
    if (!d.apply) {
      copy(in, out);
      return Status::ok();
    }
    return kernels::rgb_to_grayscale(in, out);
  }

  Status run_batch(BatchIO& io) const override {
    for (int64_t s = 0; s < io.size(); ++s) {
      const ConstTensorView& in = io.input(0, s);
      HDL_ASSIGN_OR_RETURN(const Draw d, draw(io.sample_io(s), in.shape));
      HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, s, d.shape, DType::kU8, Layout::kHWC));
      HDL_RETURN_IF_ERROR(d.apply ? kernels::cuda::rgb_to_grayscale(in, out, io.stream())
                                  : device_copy(in, out, io.stream()));
    }
    return Status::ok();
  }

 private:
  struct Draw {
    bool apply = true;
    Shape shape;  // of the output
  };
  // Both stages: RandomGrayscale's draw, and the output's shape.
  Result<Draw> draw(SampleIO& io, const Shape& in) const {
    const int64_t c = channels_ ? channels_ : in[2];
    HDL_ASSIGN_OR_RETURN(const bool apply, ops::apply_draw(io, probability_));
    if (!apply && c != in[2])
      return Status::invalid_argument("a skipped sample has " + std::to_string(in[2]) +
                                      " channels, not num_output_channels " + std::to_string(c));
    return Draw{apply, Shape{in[0], in[1], c}};
  }

  int64_t channels_;  // 0: as the input
  double probability_;
  bool may_skip_;
};

class SolarizeOp final : public Operator {
 public:
  explicit SolarizeOp(const NodeSpec& n) : threshold_(n.get_float("threshold")), probability_(n.get_float("probability")) {}

  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec> in) const override {
    ops::require_hwc(in[0], {DType::kU8});
    return {in[0]};
  }

  Status run(SampleIO& io) const override {
    const ConstTensorView& in = io.input(0);
    HDL_ASSIGN_OR_RETURN(const bool apply, ops::apply_draw(io, probability_));
    HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, in.shape, DType::kU8, Layout::kHWC));
    if (!apply) {
      copy(in, out);
      return Status::ok();
    }
    return kernels::solarize(in, out, threshold_);
  }

 private:
  double threshold_, probability_;
};

using AdjustFn = Status (*)(const ConstTensorView&, const TensorView&, double);
// The device twin; the workspace is adjust_contrast's (the others ignore it).
using DeviceAdjustFn = Status (*)(const ConstTensorView&, const TensorView&, double, kernels::cuda::DeviceWorkspace&,
                                  hdl::cuda::Stream&);

// brightness, contrast, saturation, hue: one kernel and a per-sample factor.
class AdjustOp final : public Operator {
 public:
  AdjustOp(const NodeSpec& n, AdjustFn fn, DeviceAdjustFn device_fn, double lo, double hi)
      : fn_(fn), device_fn_(device_fn), factor_(n.get_float("factor")), lo_(lo), hi_(hi),
        probability_(n.get_float("probability")) {}

  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec> in) const override {
    ops::require_hwc(in[0], {DType::kU8}, {1, 3});
    return {in[0]};
  }

  Status run(SampleIO& io) const override {
    const ConstTensorView& in = io.input(0);
    HDL_ASSIGN_OR_RETURN(const std::optional<double> f, draw(io));
    HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, in.shape, DType::kU8, Layout::kHWC));
    if (!f) {
      copy(in, out);
      return Status::ok();
    }
    return fn_(in, out, *f);
  }

  Status run_batch(BatchIO& io) const override {
    for (int64_t s = 0; s < io.size(); ++s) {
      const ConstTensorView& in = io.input(0, s);
      HDL_ASSIGN_OR_RETURN(const std::optional<double> f, draw(io.sample_io(s)));
      HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, s, in.shape, DType::kU8, Layout::kHWC));
      HDL_RETURN_IF_ERROR(f ? device_fn_(in, out, *f, io.workspace(), io.stream()) : device_copy(in, out, io.stream()));
    }
    return Status::ok();
  }

 private:
  // Both stages: the sample's factor (checked), then the apply draw; nullopt: skipped.
  Result<std::optional<double>> draw(SampleIO& io) const {
    HDL_ASSIGN_OR_RETURN(double f, ops::float_arg(io, "factor", factor_, lo_, hi_));
    HDL_ASSIGN_OR_RETURN(const bool apply, ops::apply_draw(io, probability_));
    return apply ? std::optional<double>(f) : std::nullopt;
  }

  AdjustFn fn_;
  DeviceAdjustFn device_fn_;
  double factor_, lo_, hi_, probability_;
};

OpSchema adjust_schema(const char* name, const char* doc, AdjustFn fn, DeviceAdjustFn device_fn, double dflt,
                       double lo, double hi) {
  OpSchema s;
  s.name = name;
  s.doc = doc;
  s.inputs = {{"images", "HWC uint8, 1 or 3 channels"}};
  s.outputs = {{"images", "same shape"}};
  s.args = {{"factor", ArgType::kFloat, ArgValue(dflt), "adjustment factor (may be driven per sample, e.g. by random_uniform)",
             in_range(lo, hi), true},
            ops::probability_arg(1.0)};
  s.uses_randomness = true;  // only when probability is below 1
  s.stages = {Stage::kCpu, Stage::kDevice};
  s.create = [fn, device_fn, lo, hi](const NodeSpec& n) { return std::make_unique<AdjustOp>(n, fn, device_fn, lo, hi); };
  s.create_device = s.create;
  return s;
}

constexpr double kMaxFactor = 1e6;
const std::vector<std::string> kSpaces = {"rgb", "bgr", "gray", "ycbcr"};

}  // namespace

OpSchema color_space_conversion_schema() {
  OpSchema s;
  s.name = "color_space_conversion";
  s.doc = "Converts HWC uint8 images between rgb, bgr, gray (torchvision rgb_to_grayscale "
          "weights, truncated) and ycbcr (BT.601 full range, as Pillow's \"YCbCr\" mode). On the "
          "gpu stage: rgb, bgr and gray only.";
  s.inputs = {{"images", "HWC uint8 in image_type"}};
  s.outputs = {{"images", "HWC uint8 in output_type"}};
  s.args = {
      {"image_type", ArgType::kString, ArgValue("rgb"), "input colour space: rgb, bgr, gray or ycbcr", one_of(kSpaces)},
      {"output_type", ArgType::kString, std::nullopt, "output colour space: rgb, bgr, gray or ycbcr", one_of(kSpaces)},
  };
  s.stages = {Stage::kCpu, Stage::kDevice};
  s.create = [](const NodeSpec& n) { return std::make_unique<ColorSpaceConversionOp>(n, false); };
  s.create_device = [](const NodeSpec& n) { return std::make_unique<ColorSpaceConversionOp>(n, true); };
  return s;
}

OpSchema grayscale_schema() {
  OpSchema s;
  s.name = "grayscale";
  s.doc = "torchvision Grayscale / RandomGrayscale on HWC uint8 RGB images: 0.2989 R + 0.587 G + "
          "0.114 B, truncated; 1 or 3 (repeated) output channels, or as many as the input (0, "
          "RandomGrayscale); applied with `probability` (a skipped sample is copied).";
  s.inputs = {{"images", "HWC uint8 RGB (or 1 channel, copied)"}};
  s.outputs = {{"images", "HWC uint8 with num_output_channels"}};
  s.uses_randomness = true;  // only when probability is below 1
  s.args = {{"num_output_channels", ArgType::kInt, ArgValue(1), "1 or 3, or 0: the input's count", [](const ArgValue& v) -> std::string {
               const int64_t n = v.get<int64_t>();
               return n == 0 || n == 1 || n == 3 ? "" : "must be 0, 1 or 3, got " + std::to_string(n);
             }},
            ops::probability_arg(1.0)};
  s.stages = {Stage::kCpu, Stage::kDevice};
  s.create = [](const NodeSpec& n) { return std::make_unique<GrayscaleOp>(n); };
  s.create_device = s.create;
  return s;
}

OpSchema solarize_schema() {
  OpSchema s;
  s.name = "solarize";
  s.doc = "torchvision RandomSolarize (Pillow ImageOps.solarize, F.solarize) on HWC uint8 images: "
          "x >= threshold ? 255 - x : x, applied with `probability` (a skipped sample is copied); "
          "threshold 0 is RandomInvert.";
  s.inputs = {{"images", "HWC uint8, any channel count"}};
  s.outputs = {{"images", "same shape"}};
  s.uses_randomness = true;  // only when probability is below 1
  s.args = {{"threshold", ArgType::kFloat, ArgValue(128.0), "values >= threshold are inverted (above 255: none)", at_least(0)},
            ops::probability_arg(1.0)};
  s.create = [](const NodeSpec& n) { return std::make_unique<SolarizeOp>(n); };
  return s;
}

OpSchema brightness_schema() {
  return adjust_schema("brightness", "torchvision adjust_brightness on HWC uint8: clamp(factor * x), truncated.",
                       kernels::adjust_brightness,
                       [](const ConstTensorView& src, const TensorView& dst, double f, kernels::cuda::DeviceWorkspace&,
                          hdl::cuda::Stream& stream) { return kernels::cuda::adjust_brightness(src, dst, f, stream); },
                       1.0, 0, kMaxFactor);
}

OpSchema contrast_schema() {
  return adjust_schema("contrast", "torchvision adjust_contrast on HWC uint8: blend with the mean of the "
                       "grayscale image.", kernels::adjust_contrast, kernels::cuda::adjust_contrast, 1.0, 0, kMaxFactor);
}

OpSchema saturation_schema() {
  return adjust_schema("saturation", "torchvision adjust_saturation on HWC uint8: blend each pixel with "
                       "its grayscale value.", kernels::adjust_saturation,
                       [](const ConstTensorView& src, const TensorView& dst, double f, kernels::cuda::DeviceWorkspace&,
                          hdl::cuda::Stream& stream) { return kernels::cuda::adjust_saturation(src, dst, f, stream); },
                       1.0, 0, kMaxFactor);
}

OpSchema hue_schema() {
  return adjust_schema("hue", "torchvision adjust_hue on HWC uint8: shift the hue by factor (in "
                       "[-0.5, 0.5]) turns.", kernels::adjust_hue,
                       [](const ConstTensorView& src, const TensorView& dst, double f, kernels::cuda::DeviceWorkspace&,
                          hdl::cuda::Stream& stream) { return kernels::cuda::adjust_hue(src, dst, f, stream); },
                       0.0, -0.5, 0.5);
}

}  // namespace hdl
