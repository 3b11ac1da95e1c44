#include "pipeline/kernels/crop.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

#include "pipeline/kernels/detail/border.h"
#include "pipeline/kernels/detail/elements.h"

namespace hdl::kernels {
namespace {

using detail::offset3;

Status check_3d(const char* what, const ConstTensorView& src, const TensorView& dst) {
  if (src.ndim() != 3 || dst.ndim() != 3 || src.dtype != dst.dtype) {
    return Status::invalid_argument(std::string(what) + ": expected 3-D views of one dtype, got " +
                                    src.shape.to_string() + " " + dtype_name(src.dtype) + " -> " +
                                    dst.shape.to_string() + " " + dtype_name(dst.dtype));
  }
  return Status::ok();
}

Status check_fill(std::span<const double> fill, int64_t channels) {
  if (fill.size() > 1 && static_cast<int64_t>(fill.size()) != channels) {
    return Status::invalid_argument("fill has " + std::to_string(fill.size()) +
                                    " values for " + std::to_string(channels) + " channels");
  }
  return Status::ok();
}

// Copies n pixels of C elements; one memcpy when both runs are dense.
template <typename E>
void copy_pixels(E* d, int64_t dsx, int64_t dsc, const E* s, int64_t ssx, int64_t ssc,
                 int64_t n, int64_t C) {
  if (dsx == C && ssx == C && dsc == 1 && ssc == 1) {
    std::memcpy(d, s, static_cast<size_t>(n * C) * sizeof(E));
    return;
  }
  for (int64_t x = 0; x < n; ++x) {
    for (int64_t c = 0; c < C; ++c) d[x * dsx + c * dsc] = s[x * ssx + c * ssc];
  }
}

template <typename E>
void fill_pixels(E* d, int64_t dsx, int64_t dsc, int64_t n, int64_t C, DType t,
                 std::span<const double> fill) {
  for (int64_t c = 0; c < C; ++c) {
    const double v = fill.empty() ? 0.0 : fill[fill.size() == 1 ? 0 : c];
    const uint64_t bits = detail::to_element_bits(v, t);
    E e;
    std::memcpy(&e, &bits, sizeof(E));
    for (int64_t x = 0; x < n; ++x) d[x * dsx + c * dsc] = e;
  }
}

int64_t map_index(int64_t i, int64_t n, PadMode mode) {
  switch (mode) {
    case PadMode::kConstant: return (i >= 0 && i < n) ? i : -1;
    case PadMode::kEdge: return detail::edge_index(i, n);
    case PadMode::kReflect: return detail::reflect_index(i, n);
    case PadMode::kSymmetric: return detail::symmetric_index(i, n);
  }
  return -1;
}

// dst(y, x) = src(map(y - oy), map(x - ox)), or fill where map gives -1 (constant mode).
template <typename E>
void remap(const ConstTensorView& src, const TensorView& dst, int64_t oy, int64_t ox,
           PadMode mode, std::span<const double> fill) {
  const E* sp = static_cast<const E*>(src.data);
  E* dp = static_cast<E*>(dst.data);
  const int64_t H = src.shape[0], W = src.shape[1], C = src.shape[2];
  const int64_t dh = dst.shape[0], dw = dst.shape[1];
  const int64_t ssx = src.strides[1], ssc = src.strides[2];
  const int64_t dsx = dst.strides[1], dsc = dst.strides[2];
  // Columns [x0, x1) of dst come straight from columns [x0 - ox, x1 - ox) of src.
  const int64_t x0 = std::clamp<int64_t>(ox, 0, dw), x1 = std::clamp<int64_t>(ox + W, x0, dw);
  for (int64_t y = 0; y < dh; ++y) {
    E* drow = dp + y * dst.strides[0];
    const int64_t sy = H > 0 ? map_index(y - oy, H, mode) : -1;
    if (sy < 0 || W == 0) {
      fill_pixels(drow, dsx, dsc, dw, C, dst.dtype, fill);
      continue;
    }
    const E* srow = sp + sy * src.strides[0];
    auto border = [&](int64_t from, int64_t to) {
      if (mode == PadMode::kConstant) return fill_pixels(drow + from * dsx, dsx, dsc, to - from, C, dst.dtype, fill);
      for (int64_t x = from; x < to; ++x) {
        const int64_t sx = map_index(x - ox, W, mode);
        copy_pixels(drow + x * dsx, dsx, dsc, srow + sx * ssx, ssx, ssc, 1, C);
      }
    };
    border(0, x0);
    copy_pixels(drow + x0 * dsx, dsx, dsc, srow + (x0 - ox) * ssx, ssx, ssc, x1 - x0, C);
    border(x1, dw);
  }
}

Status remap_any(const ConstTensorView& src, const TensorView& dst, int64_t oy, int64_t ox,
                 PadMode mode, std::span<const double> fill) {
  detail::dispatch_by_size(src.dtype, [&]<typename E>() { remap<E>(src, dst, oy, ox, mode, fill); });
  return Status::ok();
}

// Element-wise copy between 3-D views of equal shape (any strides, negative included).
template <typename E>
void copy_3d(const ConstTensorView& src, const TensorView& dst) {
  const E* sp = static_cast<const E*>(src.data);
  E* dp = static_cast<E*>(dst.data);
  const int64_t n1 = src.shape[1], n2 = src.shape[2];
  // Rows of whole pixels on both sides (HWC images, flipped left-right or not): one memcpy per
  // row, or pixels in reverse order; the general loop below costs an offset per pixel.
  const bool rows_dense = dst.strides[2] == 1 && dst.strides[1] == n2 && src.strides[2] == 1;
  if (rows_dense && (src.strides[1] == n2 || src.strides[1] == -n2)) {
    for (int64_t a = 0; a < src.shape[0]; ++a) {
      const E* s = sp + a * src.strides[0];
      E* d = dp + a * dst.strides[0];
      if (src.strides[1] == n2) {
        std::memcpy(d, s, static_cast<size_t>(n1 * n2) * sizeof(E));
      } else if (n2 == 3) {
        for (int64_t b = 0; b < n1; ++b) {
          d[3 * b] = s[-3 * b], d[3 * b + 1] = s[-3 * b + 1], d[3 * b + 2] = s[-3 * b + 2];
        }
      } else {
        for (int64_t b = 0; b < n1; ++b)
          for (int64_t c = 0; c < n2; ++c) d[b * n2 + c] = s[-b * n2 + c];
      }
    }
    return;
  }
  for (int64_t a = 0; a < src.shape[0]; ++a) {
    for (int64_t b = 0; b < src.shape[1]; ++b) {
      const E* s = sp + offset3(src, a, b, 0);
      E* d = dp + offset3(dst, a, b, 0);
      if (n2 >= 16 && src.strides[2] == 1 && dst.strides[2] == 1) {
        std::memcpy(d, s, static_cast<size_t>(n2) * sizeof(E));
      } else {
        for (int64_t c = 0; c < n2; ++c) d[c * dst.strides[2]] = s[c * src.strides[2]];
      }
    }
  }
}

// Copies a permuted view of `src` (shape and strides already rearranged) into dst.
Status copy_permuted(const char* what, const ConstTensorView& view, const TensorView& dst) {
  if (view.shape != dst.shape) {
    return Status::invalid_argument(std::string(what) + ": dst must be " + view.shape.to_string() +
                                    ", got " + dst.shape.to_string());
  }
  detail::dispatch_by_size(view.dtype, [&]<typename E>() { copy_3d<E>(view, dst); });
  return Status::ok();
}

ConstTensorView permuted(const ConstTensorView& v, int a, int b, int c) {
  ConstTensorView p = v;
  p.shape = {v.shape[a], v.shape[b], v.shape[c]};
  p.strides = {v.strides[a], v.strides[b], v.strides[c]};
  return p;
}

}  // namespace

PadMode parse_pad_mode(const char* name) {
  const std::string_view n(name);
  if (n == "constant") return PadMode::kConstant;
  if (n == "edge") return PadMode::kEdge;
  if (n == "reflect") return PadMode::kReflect;
  if (n == "symmetric") return PadMode::kSymmetric;
  throw std::invalid_argument("unknown padding mode \"" + std::string(n) +
                              "\" (expected constant, edge, reflect or symmetric)");
}

Status crop(const ConstTensorView& src, int64_t top, int64_t left, const TensorView& dst,
            std::span<const double> fill) {
  HDL_RETURN_IF_ERROR(check_3d("crop", src, dst));
  HDL_RETURN_IF_ERROR(check_fill(fill, src.shape[2]));
  if (dst.shape[2] != src.shape[2]) return Status::invalid_argument("crop: channel counts differ");
  return remap_any(src, dst, -top, -left, PadMode::kConstant, fill);
}

Status pad(const ConstTensorView& src, const Padding& p, PadMode mode, const TensorView& dst,
           std::span<const double> fill) {
  HDL_RETURN_IF_ERROR(check_3d("pad", src, dst));
  HDL_RETURN_IF_ERROR(check_fill(fill, src.shape[2]));
  const int64_t H = src.shape[0], W = src.shape[1];
  const Shape want{H + p.top + p.bottom, W + p.left + p.right, src.shape[2]};
  if (dst.shape != want || want[0] < 0 || want[1] < 0) {
    return Status::invalid_argument("pad: dst must be " + want.to_string() + ", got " +
                                    dst.shape.to_string());
  }
  // Negative padding crops first, so that reflections fold about the cropped edges.
  const int64_t ct = std::max<int64_t>(-p.top, 0), cb = std::max<int64_t>(-p.bottom, 0);
  const int64_t cl = std::max<int64_t>(-p.left, 0), cr = std::max<int64_t>(-p.right, 0);
  if (ct + cb > H || cl + cr > W) return Status::invalid_argument("pad: cropped away the image");
  const ConstTensorView inner = src.crop_hw(ct, cl, H - ct - cb, W - cl - cr);
  if ((inner.shape[0] == 0 || inner.shape[1] == 0) && mode != PadMode::kConstant && dst.num_elements()) {
    return Status::invalid_argument("pad: nothing to reflect in an empty image");
  }
  return remap_any(inner, dst, std::max<int64_t>(p.top, 0), std::max<int64_t>(p.left, 0), mode, fill);
}

Status flip(const ConstTensorView& src, const TensorView& dst, bool horizontal, bool vertical) {
  HDL_RETURN_IF_ERROR(check_3d("flip", src, dst));
  ConstTensorView v = src;
  const int64_t elem = static_cast<int64_t>(dtype_size(src.dtype));
  const char* base = static_cast<const char*>(src.data);
  if (horizontal && src.shape[1] > 0) {
    base += (src.shape[1] - 1) * src.strides[1] * elem;
    v.strides[1] = -src.strides[1];
  }
  if (vertical && src.shape[0] > 0) {
    base += (src.shape[0] - 1) * src.strides[0] * elem;
    v.strides[0] = -src.strides[0];
  }
  v.data = base;
  return copy_permuted("flip", v, dst);
}

Status hwc_to_chw(const ConstTensorView& src, const TensorView& dst) {
  HDL_RETURN_IF_ERROR(check_3d("hwc_to_chw", src, dst));
  return copy_permuted("hwc_to_chw", permuted(src, 2, 0, 1), dst);
}

Status chw_to_hwc(const ConstTensorView& src, const TensorView& dst) {
  HDL_RETURN_IF_ERROR(check_3d("chw_to_hwc", src, dst));
  return copy_permuted("chw_to_hwc", permuted(src, 1, 2, 0), dst);
}

}  // namespace hdl::kernels
