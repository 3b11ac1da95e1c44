// Helpers shared by the image operators (internal to pipeline/operators): input checks for
// infer_outputs, per-sample argument access, argument validators.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "media/api.h"
#include "pipeline/errors.h"
#include "pipeline/operator.h"
#include "pipeline/schema.h"

HDL_API_BEGIN
namespace hdl::ops {

/// Throws ConfigError("input must be HWC <dtypes> images, got ...") unless `s` is a 3-D HWC
/// tensor of one of `dtypes` (empty: any dtype) and, if `channels` is non-empty and the channel
/// count is known, one of those channel counts.
void require_hwc(const TensorSpec& s, std::initializer_list<DType> dtypes,
                 std::initializer_list<int64_t> channels = {});

/// Dimension i of a 3-D spec (-1 when unknown).
inline int64_t dim(const TensorSpec& s, int i) { return s.shape.ndim() == 3 ? s.shape[i] : -1; }

/// The same image shape with another dtype or channel count.
inline TensorSpec hwc_spec(DType dtype, int64_t h, int64_t w, int64_t c) {
  return TensorSpec{dtype, Shape{h, w, c}, Layout::kHWC};
}

/// "CHW" / "HWC" -> Layout.
inline Layout parse_layout(const std::string& s) { return s == "CHW" ? Layout::kCHW : Layout::kHWC; }

/// The per-sample value of an int-like flag argument (e.g. mirror) or its constant.
inline bool flag_arg(const SampleIO& io, const char* name, bool constant) {
  return io.scalar_arg(name, constant ? 1.0 : 0.0) != 0.0;
}

/// A per-sample float argument, checked against [lo, hi]; InvalidArgument names it otherwise.
Result<double> float_arg(const SampleIO& io, const char* name, double constant, double lo, double hi);

/// The `probability` argument of the operators torchvision applies at random (RandomGrayscale,
/// RandomSolarize, RandomErasing, RandomApply([...], p)): a float in [0, 1], per sample or
/// constant, default `dflt`.
ArgSchema probability_arg(double dflt);

/// Whether to apply the operator to this sample: p is the value bound to "probability" for this
/// sample, else `constant`. One uniform float32 is drawn from the operator's stream (as
/// torchvision's `torch.rand(1) < p`) only when 0 < p < 1, so p = 1 draws nothing and a 0/1
/// coin_flip bound to several operators' probability decides for all of them at once
/// (RandomApply of several transforms: all or none). InvalidArgument when p is outside [0, 1].
Result<bool> apply_draw(SampleIO& io, double constant);

/// Whether `probability` may be below 1 for some sample: a constant below 1, or bound per sample.
bool may_skip(const NodeSpec& n);

/// Validator: every element odd and positive.
ArgValidator odd_positive();

/// Throws ConfigError naming `arg` unless `fill` has 0, 1 or `channels` values (channels < 0:
/// not known yet, anything goes).
void check_fill(const std::vector<double>& fill, int64_t channels, const char* arg = "fill");

/// The "fill" argument of an op on PIL-stage images as Pillow takes it: int() of each value
/// (torchvision's _parse_fill, timm's img_mean).
std::vector<uint8_t> pil_fill_arg(const NodeSpec& n);

/// infer_outputs of an op that keeps a PIL-stage image: HWC uint8 with 1 or 3 channels (else
/// ConfigError), `fill` checked against the channels; the output spec is the input's.
TensorSpec pil_image_output(const TensorSpec& in, const std::vector<uint8_t>& fill);

/// Applies `n` steps to the HWC uint8 image `in` in turn: step(i, src, dst) writes step i of
/// src into dst (same shape, not overlapping: geometric ops cannot work in place). The last
/// step writes `out`, the others one of the two `scratch` images, alternately; n == 0 copies.
template <typename Step>
Status apply_steps(const ConstTensorView& in, const TensorView& out, size_t n, std::vector<uint8_t> (&scratch)[2],
                   Step&& step) {
  if (n == 0) {
    copy(in, out);
    return Status::ok();
  }
  ConstTensorView cur = in;
  for (size_t i = 0; i < n; ++i) {
    TensorView dst = out;
    if (i + 1 < n) {
      scratch[i % 2].resize(in.num_bytes());
      dst = TensorView(scratch[i % 2].data(), in.shape, DType::kU8, Layout::kHWC);
    }
    HDL_RETURN_IF_ERROR(step(i, cur, dst));
    cur = dst;
  }
  return Status::ok();
}

}  // namespace hdl::ops
HDL_API_END
