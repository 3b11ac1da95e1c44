#include "pipeline/kernels/erase.h"

#include <string>

namespace hdl::kernels {
namespace {

// The channel count, or an error when the view, axis or rectangle do not fit.
Result<int64_t> check(const char* what, const TensorView& img, const EraseRect& r, int axis) {
  if (img.ndim() != 3 || img.dtype != DType::kF32 || (axis != 0 && axis != 2))
    return Status::invalid_argument(std::string(what) + ": expected a 3-D float32 CHW or HWC view, got " +
                                    img.shape.to_string() + " " + dtype_name(img.dtype));
  const int64_t h = img.shape[axis == 0 ? 1 : 0], w = img.shape[axis == 0 ? 2 : 1];
  if (r.top < 0 || r.left < 0 || r.height < 0 || r.width < 0 || r.top + r.height > h || r.left + r.width > w)
    return Status::invalid_argument(std::string(what) + ": rectangle (" + std::to_string(r.top) + ", " +
                                    std::to_string(r.left) + ", " + std::to_string(r.height) + ", " +
                                    std::to_string(r.width) + ") leaves the " + std::to_string(h) + "x" +
                                    std::to_string(w) + " image");
  return img.shape[axis];
}

// Calls f(c, y, x, element) for every element of the rectangle, channel-major.
template <typename F>
void for_each_in_rect(const TensorView& img, const EraseRect& r, int axis, int64_t channels, F&& f) {
  // Element strides along channel, row and column.
  const int64_t sc = img.strides[axis], sy = img.strides[axis == 0 ? 1 : 0], sx = img.strides[axis == 0 ? 2 : 1];
  auto* base = static_cast<float*>(img.data) + r.top * sy + r.left * sx;
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t y = 0; y < r.height; ++y) {
      float* row = base + c * sc + y * sy;
      for (int64_t x = 0; x < r.width; ++x) f(c, y, x, row[x * sx]);
    }
  }
}

}  // namespace

Status erase(const TensorView& img, const EraseRect& rect, std::span<const float> values, int channel_axis) {
  HDL_ASSIGN_OR_RETURN(const int64_t channels, check("erase", img, rect, channel_axis));
  if (values.size() != 1 && static_cast<int64_t>(values.size()) != channels)
    return Status::invalid_argument("erase: " + std::to_string(values.size()) + " values for " +
                                    std::to_string(channels) + " channels");
  const bool one = values.size() == 1;
  for_each_in_rect(img, rect, channel_axis, channels,
                   [&](int64_t c, int64_t, int64_t, float& e) { e = values[one ? 0 : c]; });
  return Status::ok();
}

Status erase_patch(const TensorView& img, const EraseRect& rect, std::span<const float> patch, int channel_axis) {
  HDL_ASSIGN_OR_RETURN(const int64_t channels, check("erase_patch", img, rect, channel_axis));
  if (static_cast<int64_t>(patch.size()) != channels * rect.height * rect.width)
    return Status::invalid_argument("erase_patch: " + std::to_string(patch.size()) + " values for a " +
                                    std::to_string(channels) + "x" + std::to_string(rect.height) + "x" +
                                    std::to_string(rect.width) + " rectangle");
  for_each_in_rect(img, rect, channel_axis, channels, [&](int64_t c, int64_t y, int64_t x, float& e) {
    e = patch[static_cast<size_t>((c * rect.height + y) * rect.width + x)];
  });
  return Status::ok();
}

}  // namespace hdl::kernels
