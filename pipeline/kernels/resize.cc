#include "pipeline/kernels/resize.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <string_view>

#include "pipeline/kernels/detail/resize_passes.h"

namespace hdl::kernels {
namespace {

using detail::AxisTable;
using detail::make_table;
using detail::plane_of;

Status check_views(const ConstTensorView& src, const TensorView& dst) {
  if (src.ndim() != 3 || dst.ndim() != 3) {
    return Status::invalid_argument("resize: expected HWC views, got " + src.shape.to_string() +
                                    " -> " + dst.shape.to_string());
  }
  auto ok_type = [](DType t) { return t == DType::kU8 || t == DType::kF32; };
  if (!ok_type(src.dtype) || !ok_type(dst.dtype)) {
    return Status::invalid_argument(std::string("resize: supports uint8 and float32, got ") +
                                    dtype_name(src.dtype) + " -> " + dtype_name(dst.dtype));
  }
  if (src.shape[2] != dst.shape[2] || src.num_elements() == 0 || dst.num_elements() == 0) {
    return Status::invalid_argument("resize: bad shapes " + src.shape.to_string() + " -> " +
                                    dst.shape.to_string());
  }
  if (src.shape[0] > INT32_MAX || src.shape[1] > INT32_MAX) {
    return Status::invalid_argument("resize: input too large " + src.shape.to_string());
  }
  return Status::ok();
}

// Pillow's uint8 semantics (see run_passes) for the Pillow-only filters, and for every filter
// under ResizeOptions::pillow (nearest's weights are all 1: the rounding changes nothing).
bool pil_semantics(const TensorView& dst, const ResizeOptions& o) {
  return dst.dtype == DType::kU8 &&
         (o.pillow || o.filter == ResizeFilter::kBox || o.filter == ResizeFilter::kLanczos);
}

void run_any(const ConstTensorView& src, const TensorView& dst, const AxisTable* ax,
             const AxisTable* ay, bool pil, bool v_first, ResizeWorkspace& ws, bool pillow) {
  if (pillow && src.dtype == DType::kU8 && dst.dtype == DType::kU8) {  // Pillow's integer sums
    detail::run_passes_pillow(plane_of<uint8_t>(src), src.shape[0], dst, ax, ay, ws);
  } else if (src.dtype == DType::kU8) {
    detail::run_passes(plane_of<uint8_t>(src), src.shape[0], dst, ax, ay, pil, v_first, ws);
  } else {
    detail::run_passes(plane_of<float>(src), src.shape[0], dst, ax, ay, pil, v_first, ws);
  }
}

// One axis of a window of a full resize: the rows of the full weight table for output pixels
// [d0, d0 + n), with start indices made relative to `lo` (the first source pixel read), and the
// source range [lo, hi) those rows read, in full-image coordinates. An axis that keeps its size
// is skipped by resize() (identity), so its window reads exactly [d0, d0 + n).
struct WindowAxis {
  AxisTable table;  // valid when `resampled`
  bool resampled = false;
  int64_t lo = 0, hi = 0;
  int taps = 0;     // of the full table (for the pass-order decision)
};

WindowAxis window_axis(int64_t in, int64_t out, int64_t d0, int64_t n, bool resampled,
                       const ResizeOptions& o, std::vector<float>& w, std::vector<int32_t>& start,
                       ResizeWorkspace& ws) {
  WindowAxis a;
  a.resampled = resampled;
  if (!resampled) {
    a.lo = d0, a.hi = d0 + n;
    return a;
  }
  const AxisTable full = make_table(in, out, o, w, start, ws);
  a.taps = full.taps;
  a.lo = in, a.hi = 0;
  for (int64_t i = d0; i < d0 + n; ++i) {
    a.lo = std::min<int64_t>(a.lo, start[i]);
    a.hi = std::max<int64_t>(a.hi, start[i] + full.taps);
  }
  // Forward in place: element i moves to i - d0 <= i.
  for (int64_t i = 0; i < n; ++i) start[i] = static_cast<int32_t>(start[d0 + i] - a.lo);
  a.table = {w.data() + d0 * full.taps, start.data(), full.taps, n};
  return a;
}

bool window_inside(PointYX origin, int64_t h, int64_t w, SizeHW full) {
  return origin.y >= 0 && origin.x >= 0 && h > 0 && w > 0 && origin.y + h <= full.h &&
         origin.x + w <= full.w;
}

Status check_full_sizes(SizeHW in, SizeHW out) {
  if (in.h <= 0 || in.w <= 0 || out.h <= 0 || out.w <= 0 || in.h > INT32_MAX || in.w > INT32_MAX) {
    return Status::invalid_argument("resize_window: bad full sizes " + std::to_string(in.h) + "x" +
                                    std::to_string(in.w) + " -> " + std::to_string(out.h) + "x" +
                                    std::to_string(out.w));
  }
  return Status::ok();
}

// Both axes of a window of full_in -> full_out, tables in `ws`.
struct WindowAxes {
  WindowAxis x, y;
};

Result<WindowAxes> window_axes(SizeHW in, SizeHW out, PointYX d0, SizeHW n, const ResizeOptions& o,
                               ResizeWorkspace& ws) {
  HDL_RETURN_IF_ERROR(check_full_sizes(in, out));
  if (!window_inside(d0, n.h, n.w, out)) {
    return Status::invalid_argument("resize_window: output window at (" + std::to_string(d0.y) +
                                    ", " + std::to_string(d0.x) + ") of " + std::to_string(n.h) +
                                    "x" + std::to_string(n.w) + " leaves the full output");
  }
  // The same skipping rule as resize(): an unchanged axis is the identity, unless neither changes.
  const bool do_h = in.w != out.w || in.h == out.h;
  const bool do_v = in.h != out.h;
  return WindowAxes{window_axis(in.w, out.w, d0.x, n.w, do_h, o, ws.weights_x, ws.start_x, ws),
                    window_axis(in.h, out.h, d0.y, n.h, do_v, o, ws.weights_y, ws.start_y, ws)};
}

}  // namespace

Result<PixelSpan> resize_source_span(SizeHW full_in, SizeHW full_out, PointYX dst_origin,
                                     SizeHW dst_size, const ResizeOptions& options,
                                     ResizeWorkspace* workspace) {
  ResizeWorkspace local;
  ResizeWorkspace& ws = workspace ? *workspace : local;
  HDL_ASSIGN_OR_RETURN(WindowAxes a, window_axes(full_in, full_out, dst_origin, dst_size, options, ws));
  return PixelSpan{a.y.lo, a.y.hi, a.x.lo, a.x.hi};
}

Status resize_window(const ConstTensorView& src, PointYX src_origin, SizeHW full_in,
                     const TensorView& dst, PointYX dst_origin, SizeHW full_out,
                     const ResizeOptions& options, ResizeWorkspace& ws) {
  HDL_RETURN_IF_ERROR(check_views(src, dst));
  if (!window_inside(src_origin, src.shape[0], src.shape[1], full_in)) {
    return Status::invalid_argument("resize_window: source window " + src.shape.to_string() +
                                    " at (" + std::to_string(src_origin.y) + ", " +
                                    std::to_string(src_origin.x) + ") leaves the full input");
  }
  HDL_ASSIGN_OR_RETURN(WindowAxes a, window_axes(full_in, full_out, dst_origin,
                                                 {dst.shape[0], dst.shape[1]}, options, ws));
  const PixelSpan need{a.y.lo - src_origin.y, a.y.hi - src_origin.y, a.x.lo - src_origin.x,
                       a.x.hi - src_origin.x};
  if (need.y0 < 0 || need.x0 < 0 || need.y1 > src.shape[0] || need.x1 > src.shape[1]) {
    return Status::invalid_argument(
        "resize_window: the source window does not cover the pixels the output window reads "
        "(rows [" + std::to_string(a.y.lo) + ", " + std::to_string(a.y.hi) + "), columns [" +
        std::to_string(a.x.lo) + ", " + std::to_string(a.x.hi) + ") of the full input)");
  }
  const ConstTensorView window = src.crop_hw(need.y0, need.x0, need.h(), need.w());
  // The full image's pass order, so that the float sums happen in the same order.
  const AxisTable full_x{nullptr, nullptr, a.x.taps, full_out.w};
  const AxisTable full_y{nullptr, nullptr, a.y.taps, full_out.h};
  const bool v_first = a.x.resampled && a.y.resampled &&
                       detail::vertical_first(full_in.h, full_in.w, full_x, full_y);
  run_any(window, dst, a.x.resampled ? &a.x.table : nullptr, a.y.resampled ? &a.y.table : nullptr,
          pil_semantics(dst, options), v_first, ws, options.pillow);
  return Status::ok();
}

ResizeFilter parse_resize_filter(const char* name) {
  const std::string_view n(name);
  if (n == "nearest") return ResizeFilter::kNearest;
  if (n == "bilinear" || n == "linear") return ResizeFilter::kLinear;
  if (n == "bicubic" || n == "cubic") return ResizeFilter::kCubic;
  if (n == "box") return ResizeFilter::kBox;
  if (n == "lanczos" || n == "lanczos3") return ResizeFilter::kLanczos;
  throw std::invalid_argument("unknown resize filter \"" + std::string(n) +
                              "\" (expected nearest, bilinear, bicubic, box or lanczos)");
}

Status resize(const ConstTensorView& src, const TensorView& dst, const ResizeOptions& options,
              ResizeWorkspace& ws) {
  HDL_RETURN_IF_ERROR(check_views(src, dst));
  const int64_t in_h = src.shape[0], in_w = src.shape[1];
  const int64_t out_h = dst.shape[0], out_w = dst.shape[1];
  // A pass over an axis that keeps its size is the identity (for every filter), so skip it;
  // when neither axis changes, one horizontal identity pass copies and converts.
  const bool do_h = in_w != out_w || in_h == out_h;
  const bool do_v = in_h != out_h;
  AxisTable ax, ay;
  if (do_h) ax = make_table(in_w, out_w, options, ws.weights_x, ws.start_x, ws);
  if (do_v) ay = make_table(in_h, out_h, options, ws.weights_y, ws.start_y, ws);
  const AxisTable* pax = do_h ? &ax : nullptr;
  const AxisTable* pay = do_v ? &ay : nullptr;
  const bool pil = pil_semantics(dst, options);
  const bool v_first = pax && pay && detail::vertical_first(in_h, in_w, ax, ay);
  run_any(src, dst, pax, pay, pil, v_first, ws, options.pillow);
  return Status::ok();
}

SizeHW resize_output_size(SizeHW in, std::span<const int64_t> size,
                          std::optional<int64_t> max_size) {
  if (size.size() == 2) {
    if (max_size) {
      throw std::invalid_argument(
          "max_size should only be passed if size specifies the length of the smaller edge");
    }
    if (size[0] <= 0 || size[1] <= 0) throw std::invalid_argument("resize: sizes must be > 0");
    return {size[0], size[1]};
  }
  if (size.size() != 1) {
    throw std::invalid_argument("resize: size must have 1 or 2 elements, got " +
                                std::to_string(size.size()));
  }
  if (size[0] <= 0 || in.h <= 0 || in.w <= 0) throw std::invalid_argument("resize: sizes must be > 0");
  const bool w_short = in.w <= in.h;
  const int64_t short_side = w_short ? in.w : in.h, long_side = w_short ? in.h : in.w;
  // Python's int(a * b / c): exact integer product, correctly rounded true division, truncation.
  int64_t new_short = size[0];
  int64_t new_long = static_cast<int64_t>(static_cast<double>(new_short * long_side) /
                                          static_cast<double>(short_side));
  if (max_size) {
    if (*max_size <= new_short) {
      throw std::invalid_argument("max_size = " + std::to_string(*max_size) +
                                  " must be strictly greater than the requested size for the "
                                  "smaller edge size = " + std::to_string(new_short));
    }
    if (new_long > *max_size) {
      new_short = static_cast<int64_t>(static_cast<double>(*max_size * new_short) /
                                       static_cast<double>(new_long));
      new_long = *max_size;
    }
  }
  return w_short ? SizeHW{new_long, new_short} : SizeHW{new_short, new_long};
}

}  // namespace hdl::kernels
