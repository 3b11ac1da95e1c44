// Device hybrid JPEG decode: decoders/kernels/jpeg_hybrid.h's per-block and per-pixel functions
// in two batched launches (every block of every image, then every output pixel).
#include "decoders/kernels/cuda/jpeg_hybrid.h"

#include "media/cuda/detail/launch.cuh"

namespace hdl::kernels::cuda {
namespace detail = hdl::cuda::detail;  // media/cuda/detail/launch.cuh
namespace {

// 8 threads per DCT block (lane k: column k of the column pass, then row k of the row pass), 32
// blocks per 256-thread CTA; the 8 lanes of a block sit in one warp, so a warp barrier orders
// the passes.
constexpr int kDctBlocksPerCta = 32;
constexpr int kPixelThreads = 256;

__global__ void __launch_bounds__(8 * kDctBlocksPerCta) jpeg_idct_kernel(JpegBatchView b) {
  __shared__ int32_t workspace[kDctBlocksPerCta][64];
  const int slot = int(threadIdx.x) / 8, lane = int(threadIdx.x) % 8;
  const int64_t n = int64_t(blockIdx.x) * kDctBlocksPerCta + slot;
  const bool live = n < b.blocks;
  JpegBlockRef ref{nullptr, 0, 0};
  int size = 1;
  const int16_t* coef = nullptr;
  const uint16_t* q = nullptr;
  if (live) {
    const JpegImageGeometry& g = b.images[jpeg_image_of(b.images, b.image_count, n, false)];
    ref = jpeg_block(g, n);
    size = ref.comp->scaled_size;
    coef = b.coefs + 64 * n;
    q = b.quant + 64 * int64_t(ref.comp->quant);
    if (size > 1 && jpeg_idct_uses_column(size, lane)) jpeg_idct_column(size, coef, q, lane, workspace[slot]);
  }
  __syncwarp();
  if (live && lane < size) {
    const int64_t pitch = int64_t(ref.comp->blocks_w) * size;
    uint8_t* out = b.samples + ref.comp->sample_offset + (ref.by * size + lane) * pitch + ref.bx * size;
    jpeg_idct_row(size, workspace[slot], coef, q, lane, out);
  }
}

__global__ void __launch_bounds__(kPixelThreads) jpeg_pixel_kernel(JpegBatchView b) {
  const int64_t p = int64_t(blockIdx.x) * kPixelThreads + threadIdx.x;
  if (p >= b.pixels) return;
  const JpegImageGeometry& g = b.images[jpeg_image_of(b.images, b.image_count, p, true)];
  const int64_t local = p - g.pixel_begin;
  jpeg_pixel(g, b.samples, local / g.width, local % g.width, b.out);
}

}  // namespace

Status jpeg_decode_batch(const JpegBatchView& batch, const JpegImageGeometry* host_images, hdl::cuda::Stream& stream) {
  HDL_RETURN_IF_ERROR(check_jpeg_batch(batch, host_images));
  HDL_RETURN_IF_ERROR(detail::check_device("jpeg_decode_batch", stream, {}));
  if (batch.image_count == 0) return Status::ok();
  cudaStream_t s = detail::raw(stream);
  if (batch.blocks > 0) {
    const int64_t ctas = (batch.blocks + kDctBlocksPerCta - 1) / kDctBlocksPerCta;
    jpeg_idct_kernel<<<dim3(unsigned(ctas)), dim3(8 * kDctBlocksPerCta), 0, s>>>(batch);
    HDL_RETURN_IF_ERROR(detail::launched("jpeg_decode_batch (IDCT)"));
  }
  if (batch.pixels > 0) {
    const int64_t ctas = (batch.pixels + kPixelThreads - 1) / kPixelThreads;
    jpeg_pixel_kernel<<<dim3(unsigned(ctas)), dim3(kPixelThreads), 0, s>>>(batch);
    HDL_RETURN_IF_ERROR(detail::launched("jpeg_decode_batch (pixels)"));
  }
  return Status::ok();
}

}  // namespace hdl::kernels::cuda
