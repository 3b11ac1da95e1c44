// VideoDecoder (decoders/video_decoder.h): the calls, put together from their pieces in
// decoders/detail/, one job each:
//   video_io     FFmpeg reading through a RandomAccessFile, error text, quiet logging
//   video_probe  probe(): streams, rotation, every frame's timestamp and keyframe flag
//   video_seek   ClipSession: seek and decode until the wanted frames are out
//   video_convert  CPU frames -> RGB / BGR / gray views (libswscale as the ffmpeg CLI)
//   video_nvdec  NVDEC through FFmpeg's cuda hwaccel, device frames converted on the GPU
// What stays here: argument checks, the per-decoder state that outlives a call, and which
// frame goes to which slot or sink call.
#include "decoders/video_decoder.h"

extern "C" {
#include <libavcodec/avcodec.h>
}

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "decoders/detail/video_convert.h"
#include "decoders/detail/video_io.h"
#include "decoders/detail/video_nvdec.h"
#include "decoders/detail/video_probe.h"
#include "decoders/detail/video_seek.h"
#include "media/file_system.h"

namespace hdl {

using detail::video::check_frames;
using detail::video::ClipSession;
using detail::video::convert_on_device;
using detail::video::copy_on_device;
using detail::video::cuda_device_status;
using detail::video::device_frame;
using detail::video::distinct;
using detail::video::FrameConverter;
using detail::video::FramePool;
using detail::video::has_cuda_hwaccel;
using detail::video::open_cuda_device;
using detail::video::probe_video;
using detail::video::QuietLog;
using detail::video::Scratch;

// What outlives a call: packet and frame, the libswscale context and conversion buffers, and
// with a cuda device FFmpeg's CUDA device and the device frame decode() hands out.
struct VideoDecoder::Impl {
  // Frame buffers of every CPU codec context this decoder opens, reused across videos and
  // calls (detail/video_frame_pool.h); first, so that it goes last.
  FramePool frame_pool;
  AVPacket* packet = av_packet_alloc();
  AVFrame* frame = av_frame_alloc();
  FrameConverter converter;
  Scratch single;   // decode(): the frame handed to the sink
  AVBufferRef* hw_device = nullptr;  // NVDEC: FFmpeg's CUDA device (on the options' stream)
  StoragePtr device_single;          // decode() on the device: the frame handed to the sink
  // hold_session(): the video whose session stays open between calls, and that session.
  std::shared_ptr<const VideoInfo> held;
  std::unique_ptr<ClipSession> session;
  // hold_session()'s upcoming frames, and those of them the session decoded on its way (CPU
  // frames, references to the decoder's buffers), by frame index.
  std::vector<int64_t> upcoming;
  std::map<int64_t, AVFrame*> kept;
  // False once a session of the held video could not be continued at all (its container's
  // packets cannot be placed): its calls then decode no extra upcoming frames.
  bool keep_pays = true;
  // Kept frames take at most about this many bytes (counted as width * height * 3 each, the
  // most a frame of up to 4:4:4 8-bit or 4:2:0 16-bit takes); a later clip whose frames were
  // passed and not kept starts afresh, as without keeping.
  static constexpr int64_t kMaxKeptBytes = int64_t(128) << 20;
  static size_t max_kept(const VideoInfo& info) {
    return size_t(std::max<int64_t>(1, kMaxKeptBytes / std::max<int64_t>(1, info.width * info.height * 3)));
  }

  void drop_kept() {
    for (auto& [index, f] : kept) av_frame_free(&f);
    kept.clear();
  }
  ~Impl() {
    drop_kept();
    session.reset();  // before the packet, frame and device it uses
    av_buffer_unref(&hw_device);
    av_frame_free(&frame);
    av_packet_free(&packet);
  }

