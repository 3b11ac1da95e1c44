// Clip sampling on synthetic timelines: the three samplers, frame steps, frame-rate resampling
// by timestamp (constant and variable frame rates), videos shorter than a clip, and segments
// (the positions whose time lies in [start, end), clips drawn inside them, bad segments).
#include <gtest/gtest.h>

#include <limits>
#include <set>

#include "pipeline/decode/clip_sampler.h"

namespace hdl {
namespace {

// A constant-rate video: n frames at fps (time base 1/fps_den_units).
VideoInfo cfr(int64_t n, int64_t fps) {
  VideoInfo v;
  v.time_base_num = 1, v.time_base_den = fps * 100;
  for (int64_t i = 0; i < n; ++i) v.pts.push_back(i * 100);
  v.keyframes = {0};
  v.last_frame_duration = 100;
  return v;
}

std::vector<int64_t> range(int64_t start, int64_t count, int64_t step) {
  std::vector<int64_t> r;
  for (int64_t i = 0; i < count; ++i) r.push_back(start + i * step);
  return r;
}

TEST(ClipSamplerTest, ContiguousIsVideoClipsUnfold) {
  // VideoClips(clip_length_in_frames=16, frames_between_clips=5) on 100 frames: starts 0..80
  // step 5, 17 clips.
  ClipSampling s{ClipSampler::kContiguous, 16, 1, 1, 5, 0};
  const VideoInfo v = cfr(100, 25);
  ASSERT_EQ(contiguous_clips(s, timeline_length(v, 0)), 17);
  RandomStream rng(1, 0, 0);
  for (int64_t k = 0; k < 17; ++k) {
    auto f = clip_frames(s, v, k, rng);
    ASSERT_TRUE(f.is_ok());
    EXPECT_EQ(*f, range(5 * k, 16, 1)) << k;
  }
  EXPECT_EQ(contiguous_clips(s, 15), 0);  // shorter than a clip: none (as VideoClips)
  EXPECT_EQ(contiguous_clips(s, 16), 1);
}

TEST(ClipSamplerTest, UniformIsLinspaceOverStarts) {
  ClipSampling s{ClipSampler::kUniform, 8, 2, 4, 1, 0};
  const VideoInfo v = cfr(50, 30);  // span 15, starts 0..35
  RandomStream rng(1, 0, 0);
  const int64_t expect[4] = {0, 11, 23, 35};  // floor(linspace(0, 35, 4)) = 0, 11.67, 23.33, 35
  for (int64_t k = 0; k < 4; ++k) EXPECT_EQ(*clip_frames(s, v, k, rng), range(expect[k], 8, 2)) << k;
  s.clips_per_video = 1;
  EXPECT_EQ(*clip_frames(s, v, 0, rng), range(0, 8, 2));  // torch.linspace(a, b, 1) == [a]
}

TEST(ClipSamplerTest, RandomStartsCoverEveryStartAndRepeatForASeed) {
  ClipSampling s{ClipSampler::kRandom, 4, 3, 1, 1, 0};
  const VideoInfo v = cfr(20, 10);  // span 10, starts 0..10
  std::set<int64_t> starts;
  for (int64_t pos = 0; pos < 400; ++pos) {
    RandomStream a(7, 0, pos), b(7, 0, pos);
    auto fa = clip_frames(s, v, 0, a), fb = clip_frames(s, v, 0, b);
    ASSERT_EQ(*fa, *fb);
    ASSERT_EQ(fa->size(), 4u);
    EXPECT_EQ((*fa)[3] - (*fa)[0], 9);
    starts.insert((*fa)[0]);
  }
  EXPECT_EQ(starts.size(), 11u);
  EXPECT_EQ(*starts.rbegin(), 10);
}

TEST(ClipSamplerTest, FrameRateResamplesConstantRateAsVideoClips) {
  // 30 fps -> 15 fps: every other frame (VideoClips: slice(None, None, 2)); 101 frames last
  // 101/30 s, so the 15 fps timeline has floor(101 / 2) = 50 positions.
  const VideoInfo v = cfr(101, 30);
  EXPECT_EQ(timeline_length(v, 15), 50);
  for (int64_t j = 0; j < 50; ++j) EXPECT_EQ(timeline_frame(v, 15, j), 2 * j);
  // 25 -> 10 fps: floor(j * 2.5), as VideoClips' float index resampling.
  const VideoInfo w = cfr(100, 25);
  EXPECT_EQ(timeline_length(w, 10), 40);
  for (int64_t j = 0; j < 40; ++j) EXPECT_EQ(timeline_frame(w, 10, j), (j * 5) / 2) << j;
  // Upsampling repeats frames.
  EXPECT_EQ(timeline_frame(w, 50, 3), 1);
}

TEST(ClipSamplerTest, FrameRateFollowsTimestampsOfVariableRateVideo) {
  // Frames at 0, 0.1, 0.15, 0.5, 0.55 s (time base 1/100).
  VideoInfo v;
  v.time_base_num = 1, v.time_base_den = 100;
  v.pts = {0, 10, 15, 50, 55};
  v.keyframes = {0};
  v.last_frame_duration = 5;
  ASSERT_NEAR(v.duration(), 0.6, 1e-12);
  EXPECT_EQ(timeline_length(v, 10), 6);  // instants 0, 0.1, ..., 0.5
  const int64_t expect[6] = {0, 1, 2, 2, 2, 3};  // the frame shown at each instant
  for (int64_t j = 0; j < 6; ++j) EXPECT_EQ(timeline_frame(v, 10, j), expect[j]) << j;
}

TEST(ClipSamplerTest, ShortVideoIsAnErrorNamingBothLengths) {
  ClipSampling s{ClipSampler::kRandom, 16, 2, 1, 1, 0};
  RandomStream rng(1, 0, 0);
  auto f = clip_frames(s, cfr(30, 25), 0, rng);  // span 31
  ASSERT_FALSE(f.is_ok());
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidData);
  EXPECT_NE(f.status().message().find("30 frames"), std::string::npos) << f.status().to_string();
  EXPECT_NE(f.status().message().find("needs 31"), std::string::npos) << f.status().to_string();
  EXPECT_TRUE(clip_frames(s, cfr(31, 25), 0, rng).is_ok());
}

TEST(ClipSamplerTest, WholeVideoClip) {
  ClipSampling s{ClipSampler::kContiguous, 0, 1, 1, 1, 0};
  RandomStream rng(1, 0, 0);
  EXPECT_EQ(contiguous_clips(s, 7), 1);
  EXPECT_EQ(*clip_frames(s, cfr(7, 25), 0, rng), range(0, 7, 1));
  EXPECT_EQ(clip_frames_at(s, cfr(7, 25), 3), range(0, 7, 1));
}

TEST(ClipSamplerTest, SegmentRangeIsThePositionsWhoseTimeLiesInside) {
  const VideoInfo v = cfr(100, 25);  // frame i at i / 25 s; lasts 4 s
  auto range = [&](double fr, Segment seg) {
    auto r = segment_range(v, fr, seg);
    EXPECT_TRUE(r.is_ok()) << r.status().to_string();
    return r.is_ok() ? std::vector<int64_t>{r->begin, r->end} : std::vector<int64_t>{};
  };
  EXPECT_EQ(range(0, {1.0, 2.0}), (std::vector<int64_t>{25, 50}));   // 1.00 .. 1.96 s
  EXPECT_EQ(range(0, {1.01, 2.0}), (std::vector<int64_t>{26, 50}));  // 1.04 s is the first inside
  EXPECT_EQ(range(0, {0.0, 0.04}), (std::vector<int64_t>{0, 1}));    // the end is open
  EXPECT_EQ(range(0, {3.5, 99.0}), (std::vector<int64_t>{88, 100})); // an end past the video's
  EXPECT_EQ(range(0, {2.0, std::numeric_limits<double>::infinity()}), (std::vector<int64_t>{50, 100}));
  EXPECT_EQ(range(0, Segment{}), (std::vector<int64_t>{0, 100}));
  // At 10 frames per second the positions are j / 10 s: [1, 2) holds j = 10 .. 19.
  EXPECT_EQ(range(10, {1.0, 2.0}), (std::vector<int64_t>{10, 20}));
  EXPECT_EQ(range(10, {1.05, 2.0}), (std::vector<int64_t>{11, 20}));
  EXPECT_EQ(range(10, {0.0, std::numeric_limits<double>::infinity()}), (std::vector<int64_t>{0, 40}));
  // Variable frame rate: frames at 0, 0.1, 0.15, 0.5, 0.55 s.
  VideoInfo w;
  w.time_base_num = 1, w.time_base_den = 100;
  w.pts = {0, 10, 15, 50, 55};
  w.keyframes = {0};
  w.last_frame_duration = 5;
  auto r = segment_range(w, 0, {0.12, 0.52});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->begin, 2);
  EXPECT_EQ(r->end, 4);
}

