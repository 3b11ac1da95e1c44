// The hybrid JPEG batch: layout and decode (decoders/jpeg/hybrid_batch.h).
#include "decoders/jpeg/hybrid_batch.h"

#include <cstring>

#include "decoders/kernels/cuda/jpeg_hybrid.h"

namespace hdl {
namespace {

using kernels::JpegImageGeometry;

size_t align256(size_t n) { return (n + 255) / 256 * 256; }

}  // namespace

void HybridJpegBatch::clear() {
  images_.clear();
  blocks_ = pixels_ = sample_bytes_ = 0;
}

int HybridJpegBatch::add(const HybridJpegPlan& plan, int64_t out_offset, int64_t row_stride, int64_t pixel_stride) {
  JpegImageGeometry g = plan.geometry;
  const int index = size();
  for (int c = 0; c < g.components; ++c) {
    g.comp[c].block_begin += blocks_;
    g.comp[c].sample_offset += sample_bytes_;
    g.comp[c].quant = index * kernels::kJpegMaxComponents + c;
  }
  g.block_begin = blocks_;
  g.pixel_begin = pixels_;
  g.out_offset = out_offset;
  g.out_row_stride = row_stride;
  g.out_pixel_stride = pixel_stride;
  blocks_ += plan.blocks;
  pixels_ += int64_t(g.width) * g.height;
  sample_bytes_ += int64_t(align256(size_t(plan.sample_bytes)));
  images_.push_back(g);
  return index;
}

size_t HybridJpegBatch::quant_offset() const { return align256(images_.size() * sizeof(JpegImageGeometry)); }
size_t HybridJpegBatch::coef_offset() const {
  return quant_offset() + align256(images_.size() * kernels::kJpegMaxComponents * 64 * sizeof(uint16_t));
}
size_t HybridJpegBatch::upload_bytes() const { return coef_offset() + size_t(blocks_) * 64 * sizeof(int16_t); }

void HybridJpegBatch::write_geometry(void* upload) const {
  if (!images_.empty()) std::memcpy(upload, images_.data(), images_.size() * sizeof(JpegImageGeometry));
}

int16_t* HybridJpegBatch::coefficients(void* upload, int image) const {
  return reinterpret_cast<int16_t*>(static_cast<uint8_t*>(upload) + coef_offset()) + 64 * images_[size_t(image)].block_begin;
}

uint16_t* HybridJpegBatch::quant(void* upload, int image) const {
  return reinterpret_cast<uint16_t*>(static_cast<uint8_t*>(upload) + quant_offset()) +
         size_t(image) * kernels::kJpegMaxComponents * 64;
}

int64_t HybridJpegBatch::blocks(int image) const {
  const size_t i = size_t(image);
  return (i + 1 < images_.size() ? images_[i + 1].block_begin : blocks_) - images_[i].block_begin;
}

kernels::JpegBatchView HybridJpegBatch::view(const void* upload, uint8_t* samples, uint8_t* out, int64_t out_bytes) const {
  const auto* base = static_cast<const uint8_t*>(upload);
  kernels::JpegBatchView v;
  v.images = reinterpret_cast<const JpegImageGeometry*>(base);
  v.image_count = size();
  v.quant = reinterpret_cast<const uint16_t*>(base + quant_offset());
  v.quant_count = size() * kernels::kJpegMaxComponents;
  v.coefs = reinterpret_cast<const int16_t*>(base + coef_offset());
  v.blocks = blocks_;
  v.samples = samples;
  v.sample_bytes = sample_bytes_;
  v.out = out;
  v.out_bytes = out_bytes;
  v.pixels = pixels_;
  return v;
}

Status decode_batch_host(const HybridJpegBatch& batch, const void* upload, uint8_t* out, int64_t out_bytes,
                         std::vector<uint8_t>& scratch) {
  if (scratch.size() < size_t(batch.sample_bytes())) scratch.resize(size_t(batch.sample_bytes()));
  return kernels::jpeg_decode_batch_host(batch.view(upload, scratch.data(), out, out_bytes));
}

Status decode_batch(const HybridJpegBatch& batch, const void* device_upload, uint8_t* device_samples,
                    uint8_t* device_out, int64_t out_bytes, hdl::cuda::Stream& stream) {
  return kernels::cuda::jpeg_decode_batch(batch.view(device_upload, device_samples, device_out, out_bytes),
                                          batch.images().data(), stream);
}

}  // namespace hdl
