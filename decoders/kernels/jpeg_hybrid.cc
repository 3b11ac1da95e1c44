// Hybrid JPEG decoding: the batch checks and the host twin (the device kernels' arithmetic on
// the CPU, decoders/kernels/jpeg_hybrid.h).
#include "decoders/kernels/jpeg_hybrid.h"

#include <algorithm>
#include <string>

namespace hdl::kernels {
namespace {

Status bad(int32_t image, const std::string& what) {
  return Status::invalid_argument("jpeg batch: image " + std::to_string(image) + ": " + what);
}

bool valid_upsample(JpegUpsample u) {
  return u == JpegUpsample::kFull || u == JpegUpsample::kH2V1Fancy || u == JpegUpsample::kH1V2Fancy ||
         u == JpegUpsample::kH2V2Fancy || u == JpegUpsample::kReplicate;
}

// The samples of `k` that the window of `g` reads (the fancy filters one beside the nearest,
// clamped to the image's samples) lie in its plane: the device code reads them unchecked.
bool covers(const JpegComponentGeometry& k, const JpegImageGeometry& g) {
  const bool fancy_h = k.upsample == JpegUpsample::kH2V1Fancy || k.upsample == JpegUpsample::kH2V2Fancy;
  const bool fancy_v = k.upsample == JpegUpsample::kH1V2Fancy || k.upsample == JpegUpsample::kH2V2Fancy;
  const int want_h = k.upsample == JpegUpsample::kFull ? 1 : fancy_h ? 2 : k.expand_h;
  const int want_v = k.upsample == JpegUpsample::kFull ? 1 : fancy_v ? 2 : k.expand_v;
  if (k.expand_h != want_h || k.expand_v != want_v) return false;
  // An even pixel of a fancy filter reads the sample before its nearest, an odd one the sample after.
  auto inside = [](int64_t p0, int64_t n, int e, bool fancy, int64_t samples, int64_t first, int64_t count) {
    const int64_t p1 = p0 + n - 1;
    const int64_t lo = std::clamp<int64_t>(p0 / e - (fancy && p0 % 2 == 0), 0, samples - 1);
    const int64_t hi = std::clamp<int64_t>(p1 / e + (fancy && p1 % 2 == 1), 0, samples - 1);
    return lo >= first && hi < first + count;
  };
  const int64_t s = k.scaled_size;
  return inside(g.x0, g.width, k.expand_h, fancy_h, k.samples_w, k.block_x0 * s, k.blocks_w * s) &&
         inside(g.y0, g.height, k.expand_v, fancy_v, k.samples_h, k.block_y0 * s, k.blocks_h * s);
}

}  // namespace

Status check_jpeg_batch(const JpegBatchView& batch, const JpegImageGeometry* images) {
  if (batch.image_count < 0 || batch.blocks < 0 || batch.pixels < 0 || batch.quant_count < 0 ||
      batch.sample_bytes < 0 || batch.out_bytes < 0)
    return Status::invalid_argument("jpeg batch: negative sizes");
  if (batch.image_count > 0 && (!images || !batch.images || !batch.coefs || !batch.quant || !batch.samples || !batch.out))
    return Status::invalid_argument("jpeg batch: a buffer is missing");
  int64_t blocks = 0, pixels = 0;
  for (int32_t i = 0; i < batch.image_count; ++i) {
    const JpegImageGeometry& g = images[i];
    if (g.components != 1 && g.components != 3) return bad(i, "components must be 1 or 3");
    if ((g.components == 1) != (g.transform == JpegTransform::kGray)) return bad(i, "transform does not fit the components");
    if (g.transform != JpegTransform::kYCbCr && g.transform != JpegTransform::kRgb && g.transform != JpegTransform::kGray)
      return bad(i, "unknown transform");
    if (g.block_begin != blocks) return bad(i, "blocks are not numbered consecutively");
    if (g.pixel_begin != pixels) return bad(i, "pixels are not numbered consecutively");
    if (g.width <= 0 || g.height <= 0 || g.x0 < 0 || g.y0 < 0) return bad(i, "empty or negative window");
    if (g.orientation < 1 || g.orientation > 8) return bad(i, "orientation must be 1..8");
    for (int c = 0; c < g.components; ++c) {
      const JpegComponentGeometry& k = g.comp[c];
      const int s = k.scaled_size;
      if (s != 1 && s != 2 && s != 4 && s != 8) return bad(i, "block size must be 1, 2, 4 or 8");
      if (!valid_upsample(k.upsample) || k.expand_h < 1 || k.expand_v < 1) return bad(i, "bad upsampling");
      if (k.samples_w <= 0 || k.samples_h <= 0 || k.blocks_w <= 0 || k.blocks_h <= 0 || k.block_x0 < 0 || k.block_y0 < 0)
        return bad(i, "component " + std::to_string(c) + " holds no samples");
      if (k.quant < 0 || k.quant >= batch.quant_count) return bad(i, "quantisation table out of range");
      if (!covers(k, g)) return bad(i, "component " + std::to_string(c) + "'s blocks do not cover the window");
      if (k.block_begin != blocks) return bad(i, "component blocks are not consecutive");
      blocks += int64_t(k.blocks_w) * k.blocks_h;
      const int64_t plane = int64_t(k.blocks_w) * s * int64_t(k.blocks_h) * s;
      if (k.sample_offset < 0 || k.sample_offset + plane > batch.sample_bytes) return bad(i, "sample plane outside the scratch");
    }
    pixels += int64_t(g.width) * g.height;
    // The output's extent: the oriented window's last row and column.
    const bool swap = g.orientation >= 5;
    const int64_t oh = swap ? g.width : g.height, ow = swap ? g.height : g.width;
    const int channels = color_channels(g.color);
    if (g.out_offset < 0 || g.out_row_stride < 0 || g.out_pixel_stride < channels ||
        g.out_offset + (oh - 1) * g.out_row_stride + (ow - 1) * g.out_pixel_stride + channels > batch.out_bytes)
      return bad(i, "output slot outside the output buffer");
  }
  if (blocks != batch.blocks) return Status::invalid_argument("jpeg batch: blocks do not add up");
  if (pixels != batch.pixels) return Status::invalid_argument("jpeg batch: pixels do not add up");
  return Status::ok();
}

Status jpeg_decode_batch_host(const JpegBatchView& batch) {
  HDL_RETURN_IF_ERROR(check_jpeg_batch(batch, batch.images));
  // Stage 1: every block's IDCT into its component's plane.
  for (int32_t i = 0; i < batch.image_count; ++i) {
    const JpegImageGeometry& g = batch.images[i];
    for (int c = 0; c < g.components; ++c) {
      const JpegComponentGeometry& k = g.comp[c];
      const int s = k.scaled_size;
      const int64_t pitch = int64_t(k.blocks_w) * s;
      const uint16_t* q = batch.quant + 64 * int64_t(k.quant);
      uint8_t* plane = batch.samples + k.sample_offset;
      const int16_t* coef = batch.coefs + 64 * k.block_begin;
      for (int64_t by = 0; by < k.blocks_h; ++by)
        for (int64_t bx = 0; bx < k.blocks_w; ++bx, coef += 64)
          jpeg_idct_block(s, coef, q, plane + by * s * pitch + bx * s, pitch);
    }
  }
  // Stage 2: every output pixel.
  for (int32_t i = 0; i < batch.image_count; ++i) {
    const JpegImageGeometry g = batch.images[i];  // (a copy: the pixel writes cannot alias it)
    for (int64_t r = 0; r < g.height; ++r)
      for (int64_t j = 0; j < g.width; ++j) jpeg_pixel(g, batch.samples, r, j, batch.out);
  }
  return Status::ok();
}

}  // namespace hdl::kernels
