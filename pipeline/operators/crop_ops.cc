// Geometry operators on decoded images: crop, random_crop, random_resized_crop, pad.
//
// crop, random_crop and pad also run on the gpu stage (a `device` flag; run_batch: one device
// crop per sample, whose fill does constant padding), with each sample's window computed by
// the same member function as on the cpu stage. Padding modes other than constant need the
// cpu stage.
#include <algorithm>

#include "pipeline/decode/crop_geometry.h"
#include "pipeline/kernels/crop.h"
#include "pipeline/kernels/cuda/geometry.h"
#include "pipeline/kernels/cuda/resize.h"
#include "pipeline/kernels/resize.h"
#include "pipeline/operators/op_util.h"
#include "pipeline/registry.h"
#include "pipeline/spec.h"

namespace hdl {
namespace {

const std::vector<std::string> kFilters = {"nearest", "bilinear", "bicubic", "box", "lanczos"};

// The device crop kernel takes at most this many per-channel fill values.
constexpr size_t kMaxDeviceFill = 16;

void check_device_fill(bool device, const std::vector<double>& fill) {
  if (device && fill.size() > kMaxDeviceFill)
    throw ConfigError("on the gpu stage \"fill\" has at most " + std::to_string(kMaxDeviceFill) +
                      " values (one per channel), got " + std::to_string(fill.size()));
}

void check_device_constant(bool device, kernels::PadMode mode) {
  if (device && mode != kernels::PadMode::kConstant)
    throw ConfigError("on the gpu stage \"padding_mode\" must be \"constant\" (edge, reflect and "
                      "symmetric run on the cpu stage)");
}

// Top-left corner of a sample's window in its input (may be negative: fill from there).
struct Corner {
  int64_t top = 0, left = 0;
};

ArgSchema crop_pos_arg(const char* name, const char* axis) {
  return {name, ArgType::kFloat, ArgValue(0.5),
          std::string("relative ") + axis + " position of the window: 0 first, 1 last, 0.5 centred "
          "(torchvision CenterCrop rounding)", in_range(0, 1), true};
}

class CropOp final : public Operator {
 public:
  CropOp(const NodeSpec& n, bool device)
      : device_(device), size_(*crop_size_arg(n.get_ints("crop"))), pos_x_(n.get_float("crop_pos_x")),
        pos_y_(n.get_float("crop_pos_y")), fill_(n.get_floats("fill")) {}

  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec> in) const override {
    ops::require_hwc(in[0], {});
    ops::check_fill(fill_, ops::dim(in[0], 2));
    check_device_fill(device_, fill_);
    return {ops::hwc_spec(in[0].dtype, size_.h, size_.w, ops::dim(in[0], 2))};
  }

  Status run(SampleIO& io) const override {
    const ConstTensorView& in = io.input(0);
    HDL_ASSIGN_OR_RETURN(const Corner at, corner(io, in.shape));
    HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, Shape{size_.h, size_.w, in.shape[2]}, in.dtype, Layout::kHWC));
    return kernels::crop(in, at.top, at.left, out, fill_);
  }

  Status run_batch(BatchIO& io) const override {
    for (int64_t s = 0; s < io.size(); ++s) {
      const ConstTensorView& in = io.input(0, s);
      HDL_ASSIGN_OR_RETURN(const Corner at, corner(io.sample_io(s), in.shape));
      HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, s, Shape{size_.h, size_.w, in.shape[2]}, in.dtype, Layout::kHWC));
      HDL_RETURN_IF_ERROR(kernels::cuda::crop(in, at.top, at.left, out, io.stream(), fill_));
    }
    return Status::ok();
  }

 private:
  // The window of a sample: both stages place it here.
  Result<Corner> corner(SampleIO& io, const Shape& in) const {
    HDL_ASSIGN_OR_RETURN(double px, ops::float_arg(io, "crop_pos_x", pos_x_, 0, 1));
    HDL_ASSIGN_OR_RETURN(double py, ops::float_arg(io, "crop_pos_y", pos_y_, 0, 1));
    return Corner{crop_offset(in[0], size_.h, py), crop_offset(in[1], size_.w, px)};
  }

  bool device_;
  SizeHW size_;
  double pos_x_, pos_y_;
  std::vector<double> fill_;
};

struct ResizeState final : OpState {
  kernels::ResizeWorkspace workspace;
};

