// Hybrid JPEG decoding, the pixel half: DCT coefficients (Huffman-decoded on CPU threads) in,
// RGB / BGR / gray pixels out, with libjpeg-turbo's integer arithmetic, so the same bytes as the
// CPU path (decoders/jpeg/jpeg_decoder.h: libjpeg-turbo, JDCT_ISLOW, fancy upsampling).
//
// Each stage's arithmetic is written once, below, as functions compiled by g++ for the host
// twin (jpeg_hybrid_decode_host, jpeg_hybrid.cc) and by nvcc for the device kernels
// (decoders/kernels/cuda/jpeg_hybrid.cu), the way yuv.h serves the video decoder:
//   - dequantisation and the inverse DCT of each block, at the block size libjpeg picks for the
//     component and the DCT scale: jidctint.c's jpeg_idct_islow (8x8, the LL&M algorithm with
//     CONST_BITS 13, PASS1_BITS 2) and jidctred.c's reduced transforms jpeg_idct_4x4 (scale
//     1/2), jpeg_idct_2x2 (1/4) and jpeg_idct_1x1 (1/8), column pass then row pass, 64-bit
//     intermediates and a 32-bit workspace as libjpeg's C code has them (JLONG, int), the
//     post-IDCT range limit as its SIMD code (what the CPU path runs) does it: saturating for
//     8x8, 4x4, 2x2, wrapping for 1x1 (C only). Where libjpeg-turbo's SIMD works in 16 bits
//     (dequantised coefficients and first-pass outputs beyond +-32767: never in a natural
//     image) it may differ from its own C code and from this; docs/CUDA.md gives the measured
//     bounds. These are the only scaled sizes the fused path uses: it asks libjpeg for
//     scale_num/scale_denom = 1/1, 1/2, 1/4, 1/8 (decoders/detail/decode_window.cc), and
//     libjpeg's jdmaster.c then gives each component 8, 4, 2 or 1 (a subsampled component may
//     get a larger size than the luma, in place of upsampling);
//   - upsampling to the output grid (jdsample.c): full size; "fancy" triangle filters h2v1
//     (3/4, 1/4 of the nearer and further sample, biases 1 and 2 alternating by column), h1v2
//     (the same by row) and h2v2 (9/16, 3/16, 3/16, 1/16, biases 8 and 7 alternating by column),
//     each replicating the component's edge sample at the image's edges; plain replication by
//     any integral factor where fancy does not apply (scale 1/8, components at most 2 samples
//     wide, 4:1:1, 4:1:0, ...);
//   - colour conversion (jdcolor.c): YCbCr -> RGB through its integer tables (16-bit fixed
//     point, computed here per value, not looked up), RGB copied, gray replicated; gray output
//     of a colour image is Pillow's luma of the RGB pixels, as the CPU path computes it;
//   - the EXIF orientation of decode_window (decoders/detail/decode_window.h).
//
// A batch is laid out by the caller (decoders/jpeg/hybrid_jpeg.h does it): every image's
// geometry, its components' quantisation tables, its blocks of coefficients (64 int16 each, in
// natural order, each component's blocks a rectangle of its block grid, row-major), an IDCT
// scratch of sample planes and the output slots. Blocks and output pixels are numbered across
// the whole batch, so one launch per stage covers every image.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>

#include "decoders/decoder.h"
#include "media/api.h"
#include "media/status.h"

#ifndef HDL_HOST_DEVICE
#if defined(__CUDACC__)
#define HDL_HOST_DEVICE __host__ __device__
#else
#define HDL_HOST_DEVICE
#endif
#endif

// The per-block and per-pixel functions below, inlined into their loops on both sides: in the
// shared library a call would go through the PLT (default visibility) and lose the constant
// block size; measured 2.5x slower host twin without it.
#if defined(__CUDACC__)
#define HDL_JPEG_FN __host__ __device__ __forceinline__
#else
#define HDL_JPEG_FN inline __attribute__((always_inline))
#endif

