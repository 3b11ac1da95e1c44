// resize: torchvision-compatible resizing of HWC images.
#include "pipeline/errors.h"
#include "pipeline/kernels/cuda/resize.h"
#include "pipeline/kernels/resize.h"
#include "pipeline/operator.h"
#include "pipeline/registry.h"
#include "pipeline/spec.h"

namespace hdl {
namespace {

struct ResizeState final : OpState {
  kernels::ResizeWorkspace workspace;
};

// On the gpu stage: the device twin of the kernel (bit-identical results, docs/CUDA.md), one
// sample after another on the stage's stream; the output of size [h, w] is one dense batch.
class ResizeOp final : public Operator {
 public:
  explicit ResizeOp(const NodeSpec& n) : size_(n.get_ints("size")) {
    if (const int64_t m = n.get_int("max_size"); m > 0) max_size_ = m;
    options_.filter = kernels::parse_resize_filter(n.get_string("interpolation").c_str());
    options_.antialias = n.get_bool("antialias");
    options_.pillow = n.get_bool("pillow");
    // Let the kernel's own checks (torchvision's rules for size / max_size) speak at build time.
    try {
      kernels::resize_output_size({100, 100}, size_, max_size_);
    } catch (const std::invalid_argument& e) {
      throw ConfigError(e.what());
    }
  }

  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec> in) const override {
    const TensorSpec& s = in[0];
    if (s.layout != Layout::kHWC || (s.dtype != DType::kU8 && s.dtype != DType::kF32))
      throw ConfigError("input must be HWC uint8 or float32 images");
    const int64_t c = s.shape.ndim() == 3 ? s.shape[2] : -1;
    if (size_.size() == 2) return {TensorSpec{s.dtype, Shape{size_[0], size_[1], c}, Layout::kHWC}};
    return {TensorSpec{s.dtype, Shape{-1, -1, c}, Layout::kHWC}};
  }

  Status run(SampleIO& io) const override {
    const ConstTensorView& in = io.input(0);
    const kernels::SizeHW out_size = kernels::resize_output_size({in.shape[0], in.shape[1]}, size_, max_size_);
    HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, Shape{out_size.h, out_size.w, in.shape[2]}, in.dtype, Layout::kHWC));
    return kernels::resize(in, out, options_, static_cast<ResizeState*>(io.state())->workspace);
  }

  // The gpu stage: the device twin of the kernel (bit-identical, docs/CUDA.md), one sample
  // after another on the stage's stream; a [h, w] output is one dense batch.
  Status run_batch(BatchIO& io) const override {
    for (int64_t s = 0; s < io.size(); ++s) {
      const ConstTensorView& in = io.input(0, s);
      const kernels::SizeHW out_size = kernels::resize_output_size({in.shape[0], in.shape[1]}, size_, max_size_);
      HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, s, Shape{out_size.h, out_size.w, in.shape[2]}, in.dtype, Layout::kHWC));
      HDL_RETURN_IF_ERROR(kernels::cuda::resize(in, out, options_, io.workspace(), io.stream()));
    }
    return Status::ok();
  }

  std::unique_ptr<OpState> make_state() const override { return std::make_unique<ResizeState>(); }

 private:
  std::vector<int64_t> size_;
  std::optional<int64_t> max_size_;
  kernels::ResizeOptions options_;
};

}  // namespace

OpSchema resize_schema() {
  OpSchema s;
  s.name = "resize";
  s.doc = "Resizes HWC images as torchvision.transforms.Resize does: size [s] scales the shorter "
          "side to s (the longer side truncated, as torchvision), size [h, w] is exact; max_size "
          "caps the longer side. Bilinear with antialiasing by default.";
  s.inputs = {{"images", "HWC uint8 or float32"}};
  s.outputs = {{"images", "resized, same dtype and channels"}};
  s.args = {
      {"size", ArgType::kInts, std::nullopt, "[shorter_side] or [height, width]", all_of({list_size({1, 2}), at_least(1)})},
      {"max_size", ArgType::kInt, ArgValue(0), "if > 0, the longer side after resizing is at most this (size [s] only)", at_least(0)},
      {"interpolation", ArgType::kString, ArgValue("bilinear"), "nearest, bilinear, bicubic, box or lanczos",
       one_of({"nearest", "bilinear", "bicubic", "box", "lanczos"})},
      {"antialias", ArgType::kBool, ArgValue(true), "low-pass when downscaling, as torchvision antialias=True and PIL"},
      {"pillow", ArgType::kBool, ArgValue(false), "PIL.Image.resize's arithmetic (what torchvision does to PIL images): Pillow's weights and uint8 rounding, bit-exact with Pillow; antialias is then ignored (Pillow always low-passes). Cpu stage only (the gpu stage refuses it)"},
  };
  s.stages = {Stage::kCpu, Stage::kDevice};
  s.create = [](const NodeSpec& n) { return std::make_unique<ResizeOp>(n); };
  // run() on the cpu stage, run_batch() on the gpu stage, which has no Pillow integer passes.
  s.create_device = [](const NodeSpec& n) -> std::unique_ptr<Operator> {
    if (n.get_bool("pillow")) throw ConfigError("pillow rounding runs on the cpu stage");
    return std::make_unique<ResizeOp>(n);
  };
  return s;
}

}  // namespace hdl
