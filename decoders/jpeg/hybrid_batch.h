// The layout of a hybrid JPEG batch and its decode (decoders/jpeg/hybrid_jpeg.h plans the images
// and Huffman-decodes them; decoders/kernels/jpeg_hybrid.h is the arithmetic).
//
// HybridJpegBatch numbers the images' blocks and output pixels across the batch and lays out
// one upload buffer of [geometry][quantisation tables][coefficients] (each section 256-byte
// aligned), so a batch is one host -> device copy; the CPU threads write each image's
// coefficients and tables into it. decode_batch enqueues the device decode (two launches for
// the whole batch), decode_batch_host is its host twin. The output buffer is the caller's
// (e.g. a batch tensor's slots).
//
// Thread safety: HybridJpegBatch, one owner (the images' coefficients may be written by several
// threads once the layout is complete); the free functions are reentrant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "decoders/jpeg/hybrid_jpeg.h"
#include "decoders/kernels/jpeg_hybrid.h"
#include "media/api.h"
#include "media/cuda/stream.h"
#include "media/status.h"

HDL_API_BEGIN
namespace hdl {

/// The layout of one hybrid batch: its images' geometry in batch numbering and one upload
/// buffer of [geometry][quantisation tables][coefficients] (each section 256-byte aligned), so a
/// batch is one host -> device copy. The output is the caller's (e.g. a batch tensor's slots).
class HybridJpegBatch {
 public:
  void clear();
  /// Appends an image; its pixels go `out_offset` bytes into the batch's output, its rows
  /// `row_stride` and pixels `pixel_stride` bytes apart (plan.shape's oriented rows). Returns
  /// its index.
  int add(const HybridJpegPlan& plan, int64_t out_offset, int64_t row_stride, int64_t pixel_stride);
  int size() const { return int(images_.size()); }

  size_t upload_bytes() const;
  /// Writes the geometry section into `upload` (upload_bytes() of host memory, e.g. pinned);
  /// the images' coefficients and tables go where coefficients() and quant() say.
  void write_geometry(void* upload) const;
  int16_t* coefficients(void* upload, int image) const;
  uint16_t* quant(void* upload, int image) const;
  int64_t blocks(int image) const;  ///< the image's coefficient blocks

  int64_t blocks() const { return blocks_; }
  int64_t pixels() const { return pixels_; }
  int64_t sample_bytes() const { return sample_bytes_; }  ///< the IDCT scratch the decode needs
  const std::vector<kernels::JpegImageGeometry>& images() const { return images_; }

  /// The batch as the decode reads it, from a copy of the upload buffer at `upload` (host or
  /// device memory), with `samples` (sample_bytes()) and `out` (out_bytes) in the same memory.
  kernels::JpegBatchView view(const void* upload, uint8_t* samples, uint8_t* out, int64_t out_bytes) const;

 private:
  size_t quant_offset() const;
  size_t coef_offset() const;
  std::vector<kernels::JpegImageGeometry> images_;
  int64_t blocks_ = 0, pixels_ = 0, sample_bytes_ = 0;
};

/// The host twin of decode_batch: `upload` is the batch's upload buffer (host), `out` its output
/// (out_bytes, host); `scratch` grows to the IDCT scratch.
Status decode_batch_host(const HybridJpegBatch& batch, const void* upload, uint8_t* out, int64_t out_bytes,
                         std::vector<uint8_t>& scratch);

/// Enqueues the pixel half of a batch on `stream`: `device_upload` is a copy of the batch's upload
/// buffer on the stream's device, `device_samples` sample_bytes() of device scratch,
/// `device_out` the output (out_bytes). All must stay alive until the stream passes the work.
/// kUnsupported without CUDA; kInvalidArgument for a batch that does not fit its buffers.
Status decode_batch(const HybridJpegBatch& batch, const void* device_upload, uint8_t* device_samples,
                    uint8_t* device_out, int64_t out_bytes, hdl::cuda::Stream& stream);

}  // namespace hdl
HDL_API_END