HDL_API_BEGIN
namespace hdl::kernels {

inline constexpr int kJpegMaxComponents = 3;

/// How a component's samples become output pixels (libjpeg-turbo's jdsample.c methods).
enum class JpegUpsample : int32_t {
  kFull = 0,       ///< one sample per pixel (fullsize_upsample)
  kH2V1Fancy = 1,  ///< 2x across, triangle filter (h2v1_fancy_upsample)
  kH1V2Fancy = 2,  ///< 2x down, triangle filter (h1v2_fancy_upsample)
  kH2V2Fancy = 3,  ///< 2x both ways, triangle filter (h2v2_fancy_upsample)
  kReplicate = 4,  ///< each sample repeated expand_h x expand_v times (int_upsample, h2v1/h2v2_upsample)
};

/// How the components become output colour (jdcolor.c).
enum class JpegTransform : int32_t {
  kYCbCr = 0,  ///< 3 components, YCbCr -> RGB (ycc_rgb_convert)
  kRgb = 1,    ///< 3 components stored as RGB (Adobe transform 0): copied
  kGray = 2,   ///< 1 component: gray, replicated to RGB when RGB is asked for
};

/// One component of one image in a batch.
struct JpegComponentGeometry {
  int32_t scaled_size = 8;  ///< IDCT output block size: 8, 4, 2 or 1 (libjpeg's DCT_scaled_size)
  JpegUpsample upsample = JpegUpsample::kFull;
  int32_t expand_h = 1, expand_v = 1;  ///< output pixels per sample across and down
  /// The component's size in samples at this scale (libjpeg's downsampled_width / _height): its
  /// last sample is the one upsampling replicates past the image's edge.
  int32_t samples_w = 0, samples_h = 0;
  int32_t block_x0 = 0, block_y0 = 0;  ///< first block held, in the component's block grid
  int32_t blocks_w = 0, blocks_h = 0;  ///< blocks held (a rectangle of the grid), row-major
  int32_t quant = 0;                   ///< its quantisation table: the batch's quant + 64 * quant
  int32_t pad = 0;
  int64_t block_begin = 0;   ///< batch number of its first block: coefficients at coefs + 64 * block_begin
  int64_t sample_offset = 0; ///< its plane in the batch's sample scratch: rows of blocks_w * scaled_size bytes
};

/// One image of a batch: its components, the window decoded and where it is written.
struct JpegImageGeometry {
  int32_t components = 0;  ///< 1 or 3
  JpegTransform transform = JpegTransform::kYCbCr;
  JpegComponentGeometry comp[kJpegMaxComponents];
  /// The window, in the stored (not oriented) image at the DCT scale: pixels [x0, x0 + width) x
  /// [y0, y0 + height) of the scaled image (DecodeWindow::scaled).
  int32_t x0 = 0, y0 = 0, width = 0, height = 0;
  int32_t orientation = 1;  ///< EXIF orientation the window is written in (1..8)
  ColorFormat color = ColorFormat::kRGB;
  int64_t out_offset = 0;       ///< byte offset of output pixel (0, 0) from the batch's out
  int64_t out_row_stride = 0;   ///< bytes between output rows
  int64_t out_pixel_stride = 0; ///< bytes between output pixels (channels are adjacent)
  int64_t block_begin = 0;      ///< batch number of its first block (its components' blocks follow)
  int64_t pixel_begin = 0;      ///< batch number of its first output pixel (width * height follow)
};

/// A batch as the decode sees it: host memory for the host twin, device memory for the kernels.
struct JpegBatchView {
  const JpegImageGeometry* images = nullptr;
  int32_t image_count = 0;
  const uint16_t* quant = nullptr;  ///< quant_count tables of 64 entries, natural order
  int32_t quant_count = 0;
  const int16_t* coefs = nullptr;   ///< blocks x 64 coefficients, natural order
  int64_t blocks = 0;
  uint8_t* samples = nullptr;       ///< IDCT output planes (scratch)
  int64_t sample_bytes = 0;
  uint8_t* out = nullptr;           ///< output slots
  int64_t out_bytes = 0;
  int64_t pixels = 0;               ///< output pixels of all images
};

namespace jpeg_detail {

// --- Inverse DCT (jidctint.c jpeg_idct_islow, jidctred.c jpeg_idct_4x4 / 2x2 / 1x1) ---------

inline constexpr int kConstBits = 13;
inline constexpr int kPass1Bits = 2;

// DESCALE: divide by 2^n rounding half up (arithmetic shift of the biased value).
HDL_JPEG_FN int64_t descale(int64_t x, int n) { return (x + (int64_t(1) << (n - 1))) >> n; }

// The post-IDCT range limit: the value plus the sample centre (128), limited to 0..255. As
// libjpeg-turbo's SIMD IDCTs do it (islow, 4x4, 2x2: packssdw, packsswb, + 128, saturating on
// x86-64 SSE2 / AVX2 and Arm Neon), which is what the CPU path runs. Its C code looks the value
// up in a 1024-entry table that wraps beyond +-512 of the centre; the two differ only for
// coefficients no natural image has (see docs/CUDA.md, "Hybrid decode").
HDL_JPEG_FN uint8_t idct_saturate(int64_t x) {
  return static_cast<uint8_t>(x < -128 ? 0 : x > 127 ? 255 : x + 128);
}
// jpeg_idct_1x1 has no SIMD version: its C table (range_limit[x & 1023], wrapping) applies.
HDL_JPEG_FN uint8_t idct_wrap(int64_t x) {
  int32_t v = static_cast<int32_t>(x & 1023);
  v = (v ^ 512) - 512 + 128;  // the 10-bit value, sign-extended, plus the centre
  return static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
}

// DEQUANTIZE: libjpeg-turbo keeps the table as ISLOW_MULT_TYPE, a short in its SIMD builds (as
// Debian's), so a 16-bit table entry over 32767 multiplies as a negative number there too.
HDL_JPEG_FN int64_t dequant(const int16_t* coef, const uint16_t* q, int i) {
  return int64_t(coef[i]) * int64_t(static_cast<int16_t>(q[i]));
}

// libjpeg's constants, FIX(x) = round(x * 2^13).
inline constexpr int64_t F_0_211164243 = 1730, F_0_298631336 = 2446, F_0_390180644 = 3196,
                         F_0_509795579 = 4176, F_0_541196100 = 4433, F_0_601344887 = 4926,
                         F_0_720959822 = 5906, F_0_765366865 = 6270, F_0_850430095 = 6967,
                         F_0_899976223 = 7373, F_1_061594337 = 8697, F_1_175875602 = 9633,
                         F_1_272758580 = 10426, F_1_451774981 = 11893, F_1_501321110 = 12299,
                         F_1_847759065 = 15137, F_1_961570560 = 16069, F_2_053119869 = 16819,
                         F_2_172734803 = 17799, F_2_562915447 = 20995, F_3_072711026 = 25172,
                         F_3_624509785 = 29692;

// The 8-point LL&M odd part: inputs in[7], in[5], in[3], in[1] -> t0..t3 (islow's tmp0..tmp3).
HDL_JPEG_FN void islow_odd(int64_t i7, int64_t i5, int64_t i3, int64_t i1, int64_t* t) {
  int64_t z1 = i7 + i1, z2 = i5 + i3, z3 = i7 + i3, z4 = i5 + i1;
  const int64_t z5 = (z3 + z4) * F_1_175875602;
  int64_t t0 = i7 * F_0_298631336, t1 = i5 * F_2_053119869, t2 = i3 * F_3_072711026, t3 = i1 * F_1_501321110;
  z1 *= -F_0_899976223;
  z2 *= -F_2_562915447;
  z3 = z3 * -F_1_961570560 + z5;
  z4 = z4 * -F_0_390180644 + z5;
  t[0] = t0 + z1 + z3;
  t[1] = t1 + z2 + z4;
  t[2] = t2 + z2 + z3;
  t[3] = t3 + z1 + z4;
}

// The 8-point even part: i0, i2, i4, i6 -> tmp10, tmp11, tmp12, tmp13.
HDL_JPEG_FN void islow_even(int64_t i0, int64_t i2, int64_t i4, int64_t i6, int64_t* t) {
  const int64_t z1 = (i2 + i6) * F_0_541196100;
  const int64_t tmp2 = z1 + i6 * -F_1_847759065, tmp3 = z1 + i2 * F_0_765366865;
  const int64_t tmp0 = (i0 + i4) * (int64_t(1) << kConstBits), tmp1 = (i0 - i4) * (int64_t(1) << kConstBits);
  t[0] = tmp0 + tmp3;  // tmp10
  t[1] = tmp1 + tmp2;  // tmp11
  t[2] = tmp1 - tmp2;  // tmp12
  t[3] = tmp0 - tmp3;  // tmp13
}

// The reduced transforms' shared parts (jidctred.c).
HDL_JPEG_FN void red4_odd(int64_t z1, int64_t z2, int64_t z3, int64_t z4, int64_t* t0, int64_t* t2) {
  *t0 = z1 * -F_0_211164243 + z2 * F_1_451774981 + z3 * -F_2_172734803 + z4 * F_1_061594337;
  *t2 = z1 * -F_0_509795579 + z2 * -F_0_601344887 + z3 * F_0_899976223 + z4 * F_2_562915447;
}
HDL_JPEG_FN int64_t red2_odd(int64_t i7, int64_t i5, int64_t i3, int64_t i1) {
  return i7 * -F_0_720959822 + i5 * F_0_850430095 + i3 * -F_1_272758580 + i1 * F_3_624509785;
}

}  // namespace jpeg_detail

/// True if the column pass of a `size`-point IDCT computes column `col` (jidctred.c skips the
/// columns its row pass never reads: 4 for 4x4; 2, 4, 6 for 2x2; all but 0 for 1x1).
HDL_JPEG_FN bool jpeg_idct_uses_column(int size, int col) {
  switch (size) {
    case 8: return true;
    case 4: return col != 4;
    case 2: return col == 0 || (col & 1);
    default: return col == 0;
  }
}

/// The column pass of the `size`-point IDCT (8, 4, 2; 1 has none) of one block: dequantises
/// column `col` of `coef` by `q` and writes ws[col + 8 * k] for the rows the row pass reads.
/// `ws` is the 64-entry workspace of the block (int, as libjpeg's).
HDL_JPEG_FN void jpeg_idct_column(int size, const int16_t* coef, const uint16_t* q, int col, int32_t* ws) {
  using namespace jpeg_detail;
  const int16_t* in = coef + col;
  const uint16_t* qt = q + col;
  int32_t* w = ws + col;
  if (size == 8) {
    if (in[8] == 0 && in[16] == 0 && in[24] == 0 && in[32] == 0 && in[40] == 0 && in[48] == 0 && in[56] == 0) {
      const int32_t dc = static_cast<int32_t>(dequant(in, qt, 0) * (1 << kPass1Bits));
      for (int k = 0; k < 8; ++k) w[8 * k] = dc;
      return;
    }
    int64_t e[4], o[4];
    islow_even(dequant(in, qt, 0), dequant(in, qt, 16), dequant(in, qt, 32), dequant(in, qt, 48), e);
    islow_odd(dequant(in, qt, 56), dequant(in, qt, 40), dequant(in, qt, 24), dequant(in, qt, 8), o);
    constexpr int n = kConstBits - kPass1Bits;
    w[0] = static_cast<int32_t>(descale(e[0] + o[3], n));
    w[56] = static_cast<int32_t>(descale(e[0] - o[3], n));
    w[8] = static_cast<int32_t>(descale(e[1] + o[2], n));
    w[48] = static_cast<int32_t>(descale(e[1] - o[2], n));
    w[16] = static_cast<int32_t>(descale(e[2] + o[1], n));
    w[40] = static_cast<int32_t>(descale(e[2] - o[1], n));
    w[24] = static_cast<int32_t>(descale(e[3] + o[0], n));
    w[32] = static_cast<int32_t>(descale(e[3] - o[0], n));
  } else if (size == 4) {
    if (in[8] == 0 && in[16] == 0 && in[24] == 0 && in[40] == 0 && in[48] == 0 && in[56] == 0) {
      const int32_t dc = static_cast<int32_t>(dequant(in, qt, 0) * (1 << kPass1Bits));
      for (int k = 0; k < 4; ++k) w[8 * k] = dc;
      return;
    }
    const int64_t t0 = dequant(in, qt, 0) * (int64_t(1) << (kConstBits + 1));
    const int64_t t2 = dequant(in, qt, 16) * F_1_847759065 + dequant(in, qt, 48) * -F_0_765366865;
    const int64_t t10 = t0 + t2, t12 = t0 - t2;
    int64_t o0, o2;
    red4_odd(dequant(in, qt, 56), dequant(in, qt, 40), dequant(in, qt, 24), dequant(in, qt, 8), &o0, &o2);
    constexpr int n = kConstBits - kPass1Bits + 1;
    w[0] = static_cast<int32_t>(descale(t10 + o2, n));
    w[24] = static_cast<int32_t>(descale(t10 - o2, n));
    w[8] = static_cast<int32_t>(descale(t12 + o0, n));
    w[16] = static_cast<int32_t>(descale(t12 - o0, n));
  } else if (size == 2) {
    if (in[8] == 0 && in[24] == 0 && in[40] == 0 && in[56] == 0) {
      const int32_t dc = static_cast<int32_t>(dequant(in, qt, 0) * (1 << kPass1Bits));
      w[0] = w[8] = dc;
      return;
    }
    const int64_t t10 = dequant(in, qt, 0) * (int64_t(1) << (kConstBits + 2));
    const int64_t t0 = red2_odd(dequant(in, qt, 56), dequant(in, qt, 40), dequant(in, qt, 24), dequant(in, qt, 8));
    constexpr int n = kConstBits - kPass1Bits + 2;
    w[0] = static_cast<int32_t>(descale(t10 + t0, n));
    w[8] = static_cast<int32_t>(descale(t10 - t0, n));
  }
}

/// The row pass: row `row` (< size) of the workspace to `size` samples at `out`. For size 1 the
/// whole transform (jpeg_idct_1x1: the dequantised DC / 8), from `coef` and `q`.
HDL_JPEG_FN void jpeg_idct_row(int size, const int32_t* ws, const int16_t* coef, const uint16_t* q,
                                          int row, uint8_t* out) {
  using namespace jpeg_detail;
  const int32_t* w = ws + 8 * row;
  if (size == 8) {
    if (w[1] == 0 && w[2] == 0 && w[3] == 0 && w[4] == 0 && w[5] == 0 && w[6] == 0 && w[7] == 0) {
      const uint8_t dc = idct_saturate(descale(w[0], kPass1Bits + 3));
      for (int k = 0; k < 8; ++k) out[k] = dc;
      return;
    }
    int64_t e[4], o[4];
    islow_even(w[0], w[2], w[4], w[6], e);
    islow_odd(w[7], w[5], w[3], w[1], o);
    constexpr int n = kConstBits + kPass1Bits + 3;
    out[0] = idct_saturate(descale(e[0] + o[3], n));
    out[7] = idct_saturate(descale(e[0] - o[3], n));
    out[1] = idct_saturate(descale(e[1] + o[2], n));
    out[6] = idct_saturate(descale(e[1] - o[2], n));
    out[2] = idct_saturate(descale(e[2] + o[1], n));
    out[5] = idct_saturate(descale(e[2] - o[1], n));
    out[3] = idct_saturate(descale(e[3] + o[0], n));
    out[4] = idct_saturate(descale(e[3] - o[0], n));
  } else if (size == 4) {
    if (w[1] == 0 && w[2] == 0 && w[3] == 0 && w[5] == 0 && w[6] == 0 && w[7] == 0) {
      const uint8_t dc = idct_saturate(descale(w[0], kPass1Bits + 3));
      for (int k = 0; k < 4; ++k) out[k] = dc;
      return;
    }
    const int64_t t0 = int64_t(w[0]) * (int64_t(1) << (kConstBits + 1));
    const int64_t t2 = int64_t(w[2]) * F_1_847759065 + int64_t(w[6]) * -F_0_765366865;
    const int64_t t10 = t0 + t2, t12 = t0 - t2;
    int64_t o0, o2;
    red4_odd(w[7], w[5], w[3], w[1], &o0, &o2);
    constexpr int n = kConstBits + kPass1Bits + 3 + 1;
    out[0] = idct_saturate(descale(t10 + o2, n));
    out[3] = idct_saturate(descale(t10 - o2, n));
    out[1] = idct_saturate(descale(t12 + o0, n));
    out[2] = idct_saturate(descale(t12 - o0, n));
  } else if (size == 2) {
    if (w[1] == 0 && w[3] == 0 && w[5] == 0 && w[7] == 0) {
      const uint8_t dc = idct_saturate(descale(w[0], kPass1Bits + 3));
      out[0] = out[1] = dc;
      return;
    }
    const int64_t t10 = int64_t(w[0]) * (int64_t(1) << (kConstBits + 2));
    const int64_t t0 = red2_odd(w[7], w[5], w[3], w[1]);
    constexpr int n = kConstBits + kPass1Bits + 3 + 2;
    out[0] = idct_saturate(descale(t10 + t0, n));
    out[1] = idct_saturate(descale(t10 - t0, n));
  } else {
    out[0] = idct_wrap(descale(dequant(coef, q, 0), 3));
  }
}

/// The whole IDCT of one block into `size` rows of `size` samples, `pitch` bytes apart.
HDL_JPEG_FN void jpeg_idct_block(int size, const int16_t* coef, const uint16_t* q, uint8_t* out,
                                            int64_t pitch) {
  int32_t ws[64];
  for (int c = 0; c < 8; ++c)
    if (size > 1 && jpeg_idct_uses_column(size, c)) jpeg_idct_column(size, coef, q, c, ws);
  for (int r = 0; r < size; ++r) jpeg_idct_row(size, ws, coef, q, r, out + r * pitch);
}

// --- Upsampling (jdsample.c) and colour (jdcolor.c) ----------------------------------------

namespace jpeg_detail {

HDL_JPEG_FN int64_t clamp_index(int64_t i, int64_t n) { return i < 0 ? 0 : i >= n ? n - 1 : i; }

// Sample column i / row j of a component (its whole-image sample grid) in its plane: clamped to
// the image's samples, as libjpeg replicates the last column and row past the edge. The plane
// holds every sample a window reads (check_jpeg_batch verifies it of every image).
HDL_JPEG_FN int64_t column(const JpegComponentGeometry& c, int64_t i) {
  return clamp_index(i, c.samples_w) - int64_t(c.block_x0) * c.scaled_size;
}
HDL_JPEG_FN const uint8_t* row(const JpegComponentGeometry& c, const uint8_t* plane, int64_t j) {
  return plane + (clamp_index(j, c.samples_h) - int64_t(c.block_y0) * c.scaled_size) * (int64_t(c.blocks_w) * c.scaled_size);
}

}  // namespace jpeg_detail

/// Component `c`'s value at pixel (x, y) of the scaled image, upsampled as libjpeg does.
/// `plane`: the component's IDCT output (sample_offset into the batch's samples).
HDL_JPEG_FN int32_t jpeg_upsampled(const JpegComponentGeometry& c, const uint8_t* plane, int64_t x, int64_t y) {
  using jpeg_detail::column;
  using jpeg_detail::row;
  switch (c.upsample) {
    case JpegUpsample::kFull: return row(c, plane, y)[column(c, x)];
    case JpegUpsample::kH2V1Fancy: {  // 3/4 nearer + 1/4 further sample, + 1 (even x) or 2 (odd x), / 4
      const uint8_t* r = row(c, plane, y);
      const int64_t i = x >> 1, other = (x & 1) ? i + 1 : i - 1;
      return (3 * r[column(c, i)] + r[column(c, other)] + 1 + (x & 1)) >> 2;
    }
    case JpegUpsample::kH1V2Fancy: {  // the same down the column, + 1 (even y) or 2 (odd y)
      const int64_t j = y >> 1, far = (y & 1) ? j + 1 : j - 1, i = column(c, x);
      return (3 * row(c, plane, j)[i] + row(c, plane, far)[i] + 1 + (y & 1)) >> 2;
    }
    case JpegUpsample::kH2V2Fancy: {  // column sums 3 nearer + 1 further row, then across: + 8 (even x) or 7 (odd x), / 16
      const int64_t j = y >> 1, far = (y & 1) ? j + 1 : j - 1;
      const int64_t i = x >> 1, other = (x & 1) ? i + 1 : i - 1;
      const uint8_t *near_row = row(c, plane, j), *far_row = row(c, plane, far);
      const int64_t ci = column(c, i), co = column(c, other);
      const int32_t here = 3 * near_row[ci] + far_row[ci], there = 3 * near_row[co] + far_row[co];
      return (3 * here + there + 8 - (x & 1)) >> 4;
    }
    default:
      return row(c, plane, int32_t(y) / c.expand_v)[column(c, int32_t(x) / c.expand_h)];
  }
}

/// jdcolor.c's YCbCr -> RGB: R = Y + round(1.402 Cr'), G = Y + ((-0.34414 Cb' - 0.71414 Cr')
/// in 16.16 fixed point, + 1/2, >> 16), B = Y + round(1.772 Cb'), with C' = C - 128, clamped.
HDL_JPEG_FN void jpeg_ycc_to_rgb(int32_t y, int32_t cb, int32_t cr, uint8_t* rgb) {
  constexpr int32_t kHalf = 1 << 15;
  const int32_t xb = cb - 128, xr = cr - 128;
  const int32_t r = y + ((91881 * xr + kHalf) >> 16);                 // FIX(1.40200)
  const int32_t g = y + ((-22554 * xb + kHalf + -46802 * xr) >> 16);  // FIX(0.34414), FIX(0.71414)
  const int32_t b = y + ((116130 * xb + kHalf) >> 16);                // FIX(1.77200)
  rgb[0] = static_cast<uint8_t>(r < 0 ? 0 : r > 255 ? 255 : r);
  rgb[1] = static_cast<uint8_t>(g < 0 ? 0 : g > 255 ? 255 : g);
  rgb[2] = static_cast<uint8_t>(b < 0 ? 0 : b > 255 ? 255 : b);
}

/// Where pixel (r, j) of a w x h stored window goes in the output, for EXIF orientation `o`
/// (decode_window's write_window_row, pixel by pixel).
HDL_JPEG_FN void jpeg_oriented(int32_t o, int64_t w, int64_t h, int64_t r, int64_t j, int64_t* oy, int64_t* ox) {
  switch (o) {
    case 2: *oy = r, *ox = w - 1 - j; break;
    case 3: *oy = h - 1 - r, *ox = w - 1 - j; break;
    case 4: *oy = h - 1 - r, *ox = j; break;
    case 5: *oy = j, *ox = r; break;
    case 6: *oy = j, *ox = h - 1 - r; break;
    case 7: *oy = w - 1 - j, *ox = h - 1 - r; break;
    case 8: *oy = w - 1 - j, *ox = r; break;
    default: *oy = r, *ox = j; break;
  }
}

/// Decodes output pixel (r, j) of image `g`'s window (row r, column j of the stored window)
/// from the batch's sample planes and writes it to its place in `out` (the batch's output).
HDL_JPEG_FN void jpeg_pixel(const JpegImageGeometry& g, const uint8_t* samples, int64_t r, int64_t j,
                                       uint8_t* out) {
  const int64_t x = int64_t(g.x0) + j, y = int64_t(g.y0) + r;
  uint8_t rgb[3];
  const int32_t c0 = jpeg_upsampled(g.comp[0], samples + g.comp[0].sample_offset, x, y);
  if (g.transform == JpegTransform::kGray) {
    rgb[0] = rgb[1] = rgb[2] = static_cast<uint8_t>(c0);
  } else {
    const int32_t c1 = jpeg_upsampled(g.comp[1], samples + g.comp[1].sample_offset, x, y);
    const int32_t c2 = jpeg_upsampled(g.comp[2], samples + g.comp[2].sample_offset, x, y);
    if (g.transform == JpegTransform::kYCbCr) {
      jpeg_ycc_to_rgb(c0, c1, c2, rgb);
    } else {
      rgb[0] = static_cast<uint8_t>(c0), rgb[1] = static_cast<uint8_t>(c1), rgb[2] = static_cast<uint8_t>(c2);
    }
  }
  int64_t oy, ox;
  jpeg_oriented(g.orientation, g.width, g.height, r, j, &oy, &ox);
  uint8_t* px = out + g.out_offset + oy * g.out_row_stride + ox * g.out_pixel_stride;
  if (g.color == ColorFormat::kGray) {
    // A gray JPEG's own samples; a colour one's RGB through Pillow's luma (pillow_color.h).
    px[0] = g.transform == JpegTransform::kGray
                ? rgb[0]
                : static_cast<uint8_t>((uint32_t(rgb[0]) * 19595 + uint32_t(rgb[1]) * 38470 + uint32_t(rgb[2]) * 7471 +
                                        0x8000) >> 16);
  } else if (g.color == ColorFormat::kBGR) {
    px[0] = rgb[2], px[1] = rgb[1], px[2] = rgb[0];
  } else {
    px[0] = rgb[0], px[1] = rgb[1], px[2] = rgb[2];
  }
}

/// The image whose [begin, next begin) range holds `n`: a binary search over the batch's images
/// by their first block (by_pixels false) or first pixel (true).
HDL_JPEG_FN int32_t jpeg_image_of(const JpegImageGeometry* images, int32_t count, int64_t n, bool by_pixels) {
  int32_t lo = 0, hi = count - 1;
  while (lo < hi) {
    const int32_t mid = (lo + hi + 1) / 2;
    const int64_t begin = by_pixels ? images[mid].pixel_begin : images[mid].block_begin;
    if (begin <= n) lo = mid; else hi = mid - 1;
  }
  return lo;
}

/// Block `n` of the batch: its image's component and its place in the component's plane.
struct JpegBlockRef {
  const JpegComponentGeometry* comp;
  int64_t bx, by;  ///< in the rectangle held
};
HDL_JPEG_FN JpegBlockRef jpeg_block(const JpegImageGeometry& g, int64_t n) {
  int c = 0;
  while (c + 1 < g.components && g.comp[c + 1].block_begin <= n) ++c;
  const JpegComponentGeometry& comp = g.comp[c];
  const int64_t local = n - comp.block_begin;
  return {&comp, local % comp.blocks_w, local / comp.blocks_w};
}

/// The checks both twins make on a batch (its geometry read from `images`, host memory):
/// every image's blocks, planes, tables and output pixels inside the batch's buffers, blocks
/// and pixels numbered consecutively. InvalidArgument naming the image otherwise.
Status check_jpeg_batch(const JpegBatchView& batch, const JpegImageGeometry* images);

/// The host twin of the device decode (kernels::cuda::jpeg_decode_batch): the whole batch's
/// IDCT, upsampling, colour conversion and writes, on the calling thread, with the same
/// functions. `batch` is in host memory.
Status jpeg_decode_batch_host(const JpegBatchView& batch);

}  // namespace hdl::kernels
HDL_API_END