class RandomResizedCropOp final : public Operator {
 public:
  explicit RandomResizedCropOp(const NodeSpec& n) : size_(*crop_size_arg(n.get_ints("size"))) {
    const auto& scale = n.get_floats("scale");
    const auto& ratio = n.get_floats("ratio");
    if (scale[0] > scale[1] || scale[1] <= 0)
      throw ConfigError("argument \"scale\" must be [low, high] with 0 <= low <= high, high > 0");
    if (ratio[0] > ratio[1] || ratio[0] <= 0)
      throw ConfigError("argument \"ratio\" must be [low, high] with 0 < low <= high");
    params_ = {scale[0], scale[1], ratio[0], ratio[1], static_cast<int>(n.get_int("attempts"))};
    options_.filter = kernels::parse_resize_filter(n.get_string("interpolation").c_str());
    for (const std::string& name : n.get_strings("random_interpolation"))
      random_filters_.push_back(kernels::parse_resize_filter(name.c_str()));
    options_.antialias = n.get_bool("antialias");
    options_.pillow = n.get_bool("pillow");
  }

  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec> in) const override {
    ops::require_hwc(in[0], {DType::kU8, DType::kF32});
    return {ops::hwc_spec(in[0].dtype, size_.h, size_.w, ops::dim(in[0], 2))};
  }

  Status run(SampleIO& io) const override {
    const ConstTensorView& in = io.input(0);
    const auto [w, options] = draw(io, in.shape);
    HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, Shape{size_.h, size_.w, in.shape[2]}, in.dtype, Layout::kHWC));
    return kernels::resize(in.crop_hw(w.top, w.left, w.height, w.width), out, options,
                           static_cast<ResizeState*>(io.state())->workspace);
  }

  // The gpu stage: the same window and filter per sample (the same draws), the device resize.
  Status run_batch(BatchIO& io) const override {
    for (int64_t s = 0; s < io.size(); ++s) {
      const ConstTensorView& in = io.input(0, s);
      const auto [w, options] = draw(io.sample_io(s), in.shape);
      HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, s, Shape{size_.h, size_.w, in.shape[2]}, in.dtype, Layout::kHWC));
      HDL_RETURN_IF_ERROR(kernels::cuda::resize(in.crop_hw(w.top, w.left, w.height, w.width), out, options,
                                                io.workspace(), io.stream()));
    }
    return Status::ok();
  }

  std::unique_ptr<OpState> make_state() const override { return std::make_unique<ResizeState>(); }

 private:
  // A sample's window, then its filter (random_interpolation): both stages draw them here.
  std::pair<CropWindow, kernels::ResizeOptions> draw(SampleIO& io, const Shape& in) const {
    StreamDraws draws(io.rng());
    const CropWindow w = random_resized_crop_window({in[0], in[1]}, params_, draws);
    kernels::ResizeOptions options = options_;
    if (!random_filters_.empty()) options.filter = random_filters_[io.rng().below(random_filters_.size())];
    return {w, options};
  }

  SizeHW size_;
  RandomResizedCropParams params_;
  kernels::ResizeOptions options_;
  std::vector<kernels::ResizeFilter> random_filters_;  // random_interpolation
};

// torchvision padding: [p] all sides, [left/right, top/bottom], [left, top, right, bottom].
kernels::Padding parse_padding(const std::vector<int64_t>& p) {
  if (p.size() == 1) return {p[0], p[0], p[0], p[0]};
  if (p.size() == 2) return {p[0], p[1], p[0], p[1]};
  return {p[0], p[1], p[2], p[3]};
}

