// nvJPEG decoder: baseline JPEG decoded on a CUDA device, behind the ImageDecoder seam.
//
// libnvjpeg is loaded with dlopen at run time (never needed to build). When the library or a
// usable device is missing, every call answers kUnsupported with the reason, so a DecoderSet
// whose registry lists this decoder first hands every JPEG to libjpeg-turbo. Per image, the
// cases nvJPEG does not take the way this library promises answer kUnsupported as well (and
// are counted in stats()): progressive, CMYK/YCCK, colour spaces other than YCbCr/gray, gray
// output (Pillow's luma differs from the JPEG's Y), region-of-interest requests, EXIF
// orientation to apply, and anything nvJPEG itself refuses or fails on (including corrupt
// data, so the CPU decoder reports it in its own words). DCT scaling is never used: the output
// is full resolution (DecodeRequest allows that) with scale_denom 1.
//
// Pixels are nvJPEG's (its IDCT and chroma upsampling), not bit-exact with libjpeg-turbo;
// docs/CUDA.md has the bound the GPU test checks.
//
// `out` may be device memory (the decoder's device: decoded in place when pixels are dense,
// i.e. strides [row >= 3W, 3, 1]) or host memory (decoded on the device, then copied back).
// With `synchronize` (default) decode() returns when the pixels are there; otherwise device
// output is ready once stream() has passed the decode. With device output, call this decoder
// directly, not through a DecoderSet with CPU fallbacks: they would write to device memory
// (the mixed stage decodes fallbacks into pinned host memory and uploads; docs/CUDA.md).
//
// Thread safety: one instance per thread, as every ImageDecoder; instances are independent
// (each has its own nvJPEG handle, decode state and stream).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "decoders/decoder.h"
#include "media/api.h"

HDL_API_BEGIN
namespace hdl {

namespace cuda {
class Stream;
}

struct NvjpegDecoderOptions {
  int device = 0;            ///< decode on cuda:device
  bool synchronize = true;   ///< decode() waits for the device before returning
};

/// What one instance did: images decoded, and kUnsupported answers by reason.
struct NvjpegStats {
  uint64_t decoded = 0;
  uint64_t fallbacks = 0;
  std::map<std::string, uint64_t> fallback_reasons;  ///< e.g. {"progressive JPEG", 3}
};

class NvjpegDecoder final : public ImageDecoder {
 public:
  explicit NvjpegDecoder(const NvjpegDecoderOptions& options = {});
  ~NvjpegDecoder() override;

  const char* name() const override { return "nvjpeg"; }
  Result<ImageInfo> read_info(std::span<const uint8_t> data) override;
  Result<Shape> output_shape(const ImageInfo& info, const DecodeRequest& request) override;
  Result<DecodeReport> decode(std::span<const uint8_t> data, const DecodeRequest& request,
                              const TensorView& out) override;

  const NvjpegStats& stats() const { return stats_; }
  /// The stream decodes run on (created on first decode; null before).
  const cuda::Stream* stream() const;

 private:
  struct Impl;
  Status fallback(Status s);  // counts a kUnsupported answer
  Status ensure_ready();      // library, device, handle, state, stream
  NvjpegDecoderOptions options_;
  NvjpegStats stats_;
  std::unique_ptr<Impl> impl_;
};

/// Whether nvJPEG is usable in this process: ok, or kUnsupported naming what is missing
/// ("not available: built without CUDA", "no CUDA device: ...", "libnvjpeg not found (...)").
/// Cheap after the first call.
Status nvjpeg_status();

/// The header of a JPEG and the image-level checks the decoder makes before nvJPEG sees it
/// (Huffman baseline or extended, 8-bit, not progressive, not CMYK/YCCK, not RGB by Adobe
/// transform 0): the ImageInfo, or kUnsupported with the reason. Needs no library or device.
Result<ImageInfo> nvjpeg_probe_image(std::span<const uint8_t> data);

/// Whether nvJPEG should decode an image described by `info` for `request`: ok, or
/// kUnsupported with the reason the CPU decoder gets it ("progressive JPEG", "CMYK JPEG", ...).
/// A pure function of its arguments.
Status nvjpeg_supports(const ImageInfo& info, const DecodeRequest& request);

/// A registry entry ("nvjpeg", "jpeg", JPEG magic bytes) for a DecoderRegistry that lists it
/// ahead of the CPU decoders: DecoderRegistry({nvjpeg_decoder_entry(), ...builtin entries}).
DecoderEntry nvjpeg_decoder_entry(const NvjpegDecoderOptions& options = {});

}  // namespace hdl
HDL_API_END
