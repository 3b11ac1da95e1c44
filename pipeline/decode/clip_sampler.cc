#include "pipeline/decode/clip_sampler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

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

namespace {

// The start of clip k among `room + 1` possible starts (counted from 0).
int64_t choose_start(const ClipSampling& s, int64_t room, int64_t k, RandomStream& rng) {
  switch (s.sampler) {
    case ClipSampler::kRandom: {
      if (!s.grouped) return static_cast<int64_t>(rng.below(static_cast<uint64_t>(room + 1)));
      std::vector<int64_t> starts(static_cast<size_t>(s.clips_per_video));
      for (int64_t& start : starts) start = static_cast<int64_t>(rng.below(static_cast<uint64_t>(room + 1)));
      std::sort(starts.begin(), starts.end());
      return starts[static_cast<size_t>(k)];
    }
    case ClipSampler::kUniform:
      // floor(linspace(0, room, K)[k]) in exact integer arithmetic: the clip torchvision's
      // UniformClipSampler picks among VideoClips' clips (frames_between_clips 1).
      return s.clips_per_video == 1 ? 0 : room * k / (s.clips_per_video - 1);
    case ClipSampler::kContiguous:
      return k * s.clip_stride;
  }
  return 0;
}

std::string seconds(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g s", v);
  return buf;
}

}  // namespace

Result<std::vector<int64_t>> clip_frames(const ClipSampling& s, const VideoInfo& info, int64_t k,
                                         RandomStream& rng) {
  HDL_RETURN_IF_ERROR(check_clip_fits(s, info));
  return clip_frames_at(s, info, choose_start(s, last_clip_start(s, info), k, rng));
}

TimelineRange whole_timeline(const VideoInfo& info, double frame_rate) {
  return {0, timeline_length(info, frame_rate)};
}

std::string describe_segment(const Segment& segment) {
  return "[" + seconds(segment.start) + ", " + (std::isinf(segment.end) ? std::string("end") : seconds(segment.end)) + ")";
}

Result<TimelineRange> segment_range(const VideoInfo& info, double frame_rate, const Segment& segment) {
  const int64_t length = timeline_length(info, frame_rate);
  if (segment.start == 0 && std::isinf(segment.end) && segment.end > 0) return TimelineRange{0, length};
  if (!(segment.end > segment.start)) return Status::invalid_data("the end is not after the start");
  if (segment.start < 0) return Status::invalid_data("the start is negative");
  const double duration = info.duration();
  if (segment.start + kTimeSlack >= duration)
    return Status::invalid_data("it starts at or after the video's end (the video lasts " + seconds(duration) + ")");
  // Position j's time, non-decreasing in j; the first position whose time is at or after t.
  auto time = [&](int64_t j) { return frame_rate > 0 ? static_cast<double>(j) / frame_rate : info.frame_time(j); };
  auto first_at = [&](double t) {
    int64_t lo = 0, hi = length;  // answer in [lo, hi]
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (time(mid) + kTimeSlack >= t) hi = mid; else lo = mid + 1;
    }
    return lo;
  };
  const TimelineRange range{first_at(segment.start), std::isinf(segment.end) ? length : first_at(segment.end)};
  if (range.length() <= 0)
    return Status::invalid_data(frame_rate > 0 ? "it holds no instant of the clip frame rate's grid"
                                               : "it holds no frame (it lies between two frames)");
  return range;
}

Result<std::vector<int64_t>> clip_frames(const ClipSampling& s, const VideoInfo& info, TimelineRange range,
                                         int64_t k, RandomStream& rng) {
  const bool whole = s.frames_per_clip == 0;
  const int64_t span = whole ? 1 : s.span();
  if (range.length() < span) {
    std::string msg = "the segment has " + std::to_string(std::max<int64_t>(range.length(), 0)) +
                      (s.frame_rate > 0 ? " positions at the clip frame rate" : " frames");
    if (range.length() > 0)
      msg += " (" + std::to_string(range.begin) + " to " + std::to_string(range.end - 1) + ")";
    return Status::invalid_data(msg + ", a clip needs " + std::to_string(span));
  }
  const int64_t count = whole ? range.length() : s.frames_per_clip;
  const int64_t step = whole ? 1 : s.step;
  const int64_t start = range.begin + (whole ? 0 : choose_start(s, range.length() - span, k, rng));
  std::vector<int64_t> frames(static_cast<size_t>(count));
  for (int64_t t = 0; t < count; ++t) frames[t] = timeline_frame(info, s.frame_rate, start + t * step);
  return frames;
}

}  // namespace hdl
