// Seeking and decoding the frames of one clip (private to decoders/).
//
// One job: bringing the wanted frames out of libavcodec. One run(): open the container over
// the RandomAccessFile, open a decoder, then for each frame asked for (ascending) seek to the
// keyframe at or before it when that skips decoding, feed packets, and identify each frame the
// decoder returns by its timestamp. What follows a seek is checked before it is trusted (the
// first frame at or after the keyframe sought is a keyframe no later than the target, the
// frames after it are undamaged and ascending); a seek that fails the checks is retried from a
// few frames earlier, then from earlier keyframes, then from the start of the file with no more
// seeks: an inexact index or a demuxer that mislabels the packets after a seek costs time,
// never a wrong frame. What happens to a delivered frame (conversion, on the CPU or the device)
// is the caller's.
//
// Thread safety: a ClipSession is used by one thread, for one call.
#pragma once

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
}

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "decoders/detail/video_frame_pool.h"
#include "decoders/detail/video_io.h"
#include "decoders/detail/video_nvdec.h"
#include "decoders/video_decoder.h"
#include "media/file_system.h"
#include "media/status.h"

namespace hdl::detail::video {

/// kInvalidArgument unless `info` comes from probe() of a video with frames and `frames` are
/// ascending indices of its frames.
Status check_frames(const VideoInfo& info, std::span<const int64_t> frames);

/// `frames` without repeats, and for each distinct frame the first position it has in `frames`.
void distinct(std::span<const int64_t> frames, std::vector<int64_t>* wanted, std::vector<size_t>* first);

/// The session of one clip: the container and decoder, where decoding stands, and the loop
/// that brings the wanted frames out of the decoder (file comment). A later clip of the same
/// video may continue it (continue_with()) instead of opening the video again.
class ClipSession {
 public:
  // Called with each wanted frame as it comes out: its position in `wanted` and the frame.
  using Deliver = std::function<Status(size_t u, const AVFrame* frame)>;

  /// `hw_device`: FFmpeg's CUDA device for NVDEC decoding (not owned), or nullptr for the CPU.
  /// `frame_pool` (not owned, outlives the session; CPU decoding only): where the codec takes
  /// its frame buffers; nullptr: libavcodec's own pool.
  ClipSession(const RandomAccessFile& file, const VideoInfo& info, const VideoDecoderOptions& options,
              AVPacket* packet, AVFrame* frame, VideoDecodeReport& report, AVBufferRef* hw_device = nullptr,
              FramePool* frame_pool = nullptr);
  ~ClipSession() { close_codec(); }

  /// Whether run(wanted, ..., /*continued=*/true) may decode `wanted` by going on from where
  /// the last run stopped: it succeeded, the end of the file was not reached, and every frame
  /// of `wanted` lies after every frame whose packet the demuxer has already read (so no
  /// packet it needs was skipped or passed) and after every frame the decoder gave out.
  /// Decoding on from there gives the frames a fresh run gives (the references in between
  /// were all decoded), and maybe_seek() still jumps ahead where a keyframe saves decoding.
  bool can_continue(const std::vector<int64_t>& wanted) const;
  /// Whether a later run could continue this one at all (can_continue() for frames far
  /// enough ahead): false after a packet whose frame cannot be placed, or for a video read in
  /// sequence.
  bool continuable() const;
  const VideoInfo& info() const { return info_; }
  /// The next run reads through `file` (the same video, opened again) and counts into `report`.
  void rebind(const RandomAccessFile& file, VideoDecodeReport& report);
  ClipSession(const ClipSession&) = delete;
  ClipSession& operator=(const ClipSession&) = delete;

  /// Decodes until every frame of `wanted` (ascending, distinct) has been delivered. With
  /// `skip_unwanted`, frames no other frame refers to and that are not wanted are not decoded
  /// at all (libavcodec's AVDISCARD_NONREF, set per packet): B-frames before and between the
  /// frames of a clip cost only their parsing, and in an intra-only stream unwanted frames are
  /// not even sent to the decoder. A packet is judged by its timestamp, so a
  /// container whose timestamps cannot be trusted must not use it (see skip_possible()).
  /// `continued`: go on from where the last run stopped (can_continue() must hold) instead of
  /// opening the container and the decoder again.
  Status run(const std::vector<int64_t>& wanted, const Deliver& deliver, bool skip_unwanted = false,
             bool continued = false);