  // FFmpeg's CUDA device for a cuda decoder (opened on first use), nullptr for the CPU.
  Result<AVBufferRef*> hardware(const VideoDecoderOptions& options) {
    if (options.device.is_cpu()) return static_cast<AVBufferRef*>(nullptr);
    if (!hw_device) {
      HDL_RETURN_IF_ERROR(cuda_device_status(options.device.index));
      HDL_ASSIGN_OR_RETURN(hw_device, open_cuda_device(options.device.index, options.cuda_stream));
    }
    return hw_device;
  }

  // decode_frames(), with the frame buffers it allocated counted into the report.
  Status decode_to(const RandomAccessFile& file, const VideoInfo& info, const VideoDecoderOptions& options,
                   std::span<const int64_t> frames, const std::function<TensorView(size_t k)>& slot,
                   const std::function<Status(const TensorView&, size_t k)>& delivered, VideoDecodeReport* report) {
    const int64_t allocated = frame_pool.allocations();
    VideoDecodeReport local;
    VideoDecodeReport& rep = report ? *report : local;
    Status st = decode_frames(file, info, options, frames, slot, delivered, rep);
    rep.frame_buffers_allocated = frame_pool.allocations() - allocated;
    return st;
  }

  // Decodes the distinct frames of `frames`, converting each into slot(k) for its first position
  // k in `frames`, then calls delivered(slot, k).
  Status decode_frames(const RandomAccessFile& file, const VideoInfo& info, const VideoDecoderOptions& options,
                       std::span<const int64_t> frames, const std::function<TensorView(size_t k)>& slot,
                       const std::function<Status(const TensorView&, size_t k)>& delivered, VideoDecodeReport& rep) {
    std::vector<int64_t> wanted;
    std::vector<size_t> first;
    distinct(frames, &wanted, &first);
    rep = {};
    if (wanted.empty()) return Status::ok();
    QuietLog quiet;
    HDL_ASSIGN_OR_RETURN(AVBufferRef* const hw, hardware(options));
    const int rotation = options.apply_rotation ? info.rotation : 0;
    const int w = int(info.width), h = int(info.height);
    // The retry below decodes only the frames not handed out yet: run() numbers them from 0,
    // `done` of them came before.
    // Each distinct frame is converted into slot(first[i]) and handed on; the frames the
    // session decodes come from `plan` (the frames asked for that no earlier call kept, and
    // upcoming frames it passes on its way, which it keeps instead).
    bool sink_failed = false;
    auto hand_out = [&](size_t i, const AVFrame* f) -> Status {
      const TensorView out = slot(first[i]);
      if (f->format == AV_PIX_FMT_CUDA) {
        HDL_RETURN_IF_ERROR(convert_on_device(f, info, options, rotation, out));
      } else {
        HDL_RETURN_IF_ERROR(converter.convert(f, w, h, options.color, rotation, out));
      }
      Status st = delivered(out, first[i]);
      sink_failed = !st.is_ok();
      return st;
    };
    // The held video's session, continued when the frames not kept from earlier calls lie
    // ahead of where it stopped; else a fresh one (kept for the next call when the video is
    // held).
    const bool hold = held.get() == &info;
    bool continued = false;
    size_t from_kept = 0;  // wanted[0, from_kept) come from `kept`
    if (session && hold && &session->info() == &info) {
      session->rebind(file, rep);
      while (from_kept < wanted.size() && kept.count(wanted[from_kept])) ++from_kept;
      const std::vector<int64_t> rest(wanted.begin() + std::ptrdiff_t(from_kept), wanted.end());
      continued = rest.empty() || session->can_continue(rest);
    }
    if (!continued) {
      drop_kept();
      from_kept = 0;
      session = std::make_unique<ClipSession>(file, info, options, packet, frame, rep, hw, &frame_pool);
    }
    rep.continued = continued;
    for (size_t i = 0; i < from_kept; ++i) HDL_RETURN_IF_ERROR(hand_out(i, kept[wanted[i]]));
    std::vector<int64_t> plan(wanted.begin() + std::ptrdiff_t(from_kept), wanted.end());
    std::vector<size_t> plan_slot;  // index into wanted, or kKeep
    constexpr size_t kKeep = SIZE_MAX;
    for (size_t i = from_kept; i < wanted.size(); ++i) plan_slot.push_back(i);
    // Upcoming frames the session passes are decoded (not skipped) and kept; in an intra-only
    // stream a later clip's frames cost the same decoded on their own, so none are added.
    const bool keeping = hold && !upcoming.empty() && options.device.is_cpu() && keep_pays;
    const bool intra_only = info.keyframes.size() == info.pts.size();
    const size_t max_keep = max_kept(info);
    if (keeping && !plan.empty() && !intra_only) {
      // The upcoming frames from this clip's first on, in order, while they fit: the session
      // decodes on through them (one pass over the clips' union, the demuxer's read-ahead
      // included), so that the next clips come from `kept` and where it left off.
      std::vector<int64_t> extra;
      size_t room = max_keep - std::min(max_keep, kept.size());
      for (int64_t f : upcoming) {
        if (f < plan.front() || kept.count(f)) continue;
        if (room == 0) break;
        --room;
        if (!std::binary_search(plan.begin(), plan.end(), f)) extra.push_back(f);
      }
      if (!extra.empty()) {
        std::vector<int64_t> merged;
        std::vector<size_t> merged_slot;
        size_t a = 0, b = 0;
        while (a < plan.size() || b < extra.size()) {
          if (b == extra.size() || (a < plan.size() && plan[a] < extra[b])) {
            merged.push_back(plan[a]), merged_slot.push_back(plan_slot[a]), ++a;
          } else {
            merged.push_back(extra[b]), merged_slot.push_back(kKeep), ++b;
          }
        }
        plan = std::move(merged), plan_slot = std::move(merged_slot);
      }
    }
    // The retry below decodes only the frames not handed out yet: run() numbers them from 0,
    // `done` of them came before.
    size_t done = 0;
    auto convert = [&](size_t u, const AVFrame* f) -> Status {
      u += done;
      if (plan_slot[u] != kKeep) HDL_RETURN_IF_ERROR(hand_out(plan_slot[u], f));
      if (!keeping || !std::binary_search(upcoming.begin(), upcoming.end(), plan[u])) return Status::ok();
      if (kept.size() < max_keep && !kept.count(plan[u])) {
        AVFrame* copy = av_frame_clone(f);
        if (!copy) return Status::resource_exhausted("out of memory");
        kept.emplace(plan[u], copy);
      }
      return Status::ok();
    };
    size_t handed_out = 0;  // plan entries done by the first run
    auto counting = [&](size_t u, const AVFrame* f) -> Status {
      HDL_RETURN_IF_ERROR(convert(u, f));
      handed_out = u + 1;
      return Status::ok();
    };
    ClipSession& clip = *session;
    Status st = plan.empty() ? Status::ok() : run_clip(clip, plan, convert, counting, continued);
    if (!st.is_ok() && st.code() == StatusCode::kInvalidData && !sink_failed && clip_retry_) {
      ++rep.retries;
      // Each frame goes to the sink once: the retry wants the frames after those handed out.
      done = handed_out;
      const std::vector<int64_t> rest(plan.begin() + std::ptrdiff_t(done), plan.end());
      st = clip.run(rest, convert);
    }
    if (st.is_ok() && hold && !plan.empty() && !clip.continuable()) keep_pays = false;
    // What later calls may still want stays kept.
    for (auto it = kept.begin(); it != kept.end();) {
      if (st.is_ok() && hold && std::binary_search(upcoming.begin(), upcoming.end(), it->first)) {
        ++it;
      } else {
        av_frame_free(&it->second);
        it = kept.erase(it);
      }
    }
    if (!hold || !st.is_ok()) session.reset();
    return st;
  }

