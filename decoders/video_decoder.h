// Video: metadata (probe) and clip decoding with FFmpeg (libavformat demux, libavcodec decode,
// libswscale colour conversion), reading through the pipeline's RandomAccessFile so that only
// the bytes a clip needs are read, and a file system under test (fault injection) sees every
// read.
//
// Frames are numbered in presentation order: frame i is the i-th smallest presentation
// timestamp among the video stream's packets, as probe() finds them by demuxing the file (no
// decoding). That numbering is what torchvision's VideoClips and `ffmpeg -i F -f rawvideo`
// use, and it is exact for B-frames, open GOPs and variable frame rates. decode() seeks to the
// keyframe at or before the first frame it needs, decodes forward, keeps the frames asked for
// and identifies each decoded frame by its timestamp, so a demuxer that seeks imprecisely
// costs time, never wrong frames.
//
// Pixels: RGB (or gray) uint8, converted by libswscale with the settings of the ffmpeg CLI's
// automatic conversion (the frame's colour matrix and range, bicubic flags), so decoded frames
// equal `ffmpeg -i F -f rawvideo -pix_fmt rgb24 -` byte for byte; rotation metadata (the
// display matrix: 90, 180, 270 degrees) is applied as the CLI's autorotate does.
//
// Bad input (truncated files, corrupt packets, no video stream, zero frames, a frame asked for
// that the file does not have) is a Status naming the problem, never a crash or a hang.
//
// Thread safety: a VideoDecoder is used by one thread at a time (the pipeline keeps one per
// worker thread; it reuses its FFmpeg contexts and buffers across calls); distinct instances
// run concurrently. VideoInfo is a value.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "decoders/decoder.h"
#include "media/api.h"
#include "media/device.h"
#include "media/status.h"
#include "media/tensor.h"

HDL_API_BEGIN
namespace hdl {

class RandomAccessFile;  // media/file_system.h

/// What probe() finds: the first video stream's properties and every frame's timestamp.
struct VideoInfo {
  std::string container;     ///< libavformat's name, e.g. "mov,mp4,m4a,3gp,3g2,mj2"
  std::string codec;         ///< libavcodec's name, e.g. "h264"
  std::string pixel_format;  ///< as decoded, e.g. "yuv420p"
  int stream_index = -1;     ///< the video stream within the container
  int64_t width = 0;         ///< coded frame size, before rotation
  int64_t height = 0;
  int rotation = 0;          ///< clockwise degrees the display matrix asks for: 0, 90, 180, 270
  int64_t time_base_num = 1; ///< timestamps are in units of num/den seconds
  int64_t time_base_den = 1;
  /// Presentation timestamps of every frame, ascending (frame i's is pts[i]).
  std::vector<int64_t> pts;
  /// Indices (into pts) of the frames whose packets are keyframes, ascending; never empty for
  /// a video with frames (the first frame counts as a seek point if the container flags none).
  std::vector<int64_t> keyframes;
  /// True when some packet has no timestamp, so that frames are numbered by decode order and
  /// every decode starts from the beginning of the file (slow but right; rare: raw streams).
  bool sequential = false;
  /// Duration of the last frame in time_base units (the packet's, or the mean frame spacing).
  int64_t last_frame_duration = 0;

  int64_t num_frames() const { return static_cast<int64_t>(pts.size()); }
  /// Frame size as displayed (rotation 90/270 swaps the sides).
  int64_t display_width() const { return rotation % 180 ? height : width; }
  int64_t display_height() const { return rotation % 180 ? width : height; }
  /// Seconds from the first frame's timestamp to frame i's.
  double frame_time(int64_t i) const;
  /// Seconds from the first frame to the end of the last.
  double duration() const;
  /// Frames per second: (num_frames - 1) / (last pts - first pts), or 0 with < 2 frames.
  double average_fps() const;
};

struct VideoDecoderOptions {
  /// Decoder threads per instance: 1 (the pipeline's workers decode clips in parallel; the
  /// default), n, or 0 for libavcodec's choice (frame and slice threading; pays when few long
  /// videos are decoded at once).
  int threads = 1;
  ColorFormat color = ColorFormat::kRGB;
  /// Apply the display matrix's rotation (as `ffmpeg` does by default).
  bool apply_rotation = true;
  /// Refuse videos whose frames have more pixels than this (width * height) before decoding.
  int64_t max_frame_pixels = int64_t(1) << 26;
  /// cpu: libavcodec on this thread, libswscale conversion (the ffmpeg CLI's pixels). cuda:N:
  /// the GPU's hardware video decoder (NVDEC) through FFmpeg's cuda hwaccel, frames converted
  /// to RGB by a CUDA kernel on `cuda_stream` (decoders/kernels/yuv.h: close to the CPU's
  /// pixels, not equal); decode() then hands the sink device views and decode_into() writes
  /// a device view. What NVDEC cannot take (its codec and format limits, probed through
  /// FFmpeg when the stream is opened) fails with kUnsupported "NVDEC ...", and the caller
  /// decodes it on the CPU. One decoder per thread, as on the CPU: each is its own NVDEC
  /// session, so several threads use several of the GPU's decoder engines.
  Device device = Device::cpu();
  /// With a cuda device: the cudaStream_t on which decoded frames are copied out of NVDEC's
  /// surfaces and converted (not owned; it must outlive the decoder). The views the sink gets
  /// are valid for work queued on this stream during the call (later frames reuse them).
  void* cuda_stream = nullptr;
};

/// Counters of one decode() call, for operator statistics.
struct VideoDecodeReport {
  int64_t frames_decoded = 0;  ///< frames that came out of the decoder, kept or not
  int64_t seeks = 0;           ///< seeks made (the first counts)
  int64_t packets = 0;         ///< packets sent to the decoder
  int64_t retries = 0;         ///< clips decoded again without skipping unwanted frames
  bool on_device = false;      ///< decoded by NVDEC (VideoDecoderOptions::device cuda)
  bool continued = false;      ///< went on from the held video's previous call (hold_session())
  /// Frame buffers the CPU codec had to allocate; the others were the decoder's buffers from
  /// earlier videos and calls, reused (not zeroed, no fresh pages).
  int64_t frame_buffers_allocated = 0;
};

class VideoDecoder {
 public:
  explicit VideoDecoder(VideoDecoderOptions options = {});
  ~VideoDecoder();
  VideoDecoder(const VideoDecoder&) = delete;
  VideoDecoder& operator=(const VideoDecoder&) = delete;

