#include "pipeline/readers/clip_sampler.h"

#include <algorithm>
#include <cmath>

#include "pipeline/errors.h"

namespace hdl {

ClipSampler parse_clip_sampler(const std::string& name) {
  if (name == "random") return ClipSampler::kRandom;
  if (name == "uniform") return ClipSampler::kUniform;
  if (name == "contiguous") return ClipSampler::kContiguous;
  throw ConfigError("clip sampler must be random, uniform or contiguous, got \"" + name + "\"");
}

namespace {
// Instants within this many seconds of a frame's timestamp show that frame (timestamps are
// rationals; the grid is j / frame_rate in floating point).
constexpr double kTimeSlack = 1e-7;
}  // namespace

int64_t timeline_length(const VideoInfo& info, double frame_rate) {
  if (frame_rate <= 0) return info.num_frames();
  if (info.num_frames() == 0) return 0;
  return static_cast<int64_t>(std::floor(info.duration() * frame_rate + kTimeSlack));
}

int64_t timeline_frame(const VideoInfo& info, double frame_rate, int64_t j) {
  if (frame_rate <= 0) return j;
  const double t = static_cast<double>(j) / frame_rate + kTimeSlack;
  // The last frame whose time is <= t (frame_time is non-decreasing in i).
  int64_t lo = 0, hi = info.num_frames();  // invariant: frame_time(lo) <= t, answer in [lo, hi)
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (info.frame_time(mid) <= t) lo = mid; else hi = mid;
  }
  return lo;
}

int64_t contiguous_clips(const ClipSampling& s, int64_t length) {
  if (s.frames_per_clip == 0) return length > 0 ? 1 : 0;
  const int64_t span = s.span();
  return length < span ? 0 : (length - span) / s.clip_stride + 1;
}

Status check_clip_fits(const ClipSampling& s, const VideoInfo& info) {
  const int64_t length = timeline_length(info, s.frame_rate);
  const int64_t span = s.frames_per_clip == 0 ? 1 : s.span();
  if (length >= span) return Status::ok();
  std::string msg = "the video has " + std::to_string(info.num_frames()) + " frames";
  if (s.frame_rate > 0) msg += " (" + std::to_string(length) + " at the clip frame rate)";
  return Status::invalid_data(msg + ", a clip needs " + std::to_string(span));
}

std::vector<int64_t> clip_frames_at(const ClipSampling& s, const VideoInfo& info, int64_t start) {
  const bool whole = s.frames_per_clip == 0;
  const int64_t count = whole ? timeline_length(info, s.frame_rate) : s.frames_per_clip;
  const int64_t step = whole ? 1 : s.step;
  if (whole) start = 0;
  std::vector<int64_t> frames(static_cast<size_t>(count));
  for (int64_t t = 0; t < count; ++t) frames[t] = timeline_frame(info, s.frame_rate, start + t * step);
  return frames;
}

int64_t last_clip_start(const ClipSampling& s, const VideoInfo& info) {
  return s.frames_per_clip == 0 ? 0 : timeline_length(info, s.frame_rate) - s.span();
}

Result<std::vector<int64_t>> clip_frames(const ClipSampling& s, const VideoInfo& info, int64_t k,
                                         RandomStream& rng) {
  HDL_RETURN_IF_ERROR(check_clip_fits(s, info));
  const int64_t room = last_clip_start(s, info);
  int64_t start = 0;
  switch (s.sampler) {
    case ClipSampler::kRandom:
      start = static_cast<int64_t>(rng.below(static_cast<uint64_t>(room + 1)));
      break;
    case ClipSampler::kUniform:
      // floor(linspace(0, room, K)[k]) in exact integer arithmetic: the clip torchvision's
      // UniformClipSampler picks among VideoClips' clips (frames_between_clips 1).
      start = s.clips_per_video == 1 ? 0 : room * k / (s.clips_per_video - 1);
      break;
    case ClipSampler::kContiguous:
      start = k * s.clip_stride;
      break;
  }
  return clip_frames_at(s, info, start);
}

}  // namespace hdl