class PadOp final : public Operator {
 public:
  PadOp(const NodeSpec& n, bool device)
      : device_(device), padding_(parse_padding(n.get_ints("padding"))),
        mode_(kernels::parse_pad_mode(n.get_string("padding_mode").c_str())), fill_(n.get_floats("fill")) {}

  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec> in) const override {
    ops::require_hwc(in[0], {});
    ops::check_fill(fill_, ops::dim(in[0], 2));
    check_device_constant(device_, mode_);
    check_device_fill(device_, fill_);
    const int64_t h = ops::dim(in[0], 0), w = ops::dim(in[0], 1);
    return {ops::hwc_spec(in[0].dtype, h < 0 ? -1 : h + padding_.top + padding_.bottom,
                          w < 0 ? -1 : w + padding_.left + padding_.right, ops::dim(in[0], 2))};
  }

  Status run(SampleIO& io) const override {
    const ConstTensorView& in = io.input(0);
    HDL_ASSIGN_OR_RETURN(const Shape shape, padded_shape(in.shape));
    HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, shape, in.dtype, Layout::kHWC));
    return kernels::pad(in, padding_, mode_, out, fill_);
  }

  // Constant padding is a crop whose window starts at (-top, -left); its fill pads.
  Status run_batch(BatchIO& io) const override {
    for (int64_t s = 0; s < io.size(); ++s) {
      const ConstTensorView& in = io.input(0, s);
      HDL_ASSIGN_OR_RETURN(const Shape shape, padded_shape(in.shape));
      HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, s, shape, in.dtype, Layout::kHWC));
      HDL_RETURN_IF_ERROR(kernels::cuda::crop(in, -padding_.top, -padding_.left, out, io.stream(), fill_));
    }
    return Status::ok();
  }

 private:
  // Both stages: the output's shape, or why this image cannot be padded so.
  Result<Shape> padded_shape(const Shape& in) const {
    const int64_t h = in[0] + padding_.top + padding_.bottom;
    const int64_t w = in[1] + padding_.left + padding_.right;
    if (h < 0 || w < 0) return Status::invalid_argument("padding crops away the whole image " + in.to_string());
    // kernels::pad's rule: negative padding crops first, and may not remove more than the image.
    if (std::max<int64_t>(-padding_.top, 0) + std::max<int64_t>(-padding_.bottom, 0) > in[0] ||
        std::max<int64_t>(-padding_.left, 0) + std::max<int64_t>(-padding_.right, 0) > in[1])
      return Status::invalid_argument("pad: cropped away the image");
    return Shape{h, w, in[2]};
  }

  bool device_;
  kernels::Padding padding_;
  kernels::PadMode mode_;
  std::vector<double> fill_;
};

// torchvision RandomCrop: optional padding, pad_if_needed, then a window at offsets drawn
// uniformly (top first, then left, as get_params does).
class RandomCropOp final : public Operator {
 public:
  RandomCropOp(const NodeSpec& n, bool device)
      : device_(device), size_(*crop_size_arg(n.get_ints("size"))), pad_if_needed_(n.get_bool("pad_if_needed")),
        mode_(kernels::parse_pad_mode(n.get_string("padding_mode").c_str())), fill_(n.get_floats("fill")) {
    const auto& p = n.get_ints("padding");
    if (!p.empty()) padding_ = parse_padding(p);
  }

  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec> in) const override {
    ops::require_hwc(in[0], {});
    ops::check_fill(fill_, ops::dim(in[0], 2));
    check_device_constant(device_, mode_);
    check_device_fill(device_, fill_);
    return {ops::hwc_spec(in[0].dtype, size_.h, size_.w, ops::dim(in[0], 2))};
  }

  Status run(SampleIO& io) const override {
    const ConstTensorView& img = io.input(0);
    const int64_t c = img.shape[2];
    HDL_ASSIGN_OR_RETURN(const Draw d, draw(io, img.shape));
    HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, Shape{size_.h, size_.w, c}, img.dtype, Layout::kHWC));
    if (mode_ == kernels::PadMode::kConstant) {
      const Corner at = d.corner_in_input();
      return kernels::crop(img, at.top, at.left, out, fill_);
    }
    auto* state = static_cast<PadState*>(io.state());
    ConstTensorView cur = img;
    auto pad_step = [&](const kernels::Padding& p, std::vector<uint8_t>& buffer) -> Status {
      if (!p.left && !p.top && !p.right && !p.bottom) return Status::ok();
      const Shape shape{cur.shape[0] + p.top + p.bottom, cur.shape[1] + p.left + p.right, c};
      buffer.resize(static_cast<size_t>(shape.num_elements()) * dtype_size(img.dtype));
      TensorView next(buffer.data(), shape, img.dtype, Layout::kHWC);
      HDL_RETURN_IF_ERROR(kernels::pad(cur, p, mode_, next, fill_));
      cur = next;
      return Status::ok();
    };
    HDL_RETURN_IF_ERROR(pad_step(d.fixed, state->first));
    HDL_RETURN_IF_ERROR(pad_step(d.extra, state->second));
    return kernels::crop(cur, d.top, d.left, out, fill_);
  }

  // Constant padding only (infer_outputs refuses the others): the window read from the
  // unpadded input, padding coming from the crop's fill, as run() does on the cpu.
  Status run_batch(BatchIO& io) const override {
    for (int64_t s = 0; s < io.size(); ++s) {
      const ConstTensorView& img = io.input(0, s);
      HDL_ASSIGN_OR_RETURN(const Draw d, draw(io.sample_io(s), img.shape));
      HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, s, Shape{size_.h, size_.w, img.shape[2]}, img.dtype, Layout::kHWC));
      const Corner at = d.corner_in_input();
      HDL_RETURN_IF_ERROR(kernels::cuda::crop(img, at.top, at.left, out, io.stream(), fill_));
    }
    return Status::ok();
  }

  std::unique_ptr<OpState> make_state() const override { return std::make_unique<PadState>(); }

 private:
  struct PadState final : OpState {
    std::vector<uint8_t> first, second;  // the two padding steps' images
  };
  // A sample's padding and window: offsets in the (twice) padded image.
  struct Draw {
    kernels::Padding fixed, extra;
    int64_t top = 0, left = 0;
    // The window's corner in the unpadded input (constant padding: the crop's fill pads).
    Corner corner_in_input() const { return {top - fixed.top - extra.top, left - fixed.left - extra.left}; }
  };

  // Both stages draw here: torchvision pads twice, `padding`, then pad_if_needed's shortfall
  // on both sides of the padded image (for reflections the two steps differ from one combined
  // pad; for constant padding they do not, and the crop's fill does it without copying); then
  // the offsets, top first, uniform over every position.
  Result<Draw> draw(SampleIO& io, const Shape& img) const {
    Draw d;
    d.fixed = padding_;
    const int64_t h1 = img[0] + d.fixed.top + d.fixed.bottom, w1 = img[1] + d.fixed.left + d.fixed.right;
    if (pad_if_needed_ && w1 < size_.w) d.extra.left = d.extra.right = size_.w - w1;
    if (pad_if_needed_ && h1 < size_.h) d.extra.top = d.extra.bottom = size_.h - h1;
    const int64_t h = h1 + d.extra.top + d.extra.bottom, w = w1 + d.extra.left + d.extra.right;
    if (h < size_.h || w < size_.w)
      return Status::invalid_argument("required crop size " + std::to_string(size_.h) + "x" + std::to_string(size_.w) +
                                      " is larger than the (padded) image " + std::to_string(h) + "x" + std::to_string(w));
    d.top = h == size_.h ? 0 : static_cast<int64_t>(io.rng().below(static_cast<uint64_t>(h - size_.h + 1)));
    d.left = w == size_.w ? 0 : static_cast<int64_t>(io.rng().below(static_cast<uint64_t>(w - size_.w + 1)));
    return d;
  }

  bool device_;
  SizeHW size_;
  kernels::Padding padding_{};
  bool pad_if_needed_;
  kernels::PadMode mode_;
  std::vector<double> fill_;
};

}  // namespace

