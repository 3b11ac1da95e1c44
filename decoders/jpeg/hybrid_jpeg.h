// Hybrid JPEG decoding: CPU threads Huffman-decode the blocks an image (or a window of it)
// needs into DCT coefficients; a batch of them is uploaded once and decoded into pixels by the
// device kernels (decoders/kernels/cuda/jpeg_hybrid.h), or on the CPU by their host twin, with
// libjpeg-turbo's arithmetic: the pixels equal JpegDecoder's (decoders/jpeg/jpeg_decoder.h) with
// its default options (JDCT_ISLOW, fancy upsampling) for the same DecodeRequest, bit for bit.
//
// Per image, on a CPU thread (one HybridJpegDecoder per thread):
//   1. plan(): the header, the request mapped onto the image as JpegDecoder maps it
//      (detail::decode_window: ROI, DCT scale 1/1..1/8 from min_width/min_height, EXIF
//      orientation, colour), and what the decode needs: per component its IDCT block size,
//      upsampling method and the rectangle of blocks that covers the window plus the pixel
//      of context that upsampling reads (its MCUs). kUnsupported for what it does not decode.
//   2. the batch (HybridJpegBatch) places the image: its blocks, tables and output slot;
//   3. decode_coefficients(): Huffman decoding of exactly those blocks, into the caller's buffer
//      (the batch's pinned upload buffer): with the file's entry-point index
//      (DecodeRequest::index_cache; built on first sight) detail::JpegWindowEntropy decodes
//      only the window's MCUs straight from the file; otherwise libjpeg's own
//      jpeg_read_coefficients decodes the file (every scan of a progressive one) and the
//      rectangle is copied out.
// Per batch (decoders/jpeg/hybrid_batch.h): one upload of the buffer, then decode_batch() (two
// launches: IDCT of every block, then upsampling + colour + orientation of every output pixel),
// or decode_batch_host().
//
// Decoded: 8-bit baseline, extended, progressive and arithmetic-coded JPEGs with 1 component
// (gray) or 3 (YCbCr, or RGB by Adobe transform 0), any sampling factors libjpeg upsamples by
// integral ratios (4:4:4, 4:2:2, 4:2:0, 4:4:0, 4:1:1, 4:1:0, luma subsampled, ...), restart
// intervals. kUnsupported (decode those with JpegDecoder): CMYK / YCCK, 12-bit, lossless,
// progressive files whose scans leave low AC coefficients unrefined (libjpeg then smooths
// blocks across their neighbours: jdcoefct.c's block smoothing), fractional sampling ratios,
// and damaged data when DecodeRequest::allow_partial asks for the partial image.
//
// Thread safety: HybridJpegDecoder, one per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "decoders/decoder.h"
#include "decoders/kernels/jpeg_hybrid.h"
#include "media/api.h"
#include "media/shape.h"
#include "media/status.h"
#include "media/tensor.h"

HDL_API_BEGIN
namespace hdl {

/// What one image needs in a hybrid batch (from HybridJpegDecoder::plan).
struct HybridJpegPlan {
  /// The decode's geometry, numbered from 0 for this image alone (blocks, pixels, sample planes,
  /// tables 0..components-1); HybridJpegBatch::add renumbers it and sets the output slot.
  kernels::JpegImageGeometry geometry;
  Shape shape;              ///< HWC output shape: JpegDecoder's output_shape for the request
  int scale_denom = 1;      ///< the DCT scale (DecodeReport::scale_denom)
  int64_t blocks = 0;       ///< coefficient blocks (64 int16 each)
  int64_t sample_bytes = 0; ///< IDCT scratch the image's components take
  /// The MCUs whose blocks are held: rows [mcu_r0, mcu_r1), columns [mcu_c0, mcu_c1) (for a
  /// 1-component image an MCU is one block).
  int64_t mcu_r0 = 0, mcu_r1 = 0, mcu_c0 = 0, mcu_c1 = 0;
  int64_t mcus_x = 0, mcus_y = 0;  ///< the image's MCU grid
  int components = 0;
  int mcu_blocks_w[kernels::kJpegMaxComponents] = {};  ///< blocks per MCU across (h factor, or 1)
  int mcu_blocks_h[kernels::kJpegMaxComponents] = {};  ///< and down
};

/// The Huffman (CPU) half of the hybrid decode. One per thread: it keeps a libjpeg
/// decompressor, the window Huffman decoder's tables and scratch between images.
class HybridJpegDecoder {
 public:
  struct Stats {
    int64_t indexed = 0;    ///< coefficient decodes through the entry-point index
    int64_t libjpeg = 0;    ///< through jpeg_read_coefficients
    int64_t fallbacks = 0;  ///< index decodes that failed (then libjpeg decoded the file)
  };

  HybridJpegDecoder();
  ~HybridJpegDecoder();
  HybridJpegDecoder(const HybridJpegDecoder&) = delete;
  HybridJpegDecoder& operator=(const HybridJpegDecoder&) = delete;

  /// Parses the header and plans the decode of `request`. Errors as JpegDecoder's
  /// output_shape / decode (kInvalidArgument ROI, kResourceExhausted max_pixels, kInvalidData
  /// not a JPEG), kUnsupported for what the hybrid path does not decode (see the top).
  Result<HybridJpegPlan> plan(std::span<const uint8_t> data, const DecodeRequest& request);

  /// Huffman-decodes the blocks of `plan` (made from the same `data` and `request`) into
  /// `coefs` (plan.blocks * 64, zeroed here first; e.g. a batch's pinned upload buffer) and the
  /// components' quantisation tables into `quant` (64 * plan.components, natural order).
  /// kInvalidData for damaged data (kUnsupported with request.allow_partial: JpegDecoder
  /// decodes the partial image), kResourceExhausted over request.max_scans.
  Status decode_coefficients(std::span<const uint8_t> data, const HybridJpegPlan& plan,
                             const DecodeRequest& request, std::span<int16_t> coefs, std::span<uint16_t> quant);

  /// The whole hybrid decode on the CPU (plan, coefficients, host twin) into `out` (host uint8
  /// view of plan.shape, unit channel stride): the pixels JpegDecoder writes for `request`.
  Result<DecodeReport> decode_host(std::span<const uint8_t> data, const DecodeRequest& request,
                                   const TensorView& out);

  Stats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hdl
HDL_API_END