 private:
  // (Re)opens the container and the decoder, positioned at the start of the file.
  Status open();

  void close_codec();

  // Seeks to the keyframe at or before `target` when that skips decoding.
  Status maybe_seek(int64_t target);

  Status seek(int64_t key);

  // A seek landed in the wrong place. Retry the same keyframe from a few frames before it (a
  // demuxer that bisects the file on decode timestamps, as MPEG-PS's does, lands on the packet
  // after a keyframe whose dts is below its pts), then earlier keyframes; then give up seeking
  // and start again from the beginning of the file.
  Status reseek();

  // Reads the next packet of the stream and sends it to the decoder; at the end of the file (or
  // at a read error, as the ffmpeg CLI does) starts draining the decoder.
  Status feed();

  // Records the frame of the packet just read in read_past_.
  void note_read();

  // Whether the packet in packet_ holds a wanted frame (or one it cannot tell).
  bool packet_wanted() const;

 public:
  /// Whether run(..., skip_unwanted = true) may be used: one decoder thread (the per-packet
  /// setting is then read for that packet), timestamps from a container that gives every
  /// packet its own (not an MPEG stream, whose demuxer hands timestamps to neighbouring
  /// packets), frames numbered by timestamp.
  bool skip_possible() const { return threads() == 1 && !info_.sequential && !mpeg_container(); }

  /// The decoder's threads: NVDEC decodes with one (the hardware does the work).
  int threads() const { return hw_device_ ? 1 : options_.threads; }

 private:
  bool mpeg_container() const;

  // The frame's index in presentation order (decode order for sequential videos), or -1 for a
  // frame whose timestamp is not one of the video's. After a seek only a timestamp the frame's
  // packet carried counts, not libavcodec's guess.
  int64_t identify();

  Status on_frame(int64_t index, int64_t target, size_t& next, const Deliver& deliver);

  Status missing(int64_t target, const std::string& why) const;

  Status nvdec_refused() const;

  Status codec_error(int err) const;

  const RandomAccessFile* file_;
  const VideoInfo& info_;
  const VideoDecoderOptions& options_;
  AVPacket* packet_;
  AVFrame* frame_;
  VideoDecodeReport* report_;
  AVBufferRef* hw_device_;
  HwFormat hw_format_;

  std::unique_ptr<Input> input_;
  AVStream* stream_ = nullptr;
  AVCodecContext* codec_ = nullptr;
  FramePool* frame_pool_ = nullptr;
  int64_t run_key_ = 0;        // index into info_.keyframes where this run started
  int64_t run_key_frame_ = 0;  // its frame index
  bool seeked_ = false;        // this run started with a seek (else at the start of the file)
  bool run_started_ = false;   // a frame at or after run_key_frame_ has come out
  int64_t last_ = -1;          // the highest frame index this run has produced
  bool draining_ = false;      // the end of the file was reached and the decoder is being drained
  bool pending_ = false;       // packet_ is waiting to be sent again
  int read_error_ = 0;         // why reading stopped, if not at the end of the file
  int64_t output_count_ = 0;   // sequential videos: frames out of the decoder so far
  int bad_seeks_ = 0;
  const std::vector<int64_t>* wanted_ = nullptr;
  bool skip_unwanted_ = false;  // packets of unwanted frames are sent with AVDISCARD_NONREF
  bool skip_intra_ = false;     // an intra-only stream: packets of unwanted frames are not sent
  int64_t seek_back_ = 0;      // frames before a keyframe a seek aims at (kSeekBack)
  bool no_seeks_ = false;
  int64_t read_past_ = -1;     // the highest frame index of a packet read (kUnknownRead: unknown)
  bool ok_ = false;            // the last run delivered every frame it was asked for
};

}  // namespace hdl::detail::video