OpSchema random_crop_schema() {
  OpSchema s;
  s.name = "random_crop";
  s.doc = "torchvision RandomCrop on HWC images (any dtype): optional `padding`, `pad_if_needed` "
          "(pads both sides by the shortfall, as torchvision does), then a size window at offsets "
          "drawn uniformly from every possible position. On the gpu stage padding_mode must be "
          "constant.";
  s.inputs = {{"images", "HWC, any dtype"}};
  s.outputs = {{"images", "[h, w, C], same dtype"}};
  s.uses_randomness = true;
  s.args = {
      {"size", ArgType::kInts, std::nullopt, "[h, w], or [s] for s x s", all_of({list_size({1, 2}), at_least(1)})},
      {"padding", ArgType::kInts, ArgValue(std::vector<int64_t>{}), "[] none, [p], [left_right, top_bottom] or [left, top, right, bottom]", list_size({0, 1, 2, 4})},
      {"pad_if_needed", ArgType::kBool, ArgValue(false), "pad images smaller than size (else they fail the sample, as torchvision raises)"},
      {"padding_mode", ArgType::kString, ArgValue("constant"), "constant, edge, reflect or symmetric", one_of({"constant", "edge", "reflect", "symmetric"})},
      {"fill", ArgType::kFloats, ArgValue(std::vector<double>{}), "constant mode's value: [] (0), one value, or one per channel"},
  };
  s.stages = {Stage::kCpu, Stage::kDevice};
  s.create = [](const NodeSpec& n) { return std::make_unique<RandomCropOp>(n, false); };
  s.create_device = [](const NodeSpec& n) { return std::make_unique<RandomCropOp>(n, true); };
  return s;
}

OpSchema crop_schema() {
  OpSchema s;
  s.name = "crop";
  s.doc = "Crops HWC images (any dtype) to a fixed size at a relative position; crop_pos 0.5 is "
          "torchvision CenterCrop (offset round((size - crop) / 2), half to even). Where the "
          "window leaves the image (a crop larger than the image) pixels are `fill`, as "
          "torchvision pads with 0.";
  s.inputs = {{"images", "HWC, any dtype"}};
  s.outputs = {{"images", "[h, w, C], same dtype"}};
  s.args = {
      {"crop", ArgType::kInts, std::nullopt, "[h, w], or [s] for s x s", all_of({list_size({1, 2}), at_least(1)})},
      crop_pos_arg("crop_pos_x", "horizontal"),
      crop_pos_arg("crop_pos_y", "vertical"),
      {"fill", ArgType::kFloats, ArgValue(std::vector<double>{}), "value of pixels outside the image: [] (0), one value, or one per channel"},
  };
  s.stages = {Stage::kCpu, Stage::kDevice};
  s.create = [](const NodeSpec& n) { return std::make_unique<CropOp>(n, false); };
  s.create_device = [](const NodeSpec& n) { return std::make_unique<CropOp>(n, true); };
  return s;
}