TEST(ClipSamplerTest, BadSegmentsAreErrorsSayingWhy) {
  const VideoInfo v = cfr(100, 25);
  auto why = [&](Segment seg, double fr = 0) {
    auto r = segment_range(v, fr, seg);
    EXPECT_FALSE(r.is_ok()) << seg.start << " " << seg.end;
    if (r.is_ok()) return std::string();
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidData);
    return r.status().message();
  };
  EXPECT_NE(why({2.0, 2.0}).find("the end is not after the start"), std::string::npos);
  EXPECT_NE(why({3.0, 1.0}).find("the end is not after the start"), std::string::npos);
  EXPECT_NE(why({-1.0, 1.0}).find("negative"), std::string::npos);
  EXPECT_NE(why({4.0, 5.0}).find("the video lasts 4 s"), std::string::npos) << why({4.0, 5.0});
  EXPECT_NE(why({1.01, 1.03}).find("between two frames"), std::string::npos);  // frames at 1.00 and 1.04
  EXPECT_NE(why({1.01, 1.09}, 10).find("no instant"), std::string::npos);
  EXPECT_EQ(describe_segment({1.5, 4}), "[1.5 s, 4 s)");
  EXPECT_EQ(describe_segment({0.25, std::numeric_limits<double>::infinity()}), "[0.25 s, end)");
}