  bool clip_retry_ = false;  // run_clip(): the first run skipped frames and may be retried in full

  // One run of `clip`: every frame decoded when skipping is not possible (or every frame is
  // wanted), else unwanted non-reference frames skipped (clip_retry_ set: should a wanted
  // frame still go missing, a packet whose timestamp belongs to another frame, the caller
  // decodes the clip again in full).
  template <typename Convert, typename Counting>
  Status run_clip(ClipSession& clip, const std::vector<int64_t>& wanted, const Convert& convert,
                  const Counting& counting, bool continued) {
    clip_retry_ = false;
    if (!clip.skip_possible() || wanted.size() == size_t(clip.info().num_frames()))
      return clip.run(wanted, convert, false, continued);
    clip_retry_ = true;
    return clip.run(wanted, counting, /*skip_unwanted=*/true, continued);
  }
};

VideoDecoder::VideoDecoder(VideoDecoderOptions options) : options_(options), impl_(std::make_unique<Impl>()) {
  if (options_.threads < 0) throw std::invalid_argument("VideoDecoderOptions::threads must be >= 0");
  if (!options_.device.is_cpu() && (options_.device.index < 0 || options_.device.index >= 64))
    throw std::invalid_argument("VideoDecoderOptions::device: CUDA device index out of range");
  if (options_.max_frame_pixels <= 0) throw std::invalid_argument("VideoDecoderOptions::max_frame_pixels must be > 0");
  if (!impl_->packet || !impl_->frame) throw std::bad_alloc();
}

VideoDecoder::~VideoDecoder() = default;

void VideoDecoder::hold_session(std::shared_ptr<const VideoInfo> info, std::vector<int64_t> upcoming) {
  std::sort(upcoming.begin(), upcoming.end());
  upcoming.erase(std::unique(upcoming.begin(), upcoming.end()), upcoming.end());
  impl_->upcoming = std::move(upcoming);
  if (impl_->held == info) return;
  impl_->drop_kept();
  impl_->keep_pays = true;
  impl_->session.reset();  // it refers to the info held until now
  impl_->held = std::move(info);
}

Result<VideoInfo> VideoDecoder::probe(const RandomAccessFile& file) {
  impl_->drop_kept();
  impl_->session.reset();  // the held session's packet and frame are the ones probing uses
  return probe_video(file, options_.max_frame_pixels, impl_->packet, impl_->frame);
}

Status VideoDecoder::decode(const RandomAccessFile& file, const VideoInfo& info, std::span<const int64_t> frames,
                            const FrameSink& sink, VideoDecodeReport* report) {
  HDL_RETURN_IF_ERROR(check_frames(info, frames));
  const int64_t c = color_channels(options_.color);
  const bool rotate = options_.apply_rotation && info.rotation != 0;
  const Shape shape{rotate ? info.display_height() : info.height, rotate ? info.display_width() : info.width, c};
  TensorView view;
  if (options_.device.is_cpu()) {
    uint8_t* pixels = impl_->single.get(size_t(shape.num_elements()));
    if (!pixels) return Status::resource_exhausted("out of memory");
    view = TensorView(pixels, shape, DType::kU8, Layout::kHWC);
  } else {
    HDL_RETURN_IF_ERROR(device_supports(info));
    HDL_ASSIGN_OR_RETURN(view, device_frame(impl_->device_single, options_, shape));
  }
  // Each distinct frame is converted into `view`, then handed to the sink once per occurrence.
  auto deliver = [&](const TensorView& out, size_t k) -> Status {
    for (size_t j = k; j < frames.size() && frames[j] == frames[k]; ++j) HDL_RETURN_IF_ERROR(sink(int64_t(j), out));
    return Status::ok();
  };
  return impl_->decode_to(file, info, options_, frames, [&](size_t) { return view; }, deliver, report);
}

Status VideoDecoder::decode_into(const RandomAccessFile& file, const VideoInfo& info, std::span<const int64_t> frames,
                                 const TensorView& out, VideoDecodeReport* report) {
  HDL_RETURN_IF_ERROR(check_frames(info, frames));
  const int64_t c = color_channels(options_.color);
  const bool rotate = options_.apply_rotation && info.rotation != 0;
  const Shape want{int64_t(frames.size()), rotate ? info.display_height() : info.height,
                   rotate ? info.display_width() : info.width, c};
  if (out.shape != want || out.dtype != DType::kU8 || out.device != options_.device || out.strides[3] != 1)
    return Status::invalid_argument("decode_into: the output must be a uint8 [T, H, W, C] view on " +
                                    options_.device.to_string() + " of shape " + want.to_string() +
                                    " with unit channel stride, not " + out.device.to_string() + " " + out.shape.to_string());
  if (!options_.device.is_cpu()) HDL_RETURN_IF_ERROR(device_supports(info));
  auto slot = [&](size_t k) { return out.select(0, int64_t(k), Layout::kHWC); };
  // Repeats of a frame are copies of its first slot.
  auto deliver = [&](const TensorView& first, size_t k) -> Status {
    for (size_t j = k + 1; j < frames.size() && frames[j] == frames[k]; ++j) {
      if (options_.device.is_cpu()) copy(first, slot(j));
      else HDL_RETURN_IF_ERROR(copy_on_device(first, slot(j), options_));
    }
    return Status::ok();
  };
  return impl_->decode_to(file, info, options_, frames, slot, deliver, report);
}

Status VideoDecoder::decode_only(const RandomAccessFile& file, const VideoInfo& info, std::span<const int64_t> frames,
                                 VideoDecodeReport* report) {
  HDL_RETURN_IF_ERROR(check_frames(info, frames));
  std::vector<int64_t> wanted;
  std::vector<size_t> first;
  distinct(frames, &wanted, &first);
  VideoDecodeReport local;
  VideoDecodeReport& rep = report ? *report : local;
  rep = {};
  if (wanted.empty()) return Status::ok();
  QuietLog quiet;
  if (!options_.device.is_cpu()) HDL_RETURN_IF_ERROR(device_supports(info));
  HDL_ASSIGN_OR_RETURN(AVBufferRef* const hw, impl_->hardware(options_));
  impl_->drop_kept();
  impl_->session.reset();  // the held session's packet and frame are the ones this uses
  const int64_t allocated = impl_->frame_pool.allocations();
  ClipSession clip(file, info, options_, impl_->packet, impl_->frame, rep, hw, &impl_->frame_pool);
  Status st = clip.run(wanted, [](size_t, const AVFrame*) { return Status::ok(); });
  rep.frame_buffers_allocated = impl_->frame_pool.allocations() - allocated;
  return st;
}

Status video_hardware_status(int index) {
  const AVCodec* h264 = avcodec_find_decoder(AV_CODEC_ID_H264);
  if (!h264 || !has_cuda_hwaccel(h264)) return Status::unsupported("NVDEC: this FFmpeg build has no cuda hwaccel");
  return cuda_device_status(index);
}

Status VideoDecoder::device_supports(const VideoInfo& info) const {
  if (options_.device.is_cpu()) return Status::ok();
  // info.codec is the codec descriptor's name (probe() took it from avcodec_get_name).
  const AVCodecDescriptor* descriptor = avcodec_descriptor_get_by_name(info.codec.c_str());
  const AVCodec* codec = descriptor ? avcodec_find_decoder(descriptor->id) : nullptr;
  if (!codec || !has_cuda_hwaccel(codec))
    return Status::unsupported("NVDEC: this FFmpeg build has no cuda hwaccel for " + info.codec);
  // Measured on an H200 (docs/VIDEO.md, "NVDEC"; 2026-11-27): FFmpeg 5.1's cuda hwaccel gave frames of
  // the corpus's 4:2:2 MJPEG that differ from libavcodec's by up to 255 levels (45% of the values),
  // and its output crashed compute-sanitizer's racecheck. MJPEG stays on CPU threads (cheap there).
  if (codec->id == AV_CODEC_ID_MJPEG)
    return Status::unsupported("NVDEC: MJPEG is decoded on CPU threads (NVDEC's frames differed from libavcodec's)");
  return cuda_device_status(options_.device.index);
}

}  // namespace hdl
