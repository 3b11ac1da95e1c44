// NvjpegHardwareDecoder: a batch of JPEGs decoded in one call on the GPU's hardware JPEG engines
// (nvJPEG's NVJPEG_BACKEND_HARDWARE: A100, H100 and later data-centre GPUs), for the mixed
// stage's image decoder. The CPU threads take what the engines cannot (DecodeShare splits the
// rest between them).
//
// Per image, supports() parses the header on the host (nvjpegJpegStreamParseHeader) and asks
// nvjpegDecodeBatchedSupported, after this library's own checks (nvjpeg_probe_image,
// nvjpeg_supports: progressive, CMYK, 12-bit, ROI, EXIF rotation, gray output go to the CPU);
// the engines also refuse 4:1:0 / 4:1:1 and multi-scan files. decode() sends the images it is
// given (each one supports() accepted) to one nvjpegDecodeBatched call, straight into their
// device views, enqueued on the caller's stream.
//
// Stream order: torchcodec found (pytorch/torchcodec PR #1634) that on an H100 the hardware
// batched decode wrote its outputs before work queued earlier on the caller's stream had
// finished. decode() therefore waits on the host for `stream` to drain before the call; the
// outputs are complete for work queued on `stream` after it (the GPU test checks both).
//
// A failed call fails the whole batch with one status and does not say which image: decode()
// then answers kUnsupported for every image of that call, so the caller decodes them on the
// CPU, whose decoder names a corrupt file in its own words (the error policy stays the CPU
// path's), and re-initialises the batched state (nvJPEG's rule after a failed batch).
//
// Without CUDA, libnvjpeg, its batched entry points, a device or hardware engines, status()
// answers kUnsupported with the reason, and so does every other call.
//
// Thread safety: one instance per device stage; not for concurrent use.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "decoders/decoder.h"
#include "media/api.h"

HDL_API_BEGIN
namespace hdl {

namespace cuda {
class Stream;
}

/// One image of a batch: its bytes (host) and where its pixels go: device memory on the
/// decoder's device, [H, W, 3] uint8 of the image's size, strides [row >= 3 W, 3, 1].
struct HardwareDecodeItem {
  std::span<const uint8_t> data;
  TensorView out;
};

/// What the hardware engines need of a JPEG's structure that ImageInfo does not say, checked
/// on the host without nvJPEG: the first scan holds every component of the frame (one
/// interleaved scan: the engines take single-scan files only), and the data ends with EOI
/// within its last 64 bytes (a truncated file goes to the CPU decoder, which reports it or
/// fills it as the request says; the engines would decode it silently). ok, or kUnsupported
/// with the reason.
Status hardware_jpeg_structure(std::span<const uint8_t> data);

/// Every check of this library's own on whether the engines may take a JPEG for `request`
/// (nvjpeg_probe_image, nvjpeg_supports, no 4:1:1 / 4:1:0, hardware_jpeg_structure, max_pixels):
/// its ImageInfo, or why not. Host work only, no nvJPEG call: safe from any thread (the
/// mixed stage's host half routes with it; supports() adds nvJPEG's own checks).
Result<ImageInfo> hardware_may_take(std::span<const uint8_t> data, const DecodeRequest& request);

class NvjpegHardwareDecoder {
 public:
  explicit NvjpegHardwareDecoder(int device = 0);
  ~NvjpegHardwareDecoder();
  NvjpegHardwareDecoder(const NvjpegHardwareDecoder&) = delete;
  NvjpegHardwareDecoder& operator=(const NvjpegHardwareDecoder&) = delete;

  /// ok when the engines can be used; else kUnsupported with the reason (kept: no retry).
  Status status();
  /// Whether the engines take this image for `request`: its ImageInfo, or kUnsupported with
  /// the reason the CPU gets it. Host work only (header parsing: ours, hardware_jpeg_structure,
  /// nvJPEG's, whose frame size must equal ours, since the output views are sized from it).
  Result<ImageInfo> supports(std::span<const uint8_t> data, const DecodeRequest& request);
  /// Decodes `items` (RGB, or BGR with ColorFormat::kBGR) in one batched call on `stream`. One
  /// status per item: ok, or kUnsupported (the call failed; decode it on the CPU). Malformed
  /// items (a view that is not dense device memory of the image's size) are kInvalidArgument.
  std::vector<Status> decode(std::span<const HardwareDecodeItem> items, ColorFormat color, cuda::Stream& stream);

  struct Stats {
    uint64_t batches = 0;         ///< nvjpegDecodeBatched calls that succeeded
    uint64_t images = 0;          ///< images they decoded
    uint64_t failed_batches = 0;  ///< calls that failed (their images went to the CPU)
  };
  const Stats& stats() const { return stats_; }

 private:
  struct Impl;
  int device_;
  Stats stats_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hdl
HDL_API_END
