#include "pipeline/kernels/cuda/host_tables.h"

#include <cstring>
#include <string>

#include "pipeline/kernels/detail/elements.h"
#include "pipeline/kernels/detail/resize_weights.h"

namespace hdl::kernels::cuda {
namespace {

Status fill_axis(int64_t in, int64_t out, bool resampled, const ResizeOptions& o, ResizePass& a) {
  a.resampled = resampled, a.in = in, a.out = out;
  a.taps = resampled ? kernels::detail::compute_resize_weights(in, out, o, a.weights, a.start) : 0;
  return Status::ok();
}

// The CPU kernel's pass-order cost model (detail::vertical_first in resize_passes.h): the order
// changes how float sums associate, so the device takes the same one.
bool cpu_vertical_first(int64_t in_h, int64_t in_w, const ResizePass& x, const ResizePass& y) {
  const double out_w = static_cast<double>(x.out), out_h = static_cast<double>(y.out);
  const double h_first = 3.0 * in_h * out_w * x.taps + out_h * out_w * y.taps;
  const double v_first = out_h * in_w * y.taps + 3.0 * out_h * out_w * x.taps;
  return v_first <= h_first;
}

}  // namespace

int64_t ResizePasses::intermediate_elements(int64_t channels) const {
  if (!x.resampled || !y.resampled) return 0;
  const bool v_first = vertical_first && !pil;
  // v-first: out_h rows of the input width; h-first: input rows of the output width.
  return (v_first ? y.out * x.in : y.in * x.out) * channels;
}

Status make_resize_passes(SizeHW in, SizeHW out, const ResizeOptions& o, DType out_dtype,
                          ResizePasses& passes) {
  if (in.h < 1 || in.w < 1 || out.h < 1 || out.w < 1 || in.h > INT32_MAX || in.w > INT32_MAX ||
      out.h > INT32_MAX || out.w > INT32_MAX) {
    return Status::invalid_argument("resize: bad sizes " + std::to_string(in.h) + "x" +
                                    std::to_string(in.w) + " -> " + std::to_string(out.h) + "x" +
                                    std::to_string(out.w));
  }
  if (out_dtype != DType::kU8 && out_dtype != DType::kF32) {
    return Status::invalid_argument(std::string("resize: supports uint8 and float32 output, got ") +
                                    dtype_name(out_dtype));
  }
  if (o.pillow && out_dtype == DType::kU8) {  // the CPU kernel runs Pillow's integer passes
    return Status::invalid_argument("resize: pillow rounding runs on the cpu stage");
  }
  // resize.cc's rules: skip an axis that keeps its size; neither changing is one identity
  // horizontal pass (copy + convert).
  const bool do_h = in.w != out.w || in.h == out.h;
  const bool do_v = in.h != out.h;
  HDL_RETURN_IF_ERROR(fill_axis(in.w, out.w, do_h, o, passes.x));
  HDL_RETURN_IF_ERROR(fill_axis(in.h, out.h, do_v, o, passes.y));
  passes.pil = out_dtype == DType::kU8 &&
               (o.pillow || o.filter == ResizeFilter::kBox || o.filter == ResizeFilter::kLanczos);
  passes.vertical_first = do_h && do_v && !passes.pil && cpu_vertical_first(in.h, in.w, passes.x, passes.y);
  return Status::ok();
}

float CmnTable::value(int c, int v) const {
  const size_t size = dtype_size(dtype);
  const uint8_t* p = bytes.data() + (static_cast<size_t>(c) * 257 + static_cast<size_t>(v)) * size;
  uint16_t h = 0;
  float f = 0;
  switch (dtype) {
    case DType::kU8: return *p;
    case DType::kF16: std::memcpy(&h, p, 2); return half_to_float(h);
    case DType::kBF16: std::memcpy(&h, p, 2); return bfloat16_to_float(h);
    default: std::memcpy(&f, p, 4); return f;
  }
}

Status make_cmn_table(int channels, DType dtype, const NormalizeParams& norm, float fill,
                      CmnTable& table) {
  if (channels < 1) return Status::invalid_argument("crop_mirror_normalize: no channels");
  auto ok = [channels](size_t n) { return n <= 1 || static_cast<int64_t>(n) == channels; };
  if (!ok(norm.mean.size()) || !ok(norm.std.size())) {
    return Status::invalid_argument("normalize: mean/std need 1 or " + std::to_string(channels) +
                                    " values, got " + std::to_string(norm.mean.size()) + "/" +
                                    std::to_string(norm.std.size()));
  }
  if (dtype != DType::kF32 && dtype != DType::kF16 && dtype != DType::kBF16 && dtype != DType::kU8) {
    return Status::invalid_argument(std::string("crop_mirror_normalize: cannot write ") +
                                    dtype_name(dtype) + " from uint8");
  }
  const size_t size = dtype_size(dtype);
  table.dtype = dtype, table.channels = channels;
  table.bytes.resize(static_cast<size_t>(channels) * 257 * size);
  // normalize.cc's Normalizer: (x / scale - mean) / std in float32, in that order.
  auto normalized = [&](int c, float x) {
    const float mean = norm.mean.empty() ? 0.0f : norm.mean[norm.mean.size() == 1 ? 0 : c];
    const float sd = norm.std.empty() ? 1.0f : norm.std[norm.std.size() == 1 ? 0 : c];
    return (x / norm.scale - mean) / sd;
  };
  for (int c = 0; c < channels; ++c) {
    for (int v = 0; v <= 256; ++v) {
      const float x = v < 256 ? static_cast<float>(v) : fill;
      uint64_t bits = 0;
      if (dtype == DType::kU8) {
        bits = v < 256 ? static_cast<uint64_t>(v) : kernels::detail::saturate_cast<uint8_t>(fill);
      } else {
        bits = kernels::detail::to_element_bits(normalized(c, x), dtype);
      }
      std::memcpy(table.bytes.data() + (static_cast<size_t>(c) * 257 + v) * size, &bits, size);
    }
  }
  return Status::ok();
}

}  // namespace hdl::kernels::cuda