  const VideoDecoderOptions& options() const { return options_; }

  /// Reads the container and demuxes every packet of the first video stream (no decoding):
  /// timestamps, keyframes, size, rotation. Errors: kInvalidData (not a video, no video
  /// stream, no frames, corrupt container), kUnsupported (no decoder for the codec), I/O errors.
  Result<VideoInfo> probe(const RandomAccessFile& file);

  /// Called with each kept frame: its position k in `frames` and its pixels, [H, W, C] uint8
  /// in display orientation (H, W = info.display_height(), display_width()), valid during the
  /// call only. Returning an error stops the decode with that error.
  using FrameSink = std::function<Status(int64_t k, const ConstTensorView& frame)>;

  /// Decodes the frames with indices `frames` (ascending; repeats allowed, each occurrence
  /// delivered) of the video `info` describes (from probe() of the same file), calling `sink`
  /// once per element of `frames`, in order. Seeks to the keyframe at or before each needed
  /// frame when that skips decoding. Errors: a frame index outside [0, num_frames), frames
  /// not ascending, a frame the decoder never produces ("truncated or corrupt"), decoder errors.
  Status decode(const RandomAccessFile& file, const VideoInfo& info, std::span<const int64_t> frames,
                const FrameSink& sink, VideoDecodeReport* report = nullptr);

  /// decode() straight into `out`: [T, H, W, C] uint8 with T = frames.size(), H, W the display
  /// size, C = color_channels(options().color); rows may be strided (a slot of a batch). Each
  /// frame is converted straight into its place (no intermediate copy).
  Status decode_into(const RandomAccessFile& file, const VideoInfo& info, std::span<const int64_t> frames,
                     const TensorView& out, VideoDecodeReport* report = nullptr);

  /// Keeps the container and the decoder of `info`'s video open between calls (one video per
  /// decoder; holding another, or nullptr, closes the last one's). A decode() or decode_into()
  /// of this same VideoInfo object whose first frame lies after every frame the previous call
  /// read or gave out (e.g. the next clip of a video, in order) then goes on decoding from
  /// there instead of opening the video and decoding again from the keyframe; otherwise it
  /// starts afresh, as without holding. The frames are the same either way (the references in
  /// between were decoded); the report says `continued`. The file passed to each call must
  /// hold the same bytes as the first (the same video, opened again is fine). The decoder
  /// keeps `info` alive while it holds it.
  /// `upcoming`: frames later calls for this video will ask for (the other clips of a video
  /// decoded together, e.g. video_reader's group_clips). A call keeps the upcoming frames it
  /// decodes, going on past its own last frame through the upcoming ones (CPU decoding, not
  /// intra-only streams; references to the decoded frames, up to about 128 MiB of them), so
  /// that the later clips, overlapping or not, come from the kept frames and go on from where
  /// this call stopped: one pass over the union of the clips, as torchcodec's
  /// clips_at_random_indices. An intra-only stream keeps only the frames a call wants anyway. Each hold_session() replaces the list; after each
  /// call the kept frames it does not name are released.
  void hold_session(std::shared_ptr<const VideoInfo> info, std::vector<int64_t> upcoming = {});

  /// Decodes frames without converting them to RGB (decode-only throughput; validation): the
  /// number of frames decoded is in the report. Same errors as decode().
  Status decode_only(const RandomAccessFile& file, const VideoInfo& info, std::span<const int64_t> frames,
                     VideoDecodeReport* report = nullptr);

  /// With a cuda device: whether this FFmpeg build has an NVDEC path for `info`'s codec and the
  /// device can be opened through FFmpeg (cached per process); kUnsupported naming what is
  /// missing otherwise. NVDEC's own limits (profile, chroma format, bit depth, size) are only
  /// known when a decode opens the stream: decode() then fails with kUnsupported "NVDEC ...".
  /// Always ok for the cpu device.
  Status device_supports(const VideoInfo& info) const;

 private:
  struct Impl;
  VideoDecoderOptions options_;
  std::unique_ptr<Impl> impl_;
};

/// Whether clips can be decoded on CUDA device `index`'s hardware video decoders (NVDEC) here:
/// this FFmpeg build has the cuda hwaccel for H.264 and opens the device (libcuda present, the
/// device usable). Cached per process and device. kUnsupported naming what is missing.
Status video_hardware_status(int index = 0);

/// A RandomAccessFile over bytes in memory (not owned: they must outlive the object), for
/// videos that are already in memory (e.g. the output of file_reader).
std::unique_ptr<RandomAccessFile> memory_file(std::span<const uint8_t> bytes);

}  // namespace hdl
HDL_API_END
