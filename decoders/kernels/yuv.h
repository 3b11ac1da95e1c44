// YUV -> RGB conversion of decoded video frames as the device path does it (NVDEC's frames:
// NV12, P010 / P016, YUV444P, YUV444P16), with a host twin of the same arithmetic.
//
// The per-pixel function below is compiled for the host and, in the .cu file, for the device;
// both run it in float32 without fused multiply-adds (the host build targets baseline x86-64,
// which has none; nvcc runs with -fmad=false), so the device kernel and yuv_to_rgb() here give
// the same bytes for the same YUV samples. NVDEC's YUV equals libavcodec's (the codecs are
// specified bit-exactly), so what the host twin measures against libswscale over the corpus is
// the device path's difference from the CPU path (docs/VIDEO.md, "NVDEC").
//
// The conversion follows what libswscale does on the CPU path (the ffmpeg CLI's settings):
//   - 8-bit 4:2:0 (NV12; yuv420p / yuvj420p on the CPU): libswscale's unscaled converter, whose
//     x86 SSSE3 kernel (ff_yuv_420_rgb24_ssse3) works in 16-bit lanes: samples shifted up 3
//     bits, chroma centred at 128 << 3, products with coefficients 2^13 times the 16.16 weights
//     of ff_yuv2rgb_c_init_tables keeping their high 16 bits (pmulhw: rounded down), saturating
//     sums, packed to uint8 with saturation; chroma nearest (each sample serves its 2 x 2
//     pixels). Emulated here operation by operation: the same bytes as the CPU path on x86.
//   - 4:4:4 and 16-bit samples (YUV444P, P010 / P016): libswscale's general scaler, not
//     emulated: float32 with its weights, chroma of 4:2:0 interpolated linearly between rows
//     (MPEG-2 siting, centred) and repeated across columns, rounded (4:4:4) or down (16-bit),
//     which comes close (docs/VIDEO.md gives the measured bound).
// The colour matrix is libswscale's table for the frame's matrix (unknown or unspecified is
// BT.601, the CLI's "auto"), limited range unless the frame says full range.
//
// Thread safety: pure functions.
#pragma once

#include <cmath>
#include <cstdint>

#include "decoders/decoder.h"
#include "media/api.h"
#include "media/status.h"
#include "media/tensor.h"

#if defined(__CUDACC__)
#define HDL_HOST_DEVICE __host__ __device__
#else
#define HDL_HOST_DEVICE
#endif

