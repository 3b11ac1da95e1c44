#include "decoders/detail/video_seek.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "decoders/detail/video_probe.h"

namespace hdl::detail::video {
namespace {

constexpr int kMaxBadSeeks = 3;  // then decode forward from the start, seeking no more
// Frames before a keyframe that a seek aims at when an exact seek missed (or in an MPEG stream,
// where it would land on the keyframe's own PES packet: its dts is up to the reorder depth
// below its pts, and the frame landed on loses its timestamps).
constexpr int64_t kSeekBack = 6;
constexpr int64_t kMinSkip = 2;   // frames a seek must skip to be worth making
constexpr int64_t kUnknownRead = INT64_MAX;  // read_past_ after a packet whose frame is unknown

}  // namespace

Status check_frames(const VideoInfo& info, std::span<const int64_t> frames) {
  if (info.stream_index < 0 || info.pts.empty() || info.keyframes.empty() || info.width <= 0 || info.height <= 0)
    return Status::invalid_argument("the VideoInfo does not come from probe() of a video with frames");
  for (size_t k = 0; k < frames.size(); ++k) {
    if (frames[k] < 0 || frames[k] >= info.num_frames())
      return Status::invalid_argument("frame index " + std::to_string(frames[k]) + " is out of range: the video has " +
                                      std::to_string(info.num_frames()) + " frames");
    if (k > 0 && frames[k] < frames[k - 1])
      return Status::invalid_argument("frame indices must be ascending: " + std::to_string(frames[k]) + " after " +
                                      std::to_string(frames[k - 1]));
  }
  return Status::ok();
}

void distinct(std::span<const int64_t> frames, std::vector<int64_t>* wanted, std::vector<size_t>* first) {
  wanted->clear();
  first->clear();
  for (size_t k = 0; k < frames.size(); ++k) {
    if (k > 0 && frames[k] == frames[k - 1]) continue;
    wanted->push_back(frames[k]);
    first->push_back(k);
  }
}

ClipSession::ClipSession(const RandomAccessFile& file, const VideoInfo& info, const VideoDecoderOptions& options,
                         AVPacket* packet, AVFrame* frame, VideoDecodeReport& report, AVBufferRef* hw_device,
                         FramePool* frame_pool)
    : file_(&file), info_(info), options_(options), packet_(packet), frame_(frame), report_(&report),
      hw_device_(hw_device), frame_pool_(frame_pool) {
  report_->on_device = hw_device != nullptr;
}

bool ClipSession::can_continue(const std::vector<int64_t>& wanted) const {
  return ok_ && input_ && codec_ && !draining_ && !info_.sequential && !wanted.empty() &&
         read_past_ != kUnknownRead && wanted.front() > read_past_ && wanted.front() > last_;
}

bool ClipSession::continuable() const {
  return ok_ && input_ && codec_ && !draining_ && !info_.sequential && read_past_ != kUnknownRead;
}

void ClipSession::rebind(const RandomAccessFile& file, VideoDecodeReport& report) {
  file_ = &file;
  if (input_) input_->rebind(file);
  report_ = &report;
  report_->on_device = hw_device_ != nullptr;
}

Status ClipSession::run(const std::vector<int64_t>& wanted, const Deliver& deliver, bool skip_unwanted,
                        bool continued) {
  const bool go_on = continued && can_continue(wanted);
  ok_ = false;
  wanted_ = &wanted;
  skip_unwanted_ = skip_unwanted;
  skip_intra_ = skip_unwanted && info_.keyframes.size() == info_.pts.size();
  if (!go_on) HDL_RETURN_IF_ERROR(open());
  // Each step receives a frame, reads a packet or starts draining; a file of n packets needs
  // about n steps per pass, and there is a pass per seek (bounded) plus one from the start.
  const int64_t max_steps = 4 * (info_.num_frames() + 64) * (kMaxBadSeeks + 2 + int64_t(wanted.size()));
  size_t next = 0;
  int64_t aimed = -1;
  for (int64_t steps = 0; next < wanted.size(); ++steps) {
    const int64_t target = wanted[next];
    if (target != aimed) {
      HDL_RETURN_IF_ERROR(maybe_seek(target));
      aimed = target;
    }
    if (steps > max_steps) return missing(target, "decoding made no progress");
    int err = avcodec_receive_frame(codec_, frame_);
    if (err == AVERROR(EAGAIN)) {
      if (draining_) return missing(target, "the decoder stalled");
      HDL_RETURN_IF_ERROR(feed());
      continue;
    }
    if (err == AVERROR_EOF) {
      if (seeked_ && !run_started_) {  // the seek went past everything this run was for
        HDL_RETURN_IF_ERROR(reseek());
        continue;
      }
      return missing(target, "the stream ended before it");
    }
    if (err < 0) return codec_error(err);
    ++report_->frames_decoded;
    Status s = on_frame(identify(), target, next, deliver);
    av_frame_unref(frame_);
    HDL_RETURN_IF_ERROR(s);
  }
  if (!input_->io_error().is_ok()) return input_->io_error();
  ok_ = true;
  return Status::ok();
}

Status ClipSession::open() {
  close_codec();
  input_ = std::make_unique<Input>();
  HDL_RETURN_IF_ERROR(input_->open(*file_, find_demuxer(info_.container), "the video cannot be opened"));
  AVFormatContext* fmt = input_->fmt();
  const int index = info_.stream_index;
  // Containers that declare their streams in a header need no stream probing (which decodes
  // several frames); those that do not (MPEG-PS) get it, as probe() did.
  const bool known = !(fmt->ctx_flags & AVFMTCTX_NOHEADER) && index < int(fmt->nb_streams) &&
                     fmt->streams[index]->codecpar->codec_id != AV_CODEC_ID_NONE &&
                     fmt->streams[index]->codecpar->width > 0;
  if (!known) HDL_RETURN_IF_ERROR(find_stream_info(*input_, options_.max_frame_pixels));
  if (index >= int(fmt->nb_streams) || fmt->streams[index]->codecpar->codec_type != AVMEDIA_TYPE_VIDEO)
    return Status::invalid_data("stream " + std::to_string(index) + " is not a video stream: the file is not the one probed");
  discard_all_but(fmt, index);
  stream_ = fmt->streams[index];
  const AVCodec* codec = avcodec_find_decoder(stream_->codecpar->codec_id);
  if (!codec) return Status::unsupported("no decoder for video codec " + info_.codec + " in this FFmpeg build");
  codec_ = avcodec_alloc_context3(codec);
  if (!codec_) return Status::resource_exhausted("out of memory");
  if (int err = avcodec_parameters_to_context(codec_, stream_->codecpar); err < 0) return codec_error(err);
  codec_->pkt_timebase = stream_->time_base;
  codec_->thread_count = threads();
  codec_->thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE;
  codec_->max_pixels = options_.max_frame_pixels;
  codec_->log_level_offset = 100;  // levels 8..56 -> 108..156: below any log level
  if (hw_device_) {
    codec_->hw_device_ctx = av_buffer_ref(hw_device_);
    if (!codec_->hw_device_ctx) return Status::resource_exhausted("out of memory");
    codec_->get_format = pick_cuda_format;
    codec_->opaque = &hw_format_;
  } else if (frame_pool_) {
    frame_pool_->attach(codec_);
  }
  if (int err = avcodec_open2(codec_, codec, nullptr); err < 0) {
    if (hw_format_.refused) return nvdec_refused();
    if (err == AVERROR(ENOMEM)) return Status::resource_exhausted("out of memory");
    return Status::unsupported("cannot open the FFmpeg " + info_.codec + " decoder: " + av_error_text(err));
  }
  if (input_->mpeg_stream()) seek_back_ = kSeekBack;
  run_key_ = 0;
  run_key_frame_ = info_.keyframes.front();
  seeked_ = false;
  run_started_ = false;
  last_ = -1;
  draining_ = false;
  pending_ = false;
  output_count_ = 0;
  read_past_ = -1;
  return Status::ok();
}

void ClipSession::close_codec() {
  avcodec_free_context(&codec_);
  av_packet_unref(packet_);
  input_.reset();
}

Status ClipSession::maybe_seek(int64_t target) {
  if (info_.sequential || no_seeks_) return Status::ok();
  const auto& keys = info_.keyframes;
  const int64_t key = std::upper_bound(keys.begin(), keys.end(), target) - keys.begin() - 1;
  // Seek when it skips at least kMinSkip frames that decoding on would pass through.
  if (key < 0 || keys[key] <= run_key_frame_ || keys[key] < last_ + 1 + kMinSkip) return Status::ok();
  return seek(key);
}

Status ClipSession::seek(int64_t key) {
  ++report_->seeks;
  const int64_t frame = info_.keyframes[size_t(key)];
  const int64_t ts = info_.pts[size_t(std::max<int64_t>(0, frame - seek_back_))];
  if (int err = av_seek_frame(input_->fmt(), stream_->index, ts, AVSEEK_FLAG_BACKWARD); err < 0) {
    if (!input_->io_error().is_ok()) return input_->io_error();
    // The container cannot seek: go on decoding forward (right, only slower).
    no_seeks_ = true;
    return Status::ok();
  }
  avcodec_flush_buffers(codec_);
  av_packet_unref(packet_);
  pending_ = false;
  draining_ = false;
  run_key_ = key;
  run_key_frame_ = frame;
  seeked_ = true;
  run_started_ = false;
  last_ = frame - 1;
  return Status::ok();
}

Status ClipSession::reseek() {
  if (++bad_seeks_ <= kMaxBadSeeks) {
    if (seek_back_ == 0) {
      seek_back_ = kSeekBack;
      return seek(run_key_);
    }
    if (run_key_ > 0) return seek(run_key_ - 1);
  }
  no_seeks_ = true;
  return open();
}

Status ClipSession::feed() {
  if (!pending_) {
    for (int again = 0;;) {
      int err = av_read_frame(input_->fmt(), packet_);
      if (err == AVERROR(EAGAIN) && ++again < 1000) continue;
      if (err < 0) {
        if (!input_->io_error().is_ok()) return input_->io_error();
        if (err != AVERROR_EOF) read_error_ = err;
        draining_ = true;
        err = avcodec_send_packet(codec_, nullptr);
        return err < 0 && err != AVERROR_EOF ? codec_error(err) : Status::ok();
      }
      // Empty packets (AVI's dropped frames) carry no frame, and an empty send would drain.
      // In an intra-only stream (every frame a keyframe: MJPEG, ...) no frame needs another,
      // so an unwanted one is not even sent.
      if (packet_->stream_index == stream_->index) note_read();
      if (packet_->stream_index == stream_->index && packet_->size > 0 && !(skip_intra_ && !packet_wanted())) break;
      av_packet_unref(packet_);
    }
  }
  if (skip_unwanted_ && !pending_) codec_->skip_frame = packet_wanted() ? AVDISCARD_DEFAULT : AVDISCARD_NONREF;
  int err = avcodec_send_packet(codec_, packet_);
  pending_ = err == AVERROR(EAGAIN);  // receive first, then send it again
  if (pending_) return Status::ok();
  av_packet_unref(packet_);
  ++report_->packets;
  return err < 0 ? codec_error(err) : Status::ok();
}

void ClipSession::note_read() {
  if (read_past_ == kUnknownRead) return;
  const auto it = packet_->pts == AV_NOPTS_VALUE ? info_.pts.end()
                                                  : std::lower_bound(info_.pts.begin(), info_.pts.end(), packet_->pts);
  if (it == info_.pts.end() || *it != packet_->pts) {
    read_past_ = kUnknownRead;  // a frame we cannot place: no later run continues this one
    return;
  }
  read_past_ = std::max<int64_t>(read_past_, it - info_.pts.begin());
}

bool ClipSession::packet_wanted() const {
  if (packet_->pts == AV_NOPTS_VALUE) return true;
  const auto it = std::lower_bound(info_.pts.begin(), info_.pts.end(), packet_->pts);
  if (it == info_.pts.end() || *it != packet_->pts) return true;
  return std::binary_search(wanted_->begin(), wanted_->end(), int64_t(it - info_.pts.begin()));
}

bool ClipSession::mpeg_container() const {
  const std::string& c = info_.container;
  return c == "mpeg" || c == "mpegts" || c == "mpegvideo" || c == "h264" || c == "hevc";
}

int64_t ClipSession::identify() {
  if (info_.sequential) return output_count_++;
  int64_t ts = frame_->pts;
  if (ts == AV_NOPTS_VALUE && !seeked_) ts = frame_->best_effort_timestamp;
  if (ts == AV_NOPTS_VALUE) return -1;
  auto it = std::lower_bound(info_.pts.begin(), info_.pts.end(), ts);
  return it != info_.pts.end() && *it == ts ? it - info_.pts.begin() : -1;
}

Status ClipSession::on_frame(int64_t index, int64_t target, size_t& next, const Deliver& deliver) {
  if (seeked_) {
    // After a seek the demuxer's first timestamps can be wrong, and frames decoded without
    // their references are damaged. A run is trusted only if its first frame at or after the
    // keyframe sought is a keyframe to both the decoder and probe(), no later than the
    // target, and every frame after it is undamaged, identified, and later than the last.
    const bool damaged = frame_->decode_error_flags || (frame_->flags & AV_FRAME_FLAG_CORRUPT);
    if (!run_started_) {
      if (index < run_key_frame_) return Status::ok();  // before the keyframe: not wanted
      run_started_ = true;
      const bool key = frame_->key_frame || frame_->pict_type == AV_PICTURE_TYPE_I;
      if (index > target || !key || damaged ||
          !std::binary_search(info_.keyframes.begin(), info_.keyframes.end(), index))
        return reseek();
    } else if (index <= last_ || damaged) {
      return reseek();
    }
  }
  if (index < 0) return Status::ok();
  if (index < target) {
    last_ = std::max(last_, index);
    return Status::ok();
  }
  if (index > target)
    return missing(target, "the decoder went from frame " + std::to_string(last_) + " to frame " + std::to_string(index));
  last_ = index;
  HDL_RETURN_IF_ERROR(deliver(next, frame_));
  ++next;
  return Status::ok();
}

Status ClipSession::missing(int64_t target, const std::string& why) const {
  if (input_ && !input_->io_error().is_ok()) return input_->io_error();
  std::string msg = "frame " + std::to_string(target) + " of " + std::to_string(info_.num_frames()) +
                    " was never decoded (" + why;
  if (read_error_ < 0) msg += "; reading stopped at: " + av_error_text(read_error_);
  return Status::invalid_data(msg + "): truncated or corrupt video");
}

Status ClipSession::nvdec_refused() const {
  return Status::unsupported("NVDEC cannot decode this " + info_.codec + " stream (" + info_.pixel_format + ", " +
                             std::to_string(info_.width) + "x" + std::to_string(info_.height) +
                             "): FFmpeg's cuda hwaccel refused it");
}

Status ClipSession::codec_error(int err) const {
  if (input_ && !input_->io_error().is_ok()) return input_->io_error();
  if (hw_format_.refused) return nvdec_refused();
  if (err == AVERROR(ENOMEM)) return Status::resource_exhausted("out of memory in the " + info_.codec + " decoder");
  if (err == AVERROR_PATCHWELCOME || err == AVERROR(ENOSYS))
    return Status::unsupported(info_.codec + " decoder: " + av_error_text(err));
  return Status::invalid_data(info_.codec + " decoder: " + av_error_text(err));
}

}  // namespace hdl::detail::video
