// What the video operators share once a clip's frames are chosen: its frames output. The
// readers (pipeline/readers/video_reader.cc, mixed_video_reader.cc) and the video_decoder
// operator (video_ops.cc) parse the same decode arguments, draw one geometry per clip
// (RandomResizedCrop / Resize / CenterCrop fused into the decode, the same window for every
// frame) and decode the frames through decoders/video_decoder.h into the clip's slot of the
// batch (CPU), or into a device block (NVDEC, a mixed reader's host half).
//
// Internal to pipeline/ (pipeline/decode/: below the operators and the readers, which both use
// it). Thread safety: a ClipOutput is immutable once built
// and shared by the worker threads; a VideoState (and its DeviceDecode) is one thread's;
// VideoCounters are atomics.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "decoders/video_decoder.h"
#include "media/api.h"
#include "media/cuda/stream.h"
#include "pipeline/decode/clip_sampler.h"
#include "pipeline/decode/fused_decode_region.h"
#include "pipeline/decode/video_metadata_cache.h"
#include "pipeline/kernels/cuda/workspace.h"
#include "pipeline/kernels/resize.h"
#include "pipeline/operator.h"
#include "pipeline/schema.h"
#include "pipeline/spec.h"

HDL_API_BEGIN
namespace hdl::ops {

/// One clip's geometry, drawn once per sample (the window, then the filter, from the sample's
/// random stream): the CPU decode and the device decode of a mixed reader use the same one.
struct ClipGeometry {
  CropWindow window;
  FusedDecodeArgs args;  // this sample's (its filter drawn)
  FusedDecodeRegion region;
};

/// A mixed reader's per-thread device decoding: its own stream (so that each worker thread
/// drives its own NVDEC session and kernels), decoder and kernel scratch.
struct DeviceDecode {
  cuda::Stream stream;
  std::unique_ptr<VideoDecoder> decoder;
  std::unique_ptr<kernels::cuda::DeviceWorkspace> workspace;
  StoragePtr scratch;  // a window resized whole before its crop is kept (resize + center crop)
};

/// A worker thread's state for the video operators.
struct VideoState final : OpState {
  explicit VideoState(const VideoDecoderOptions& o) : decoder(o) {}
  VideoDecoder decoder;
  kernels::ResizeWorkspace resize;
  std::unique_ptr<DeviceDecode> device;  // mixed reader, made on first use
};

/// Counters shared by the worker threads.
struct VideoCounters {
  std::atomic<int64_t> probes{0}, clips{0}, frames_decoded{0}, seeks{0}, packets{0}, retries{0};
  std::atomic<int64_t> continued{0};  // clips that went on from the thread's previous clip of the video
  std::atomic<int64_t> frame_buffers{0};  // frame buffers the decoders allocated (the rest reused)
  const VideoMetadataCache* metadata = nullptr;  // the reader's metadata cache, if any
  void add(const VideoDecodeReport& r);
  std::vector<std::pair<std::string, int64_t>> list() const;
};

/// frames_per_clip, step, frame_rate (clip_args()) with `sampler`. Throws ConfigError.
ClipSampling parse_sampling(const NodeSpec& n, ClipSampler sampler);
/// frames_per_clip, step, frame_rate.
std::vector<ArgSchema> clip_args();
/// output_type, apply_rotation, decoder_threads, max_frame_pixels, output, and the fused
/// geometry (random_crop, resize, center_crop, ...).
std::vector<ArgSchema> decode_args();

/// A clip's frames output: its spec, its geometry and its decode (CPU or device).
class ClipOutput {
 public:
  /// Parses decode_args() and frames_per_clip. Throws ConfigError.
  explicit ClipOutput(const NodeSpec& n);

  const VideoDecoderOptions& decoder_options() const { return options_; }
  /// [T, H, W, C] uint8 (FHWC; unknown sizes -1), or an int64 scalar for output "count".
  TensorSpec spec() const;
  bool count_only() const { return count_only_; }
  const FusedDecodeArgs& fused() const { return fused_; }

  /// The clip's geometry, drawn from the sample's random stream; nullopt when nothing is fused
  /// (whole frames, or frame counts).
  Result<std::optional<ClipGeometry>> draw_geometry(SampleIO& io, VideoState& st, const VideoInfo& info) const;

  /// Draws the clip's geometry and decodes it on the CPU into output `output`.
  Status run(SampleIO& io, VideoState& st, const RandomAccessFile& file, const VideoInfo& info,
             const std::vector<int64_t>& frames, int output, VideoCounters& counters) const;

  /// Decodes the clip on the CPU with geometry `g` (from draw_geometry(): nullptr when nothing
  /// is fused).
  Status decode_cpu(SampleIO& io, VideoState& st, const RandomAccessFile& file, const VideoInfo& info,
                    const std::vector<int64_t>& frames, const ClipGeometry* g, int output,
                    VideoCounters& counters) const;

  /// Decodes the clip's pixels on the device (dev's NVDEC session and stream) into a tensor from
  /// `pool` ([T, H, W, C] on the device, written by work queued on dev.stream), with geometry
  /// `g` as decode_cpu: the window resized whole on the device, then its kept part (the crop,
  /// zero padding) copied into place, which is what the CPU's windowed resize computes. Not
  /// for count_only.
  Result<Tensor> decode_device(DeviceDecode& dev, const RandomAccessFile& file, const VideoInfo& info,
                               const std::vector<int64_t>& frames, const ClipGeometry* g, BufferPool& pool,
                               VideoCounters& counters) const;

 private:
  SizeHW frame_size(const VideoInfo& info) const {
    return {options_.apply_rotation ? info.display_height() : info.height,
            options_.apply_rotation ? info.display_width() : info.width};
  }

  VideoDecoderOptions options_;
  RandomResizedCropParams rrc_;
  FusedDecodeArgs fused_;
  int64_t frames_per_clip_;
  bool random_crop_ = false, fused_on_ = false, count_only_ = false;
};

}  // namespace hdl::ops
HDL_API_END