HDL_API_BEGIN
namespace hdl::kernels {

/// How a frame's samples are laid out.
enum class YuvLayout : int32_t {
  kSemiPlanar420 = 0,  ///< NV12 / P010 / P016: a Y plane, then one plane of interleaved U, V at half size
  kPlanar420 = 1,      ///< YUV420P(10/16): Y, U, V planes, chroma at half width and height
  kPlanar444 = 2,      ///< YUV444P(16): three full-size planes
};

/// A decoded frame's planes (host or device memory; the caller knows which).
struct YuvFrame {
  const uint8_t* plane[3] = {nullptr, nullptr, nullptr};  ///< Y, then U (or interleaved UV), then V
  int64_t pitch[3] = {0, 0, 0};                           ///< bytes between rows of each plane
  int32_t width = 0;                                      ///< luma size in pixels
  int32_t height = 0;
  YuvLayout layout = YuvLayout::kSemiPlanar420;
  int32_t bytes = 1;  ///< bytes per sample: 1, or 2 (little-endian 16-bit words)
  int32_t shift = 0;  ///< 2-byte samples: left shift that puts the value in the word's top bits (0 for P010/P016, 6 for 10-bit planar)
};

/// The colour matrix and range of a conversion, from yuv_matrix().
struct YuvMatrix {
  // libswscale's SSSE3 coefficients (8-bit 4:2:0): 16.16 weights times 2^13, rounded to int16.
  int32_t y_coeff = 0, y_offset = 0;       ///< luma gain; luma offset times 8 (128 for 16)
  int32_t vr = 0, ub = 0, ug = 0, vg = 0;  ///< chroma weights (ug, vg negative)
  // The same weights as floats (4:4:4, 16-bit samples).
  float y_scale = 1.0f, y_base = 0.0f;       ///< applied to (Y - y_base)
  float frv = 0, fub = 0, fug = 0, fvg = 0;  ///< on C - 128 (fug, fvg negative)
};

/// What the conversion may differ from the CPU path's pixels (libswscale with the ffmpeg CLI's
/// settings) on the same YUV, for the formats it does not emulate exactly (4:4:4, 16-bit
/// samples): mean |diff| per clip and max |diff|. Measured on the corpus clips by
/// tests/decoders/video_yuv_test.cc (10-bit 4:2:0: mean 1.01, max 11; 4:4:4: mean 0.003, max 1);
/// 8-bit 4:2:0 must be exact.
inline constexpr double kYuvTwinMeanBound = 1.5;
inline constexpr int kYuvTwinMaxBound = 16;

/// The matrix for FFmpeg's AVColorSpace value `colorspace` and range (`full_range`: JPEG range),
/// from libswscale's coefficient tables as the CPU path uses them.
YuvMatrix yuv_matrix(int colorspace, bool full_range);

namespace yuv_detail {

HDL_HOST_DEVICE inline int32_t load_int(const uint8_t* row, int64_t x, int32_t bytes, int32_t shift) {
  if (bytes == 1) return row[x];
  const uint32_t w = static_cast<uint32_t>(row[2 * x]) | (static_cast<uint32_t>(row[2 * x + 1]) << 8);
  return static_cast<int32_t>((w << shift) & 0xffffu);  // the value in the word's top bits
}

// A sample in 8-bit units (a 16-bit one keeps its fraction: 10-bit 940 << 6 -> 235.0).
HDL_HOST_DEVICE inline float load(const uint8_t* row, int64_t x, int32_t bytes, int32_t shift) {
  const int32_t v = load_int(row, x, bytes, shift);
  return bytes == 1 ? static_cast<float>(v) : static_cast<float>(v) * (1.0f / 256.0f);
}

HDL_HOST_DEVICE inline int64_t clamp_index(int64_t i, int64_t n) { return i < 0 ? 0 : i >= n ? n - 1 : i; }

// Chroma sample (cx, cy): U at c = 0, V at c = 1.
HDL_HOST_DEVICE inline const uint8_t* chroma_row(const YuvFrame& f, int c, int64_t cy) {
  return f.layout == YuvLayout::kSemiPlanar420 ? f.plane[1] + cy * f.pitch[1] : f.plane[1 + c] + cy * f.pitch[1 + c];
}
HDL_HOST_DEVICE inline int64_t chroma_column(const YuvFrame& f, int c, int64_t cx) {
  return f.layout == YuvLayout::kSemiPlanar420 ? 2 * cx + c : cx;
}
HDL_HOST_DEVICE inline int32_t chroma_int(const YuvFrame& f, int c, int64_t cx, int64_t cy) {
  return load_int(chroma_row(f, c, cy), chroma_column(f, c, cx), f.bytes, f.shift);
}
HDL_HOST_DEVICE inline float chroma_at(const YuvFrame& f, int c, int64_t cx, int64_t cy) {
  return load(chroma_row(f, c, cy), chroma_column(f, c, cx), f.bytes, f.shift);
}

// pmulhw: the high 16 bits of a signed 16 x 16-bit product (rounded down).
HDL_HOST_DEVICE inline int32_t mulhi(int32_t a, int32_t b) { return (a * b) >> 16; }
HDL_HOST_DEVICE inline int32_t sat16(int32_t v) { return v < -32768 ? -32768 : v > 32767 ? 32767 : v; }
HDL_HOST_DEVICE inline uint8_t pack_u8(int32_t v) { return static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v); }

HDL_HOST_DEVICE inline uint8_t round_u8(float v) {
  v = floorf(v + 0.5f);
  return static_cast<uint8_t>(v < 0.0f ? 0.0f : v > 255.0f ? 255.0f : v);
}
HDL_HOST_DEVICE inline uint8_t floor_u8(float v) {
  v = floorf(v);
  return static_cast<uint8_t>(v < 0.0f ? 0.0f : v > 255.0f ? 255.0f : v);
}

}  // namespace yuv_detail

