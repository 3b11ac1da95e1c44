// YUV -> RGB: the matrix from libswscale's tables, the argument checks, the host twin.
#include "decoders/kernels/yuv.h"

extern "C" {
#include <libswscale/swscale.h>
}

#include <algorithm>
#include <string>

namespace hdl::kernels {

namespace {
// libswscale's roundToInt16 (utils.c) of a 16.16 weight times 2^13.
int32_t round_int16(int64_t weight_16_16) {
  const int64_t v = (weight_16_16 * (1 << 13) + (1 << 15)) >> 16;
  return static_cast<int32_t>(std::clamp<int64_t>(v, -0x8000, 0x7fff));
}
}  // namespace

YuvMatrix yuv_matrix(int colorspace, bool full_range) {
  // As the CPU path picks the matrix (decoders/video_decoder.cc, vf_scale's "auto"): outside
  // 1..10 and 8 (YCgCo, which libswscale has no table for) is BT.601.
  if (colorspace < 1 || colorspace > 10 || colorspace == 8) colorspace = SWS_CS_ITU601;
  // ff_yuv2rgb_c_init_tables with brightness 0, contrast and saturation 1: the table's
  // {crv, cbu, cgu, cgv} (16.16, for limited-range chroma), negated for green; limited range
  // scales the luma by 255 / 219 and offsets it by 16, full range scales the chroma weights
  // by 224 / 255, in integer arithmetic.
  const int* t = sws_getCoefficients(colorspace);
  int64_t crv = t[0], cbu = t[1], cgu = -int64_t(t[2]), cgv = -int64_t(t[3]), cy = 1 << 16, oy = 0;
  if (!full_range) {
    cy = cy * 255 / 219;
    oy = int64_t(16) << 16;
  } else {
    crv = crv * 224 / 255;
    cbu = cbu * 224 / 255;
    cgu = cgu * 224 / 255;
    cgv = cgv * 224 / 255;
  }
  YuvMatrix m;
  m.y_coeff = round_int16(cy);
  m.y_offset = static_cast<int32_t>((oy * (1 << 3) + (1 << 15)) >> 16);
  m.vr = round_int16(crv);
  m.ub = round_int16(cbu);
  m.ug = round_int16(cgu);
  m.vg = round_int16(cgv);
  m.y_scale = static_cast<float>(double(cy) / 65536.0);
  m.y_base = static_cast<float>(double(oy) / 65536.0);
  m.frv = static_cast<float>(double(crv) / 65536.0);
  m.fub = static_cast<float>(double(cbu) / 65536.0);
  m.fug = static_cast<float>(double(cgu) / 65536.0);
  m.fvg = static_cast<float>(double(cgv) / 65536.0);
  return m;
}

Status check_yuv_to_rgb(const YuvFrame& f, int rotation, ColorFormat color, const TensorView& dst) {
  if (f.width <= 0 || f.height <= 0 || !f.plane[0] || !f.plane[1] || (f.layout != YuvLayout::kSemiPlanar420 && !f.plane[2]))
    return Status::invalid_argument("yuv_to_rgb: the frame has no size or is missing a plane");
  if ((f.bytes != 1 && f.bytes != 2) || f.shift < 0 || f.shift > 8)
    return Status::invalid_argument("yuv_to_rgb: samples must be 1 or 2 bytes (shift 0-8)");
  if (rotation != 0 && rotation != 90 && rotation != 180 && rotation != 270)
    return Status::invalid_argument("yuv_to_rgb: rotation must be 0, 90, 180 or 270, got " + std::to_string(rotation));
  const bool quarter = rotation % 180 != 0;
  const Shape want{quarter ? f.width : f.height, quarter ? f.height : f.width, color_channels(color)};
  if (dst.dtype != DType::kU8 || dst.shape != want)
    return Status::invalid_argument("yuv_to_rgb: the output must be uint8 " + want.to_string() + ", got " +
                                    std::string(dtype_name(dst.dtype)) + " " + dst.shape.to_string());
  return Status::ok();
}

Status yuv_to_rgb(const YuvFrame& f, const YuvMatrix& m, int rotation, ColorFormat color, const TensorView& dst) {
  HDL_RETURN_IF_ERROR(check_yuv_to_rgb(f, rotation, color, dst));
  if (!dst.device.is_cpu()) return Status::invalid_argument("yuv_to_rgb: the output must be host memory");
  const bool gray = color == ColorFormat::kGray, bgr = color == ColorFormat::kBGR;
  auto* base = static_cast<uint8_t*>(dst.data);
  for (int64_t oy = 0; oy < dst.shape[0]; ++oy) {
    for (int64_t ox = 0; ox < dst.shape[1]; ++ox) {
      int64_t sy, sx;
      rotated_source(rotation, f.width, f.height, oy, ox, &sy, &sx);
      uint8_t px[3];
      yuv_pixel(f, m, sx, sy, gray, px);
      uint8_t* d = base + oy * dst.strides[0] + ox * dst.strides[1];
      if (gray) {
        d[0] = px[0];
      } else {
        d[0] = px[bgr ? 2 : 0];
        d[dst.strides[2]] = px[1];
        d[2 * dst.strides[2]] = px[bgr ? 0 : 2];
      }
    }
  }
  return Status::ok();
}

}  // namespace hdl::kernels