OpSchema random_resized_crop_schema() {
  OpSchema s;
  s.name = "random_resized_crop";
  s.doc = "torchvision RandomResizedCrop on decoded HWC uint8/float32 images: a window of random "
          "area fraction (scale) and log-uniform aspect ratio (ratio), up to `attempts` tries, "
          "else the central crop; resized to `size`. For JPEG input, image_decoder's "
          "random_crop=\"resized\" does the same while decoding only the window.";
  s.inputs = {{"images", "HWC uint8 or float32"}};
  s.outputs = {{"images", "[h, w, C], same dtype"}};
  s.uses_randomness = true;
  s.args = {
      {"size", ArgType::kInts, std::nullopt, "output [h, w], or [s] for s x s", all_of({list_size({1, 2}), at_least(1)})},
      {"scale", ArgType::kFloats, ArgValue({0.08, 1.0}), "range of the window's area fraction", all_of({list_size({2}), at_least(0)})},
      {"ratio", ArgType::kFloats, ArgValue({3.0 / 4.0, 4.0 / 3.0}), "range of the window's aspect ratio (w / h)", all_of({list_size({2}), at_least(0)})},
      {"attempts", ArgType::kInt, ArgValue(10), "tries before the central-crop fallback", at_least(0)},
      {"interpolation", ArgType::kString, ArgValue("bilinear"), "nearest, bilinear, bicubic, box or lanczos", one_of(kFilters)},
      {"random_interpolation", ArgType::kStrings, ArgValue(std::vector<std::string>{}), "[] none, or filters to draw each sample's from uniformly (after the window; interpolation is then unused): timm's RandomResizedCropAndInterpolation(interpolation='random') is [bilinear, bicubic]", one_of(kFilters)},
      {"antialias", ArgType::kBool, ArgValue(true), "low-pass when downscaling (torchvision antialias=True)"},
      {"pillow", ArgType::kBool, ArgValue(false), "PIL.Image.resize's arithmetic (what torchvision does to PIL images): Pillow's weights and uint8 rounding, bit-exact with Pillow; antialias is then ignored (Pillow always low-passes)"},
  };
  s.stages = {Stage::kCpu, Stage::kDevice};
  s.create = [](const NodeSpec& n) { return std::make_unique<RandomResizedCropOp>(n); };
  // After a mixed-stage image_decoder (whole images on the device), or any gpu-stage images.
  s.create_device = [](const NodeSpec& n) -> std::unique_ptr<Operator> {
    if (n.get_bool("pillow")) throw ConfigError("pillow rounding runs on the cpu stage");
    return std::make_unique<RandomResizedCropOp>(n);
  };
  return s;
}

OpSchema pad_schema() {
  OpSchema s;
  s.name = "pad";
  s.doc = "Pads HWC images (any dtype) as torchvision F.pad: padding [p] on all sides, [lr, tb] "
          "or [left, top, right, bottom]; negative values crop. Modes constant (fill), edge, "
          "reflect, symmetric (reflections fold again when a pad exceeds the image). On the gpu stage "
          "padding_mode must be constant.";
  s.inputs = {{"images", "HWC, any dtype"}};
  s.outputs = {{"images", "padded, same dtype"}};
  s.args = {
      {"padding", ArgType::kInts, std::nullopt, "[p], [left_right, top_bottom] or [left, top, right, bottom]", list_size({1, 2, 4})},
      {"padding_mode", ArgType::kString, ArgValue("constant"), "constant, edge, reflect or symmetric", one_of({"constant", "edge", "reflect", "symmetric"})},
      {"fill", ArgType::kFloats, ArgValue(std::vector<double>{}), "constant mode's value: [] (0), one value, or one per channel"},
  };
  s.stages = {Stage::kCpu, Stage::kDevice};
  s.create = [](const NodeSpec& n) { return std::make_unique<PadOp>(n, false); };
  s.create_device = [](const NodeSpec& n) { return std::make_unique<PadOp>(n, true); };
  return s;
}

}  // namespace hdl
