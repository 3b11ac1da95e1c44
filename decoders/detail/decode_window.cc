#include "decoders/detail/decode_window.h"

#include <cstring>
#include <string>

namespace hdl::detail {
namespace {

int64_t ceil_div(int64_t a, int64_t d) { return (a + d - 1) / d; }

// The window in stored coordinates for a window in oriented coordinates (W x H: stored size).
Roi to_stored(const Roi& o, int orientation, int64_t W, int64_t H) {
  switch (orientation) {
    case 2: return {W - o.x - o.w, o.y, o.w, o.h};
    case 3: return {W - o.x - o.w, H - o.y - o.h, o.w, o.h};
    case 4: return {o.x, H - o.y - o.h, o.w, o.h};
    case 5: return {o.y, o.x, o.h, o.w};
    case 6: return {o.y, H - o.x - o.w, o.h, o.w};
    case 7: return {W - o.y - o.h, H - o.x - o.w, o.h, o.w};
    case 8: return {W - o.y - o.h, o.x, o.h, o.w};
    default: return o;
  }
}

std::string roi_text(const Roi& r) {
  return "roi (x=" + std::to_string(r.x) + ", y=" + std::to_string(r.y) +
         ", w=" + std::to_string(r.w) + ", h=" + std::to_string(r.h) + ")";
}

// The largest DCT reduction (<= max_denom) that keeps the oriented window at least min_w x min_h.
int choose_scale(int64_t w, int64_t h, const DecodeRequest& req, int max_denom) {
  if (req.min_width <= 0 && req.min_height <= 0) return 1;
  for (int d = max_denom; d > 1; d /= 2)
    if (ceil_div(w, d) >= req.min_width && ceil_div(h, d) >= req.min_height) return d;
  return 1;
}

}  // namespace

Result<DecodeWindow> decode_window(const ImageInfo& info, const DecodeRequest& req, int max_scale_denom) {
  DecodeWindow p;
  p.width = info.width;
  p.height = info.height;
  if (p.width <= 0 || p.height <= 0) return Status::invalid_data("image has no pixels");
  if (p.width * p.height > req.max_pixels)
    return Status::resource_exhausted(
        "image is " + std::to_string(p.width) + "x" + std::to_string(p.height) + " = " +
        std::to_string(p.width * p.height) + " pixels, over max_pixels " + std::to_string(req.max_pixels));
  p.orientation = req.apply_orientation && info.orientation >= 1 && info.orientation <= 8
                      ? info.orientation : 1;
  p.channels = color_channels(req.color);
  int64_t ow = p.orientation >= 5 ? p.height : p.width;
  int64_t oh = p.orientation >= 5 ? p.width : p.height;
  Roi roi = req.roi.empty() ? Roi{0, 0, ow, oh} : req.roi;
  if (roi.x < 0 || roi.y < 0 || roi.x + roi.w > ow || roi.y + roi.h > oh)
    return Status::invalid_argument(roi_text(roi) + " is outside the " + std::to_string(ow) + "x" +
                                    std::to_string(oh) + (p.orientation == 1 ? "" : " (oriented)") +
                                    " image");
  p.scale_denom = choose_scale(roi.w, roi.h, req, max_scale_denom);
  p.stored = to_stored(roi, p.orientation, p.width, p.height);
  const int64_t d = p.scale_denom;
  p.scaled = {p.stored.x / d, p.stored.y / d, ceil_div(p.stored.w, d), ceil_div(p.stored.h, d)};
  bool swap = p.orientation >= 5;
  p.shape = Shape{swap ? p.scaled.w : p.scaled.h, swap ? p.scaled.h : p.scaled.w, p.channels};
  return p;
}

Status check_output(const TensorView& out, const DecodeWindow& window) {
  if (out.shape != window.shape)
    return Status::invalid_argument("output has shape " + out.shape.to_string() + ", decode writes " +
                                    window.shape.to_string());
  if (out.dtype != DType::kU8 || out.strides.ndim() != 3 || out.strides[2] != 1 ||
      !out.device.is_cpu() || out.data == nullptr)
    return Status::invalid_argument("output must be a host uint8 HWC view with unit channel stride");
  return Status::ok();
}

void write_window_row(const uint8_t* row, int64_t r, const DecodeWindow& window, const TensorView& out) {
  const int64_t s0 = out.strides[0], s1 = out.strides[1];
  const int64_t sw = window.scaled.w, sh = window.scaled.h;
  const int c = window.channels;
  auto* base = static_cast<uint8_t*>(out.data);
  if (window.orientation == 1 && s1 == c) {
    std::memcpy(base + r * s0, row, size_t(sw * c));
    return;
  }
  int64_t oy = 0, ox = 0, step = 0;  // output pixel of row[0], then bytes per step along the row
  switch (window.orientation) {
    case 2: oy = r; ox = sw - 1; step = -s1; break;
    case 3: oy = sh - 1 - r; ox = sw - 1; step = -s1; break;
    case 4: oy = sh - 1 - r; ox = 0; step = s1; break;
    case 5: oy = 0; ox = r; step = s0; break;
    case 6: oy = 0; ox = sh - 1 - r; step = s0; break;
    case 7: oy = sw - 1; ox = sh - 1 - r; step = -s0; break;
    case 8: oy = sw - 1; ox = r; step = -s0; break;
    default: oy = r; ox = 0; step = s1; break;
  }
  uint8_t* dst = base + oy * s0 + ox * s1;
  if (c == 3) {
    for (int64_t j = 0; j < sw; ++j, dst += step, row += 3) {
      dst[0] = row[0];
      dst[1] = row[1];
      dst[2] = row[2];
    }
  } else {
    for (int64_t j = 0; j < sw; ++j, dst += step, row += c) std::memcpy(dst, row, size_t(c));
  }
}

}  // namespace hdl::detail