/// RGB (or the luma as gray, when `gray`) of pixel (x, y) of `f`, in frame orientation.
HDL_HOST_DEVICE inline void yuv_pixel(const YuvFrame& f, const YuvMatrix& m, int64_t x, int64_t y, bool gray,
                                      uint8_t* out) {
  using namespace yuv_detail;
  const uint8_t* luma_row = f.plane[0] + y * f.pitch[0];
  if (gray) {
    out[0] = round_u8((load(luma_row, x, f.bytes, f.shift) - m.y_base) * m.y_scale);
    return;
  }
  if (f.bytes == 1 && f.layout != YuvLayout::kPlanar444) {
    // libswscale's SSSE3 yuv2rgb, lane by lane.
    const int32_t yt = mulhi(sat16((static_cast<int32_t>(luma_row[x]) << 3) - m.y_offset), m.y_coeff);
    const int32_t u = sat16((chroma_int(f, 0, x >> 1, y >> 1) << 3) - (128 << 3));
    const int32_t v = sat16((chroma_int(f, 1, x >> 1, y >> 1) << 3) - (128 << 3));
    out[0] = pack_u8(sat16(yt + mulhi(v, m.vr)));
    out[1] = pack_u8(sat16(sat16(yt + mulhi(u, m.ug)) + mulhi(v, m.vg)));
    out[2] = pack_u8(sat16(yt + mulhi(u, m.ub)));
    return;
  }
  float u, v;
  if (f.layout == YuvLayout::kPlanar444) {
    u = chroma_at(f, 0, x, y);
    v = chroma_at(f, 1, x, y);
  } else {
    // Rows: chroma row j sits between luma rows 2j and 2j + 1 (MPEG-2 siting); columns: the
    // sample of the pair.
    const int64_t ch = (f.height + 1) / 2, cx = x >> 1;
    const int64_t above = clamp_index((y - 1) >> 1, ch), below = clamp_index(((y - 1) >> 1) + 1, ch);
    const float w = (y & 1) ? 0.25f : 0.75f;  // weight of the row below
    const float ua = chroma_at(f, 0, cx, above), va = chroma_at(f, 1, cx, above);
    u = ua + w * (chroma_at(f, 0, cx, below) - ua);
    v = va + w * (chroma_at(f, 1, cx, below) - va);
  }
  u -= 128.0f;
  v -= 128.0f;
  const float yl = (load(luma_row, x, f.bytes, f.shift) - m.y_base) * m.y_scale;
  const float r = yl + m.frv * v, g = (yl + m.fug * u) + m.fvg * v, b = yl + m.fub * u;
  if (f.bytes == 1) {
    out[0] = round_u8(r), out[1] = round_u8(g), out[2] = round_u8(b);
  } else {
    out[0] = floor_u8(r), out[1] = floor_u8(g), out[2] = floor_u8(b);
  }
}

/// The frame pixel shown at display position (oy, ox) of a frame turned `rotation` degrees
/// clockwise (0, 90, 180, 270), as the CPU path's rotation writes it.
HDL_HOST_DEVICE inline void rotated_source(int32_t rotation, int64_t w, int64_t h, int64_t oy, int64_t ox,
                                           int64_t* sy, int64_t* sx) {
  switch (rotation) {
    case 90: *sy = h - 1 - ox, *sx = oy; break;
    case 180: *sy = h - 1 - oy, *sx = w - 1 - ox; break;
    case 270: *sy = ox, *sx = w - 1 - oy; break;
    default: *sy = oy, *sx = ox; break;
  }
}

/// Converts `f` (host memory) into `dst`: [H, W, C] uint8 on the host, any strides, in display
/// orientation (H, W swapped for 90 / 270), C = color_channels(color). The host twin of
/// kernels::cuda::yuv_to_rgb. InvalidArgument for a view of the wrong shape or a bad frame.
Status yuv_to_rgb(const YuvFrame& f, const YuvMatrix& m, int rotation, ColorFormat color, const TensorView& dst);

/// The checks both twins make on their arguments.
Status check_yuv_to_rgb(const YuvFrame& f, int rotation, ColorFormat color, const TensorView& dst);

}  // namespace hdl::kernels
HDL_API_END
