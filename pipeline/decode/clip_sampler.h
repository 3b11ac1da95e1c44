// Clip sampling: which frames of a video make each clip.
//
// A video's timeline is its frames in presentation order, or, with a frame rate, a grid of
// instants 1/frame_rate apart from the first frame, each showing the last frame displayed at
// or before it (variable frame rate videos resample correctly; for a constant-rate video this
// is torchvision VideoClips' frame_rate resampling, floor(j * fps / frame_rate)). A clip is
// frames_per_clip timeline positions `step` apart; its span is (frames_per_clip - 1) * step + 1.
// Samplers choose the clips' first positions:
//   - random: clips_per_video clips per video, each start uniform over [0, length - span],
//     drawn from the sample's random stream (a new draw every epoch, the same for a seed);
//     grouped (group_clips): the video's clips_per_video starts are drawn together from one
//     stream (the video's, not the sample's: SampleIO::item_rng), each uniform and independent
//     as before, and sorted, so that clip k is the k-th earliest, the same whichever sample asks;
//   - uniform: clips_per_video starts evenly spaced, floor(linspace(0, length - span, K)) (the
//     first clip when K = 1, as torch.linspace gives), as torchvision's UniformClipSampler
//     picks among VideoClips' clips;
//   - contiguous: every clip, starts 0, clip_stride, 2 * clip_stride, ... (VideoClips with
//     frames_between_clips = clip_stride); a video shorter than a clip has none.
// frames_per_clip 0 is the whole timeline as one clip (decode-only benchmarks, short videos).
//
// A segment (pipeline/dataset.h: [start, end) in seconds from the first frame) limits
// all of that to the timeline positions whose time lies in it: position j's time is frame j's
// (pts - first pts, in seconds) or j / frame_rate. Clips then start, end and are counted
// inside the segment's range of positions, exactly as for a video that had only those.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "decoders/video_decoder.h"
#include "media/api.h"
#include "media/status.h"
#include "pipeline/dataset.h"
#include "pipeline/random.h"

HDL_API_BEGIN
namespace hdl {

enum class ClipSampler { kRandom, kUniform, kContiguous };
/// Parses "random", "uniform", "contiguous"; throws ConfigError otherwise.
ClipSampler parse_clip_sampler(const std::string& name);

struct ClipSampling {
  ClipSampler sampler = ClipSampler::kRandom;
  int64_t frames_per_clip = 16;  ///< 0: the whole timeline
  int64_t step = 1;              ///< timeline positions between a clip's frames
  int64_t clips_per_video = 1;   ///< random and uniform
  int64_t clip_stride = 1;       ///< contiguous: positions between clip starts
  double frame_rate = 0;         ///< > 0: resample the timeline to this rate (frames per second)
  /// random: clip k is the k-th earliest of clips_per_video starts drawn in turn from the
  /// stream given (the video's), instead of one start drawn from the sample's stream.
  bool grouped = false;

  /// (frames_per_clip - 1) * step + 1, or 0 for the whole timeline.
  int64_t span() const { return frames_per_clip > 0 ? (frames_per_clip - 1) * step + 1 : 0; }
};

/// Positions of `info`'s timeline: num_frames, or floor(duration * frame_rate).
int64_t timeline_length(const VideoInfo& info, double frame_rate);
/// The frame shown at timeline position j (0 <= j < timeline_length).
int64_t timeline_frame(const VideoInfo& info, double frame_rate, int64_t j);

/// Timeline positions [begin, end) that clips may use.
struct TimelineRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t length() const { return end - begin; }
};
/// The whole timeline: [0, timeline_length).
TimelineRange whole_timeline(const VideoInfo& info, double frame_rate);
/// The positions whose time lies in `segment` (an end past the video's is the video's end).
/// Errors (kInvalidData) naming the segment: end not after start, a negative start, a start
/// at or past the video's end ("the video lasts D s"), no position inside (a segment between
/// two frames). The whole timeline for Segment{} (0, +infinity).
Result<TimelineRange> segment_range(const VideoInfo& info, double frame_rate, const Segment& segment);
/// "[1.5 s, 4 s)" or "[1.5 s, end)", for messages.
std::string describe_segment(const Segment& segment);

/// Clips a video with `length` timeline positions has under the contiguous sampler.
int64_t contiguous_clips(const ClipSampling& s, int64_t length);

/// The frame indices of the clip starting at timeline position `start` (a whole-timeline clip
/// for frames_per_clip 0, whatever `start`). Precondition: start + span <= timeline length.
std::vector<int64_t> clip_frames_at(const ClipSampling& s, const VideoInfo& info, int64_t start);

/// The last timeline position a clip may start at (0 for a whole-timeline clip); negative when
/// the video is shorter than a clip.
int64_t last_clip_start(const ClipSampling& s, const VideoInfo& info);

/// The error for a video shorter than one clip (kInvalidData), or ok.
Status check_clip_fits(const ClipSampling& s, const VideoInfo& info);

/// The frame indices of clip `k` of a video (k < clips_per_video, or < contiguous_clips),
/// ascending; random starts are drawn from `rng`. Errors (kInvalidData) when the video is
/// shorter than a clip: "the video has N frames (timeline length L), a clip needs S".
Result<std::vector<int64_t>> clip_frames(const ClipSampling& s, const VideoInfo& info, int64_t k,
                                         RandomStream& rng);
/// The same inside the positions `range` (a segment_range): starts are counted from
/// range.begin, and a whole-timeline clip is the range. Errors (kInvalidData) when the range
/// is shorter than a clip: "the segment has L frames (positions B to E), a clip needs S".
Result<std::vector<int64_t>> clip_frames(const ClipSampling& s, const VideoInfo& info, TimelineRange range,
                                         int64_t k, RandomStream& rng);

}  // namespace hdl
HDL_API_END