TEST(ClipSamplerTest, ClipsOfASegmentStayInsideIt) {
  const VideoInfo v = cfr(100, 25);
  const TimelineRange seg{30, 60};  // 30 positions
  RandomStream rng(1, 0, 0);
  // Contiguous: starts 30, 35, ..., as for a video of 30 frames shifted by 30.
  ClipSampling c{ClipSampler::kContiguous, 8, 2, 1, 5, 0};  // span 15
  ASSERT_EQ(contiguous_clips(c, seg.length()), 4);          // starts 0, 5, 10, 15 of 30 - 15
  for (int64_t k = 0; k < 4; ++k) EXPECT_EQ(*clip_frames(c, v, seg, k, rng), range(30 + 5 * k, 8, 2)) << k;
  // Uniform: floor(linspace(0, 15, 3)) from the segment's start.
  ClipSampling u{ClipSampler::kUniform, 8, 2, 3, 1, 0};
  const int64_t expect[3] = {0, 7, 15};
  for (int64_t k = 0; k < 3; ++k) EXPECT_EQ(*clip_frames(u, v, seg, k, rng), range(30 + expect[k], 8, 2)) << k;
  // Random: every start in [30, 45], none outside.
  ClipSampling r{ClipSampler::kRandom, 8, 2, 1, 1, 0};
  std::set<int64_t> starts;
  for (int64_t pos = 0; pos < 600; ++pos) {
    RandomStream a(9, 0, pos);
    starts.insert((*clip_frames(r, v, seg, 0, a))[0]);
  }
  EXPECT_EQ(starts.size(), 16u);
  EXPECT_EQ(*starts.begin(), 30);
  EXPECT_EQ(*starts.rbegin(), 45);
  // The whole segment as one clip.
  ClipSampling whole{ClipSampler::kContiguous, 0, 1, 1, 1, 0};
  EXPECT_EQ(*clip_frames(whole, v, seg, 0, rng), range(30, 30, 1));
  // With a frame rate the positions are resampled ones: 25 -> 10 fps, positions 10..19 of [1 s, 2 s).
  ClipSampling fr{ClipSampler::kContiguous, 4, 3, 1, 1, 10};
  auto positions = segment_range(v, 10, {1.0, 2.0});
  ASSERT_TRUE(positions.is_ok());
  EXPECT_EQ(*clip_frames(fr, v, *positions, 0, rng), (std::vector<int64_t>{25, 32, 40, 47}));  // floor(j * 2.5)
}

TEST(ClipSamplerTest, SegmentShorterThanAClipIsAnErrorNamingBothLengths) {
  const VideoInfo v = cfr(100, 25);
  ClipSampling s{ClipSampler::kRandom, 16, 2, 1, 1, 0};  // span 31
  RandomStream rng(1, 0, 0);
  auto f = clip_frames(s, v, TimelineRange{10, 40}, 0, rng);
  ASSERT_FALSE(f.is_ok());
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidData);
  EXPECT_NE(f.status().message().find("the segment has 30 frames (10 to 39), a clip needs 31"), std::string::npos)
      << f.status().to_string();
  EXPECT_TRUE(clip_frames(s, v, TimelineRange{10, 41}, 0, rng).is_ok());
  ClipSampling c = s;
  c.sampler = ClipSampler::kContiguous;
  EXPECT_EQ(contiguous_clips(c, 30), 0);
}

}  // namespace
}  // namespace hdl
