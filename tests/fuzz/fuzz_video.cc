// fuzz_video: decoders/video_decoder (libavformat's demuxers, libavcodec's video decoders,
// libswscale) over arbitrary bytes in a memory file: probe(), then up to 8 frames (the first
// ones, or an ascending pick with repeats) in a random colour, with or without rotation, through
// decode() or into a strided view. Checks: no crash, sanitizer report or hang; a sane VideoInfo;
// errors carry a message; the sink sees every frame in order with the promised shape; nothing
// is written outside the view.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "decoders/video_decoder.h"
#include "media/file_system.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using namespace hdl;

void check_info(const VideoInfo& info, int64_t max_pixels) {
  HDL_FUZZ_CHECK(info.num_frames() > 0, "probe() succeeded with no frames");
  HDL_FUZZ_CHECK(info.width > 0 && info.height > 0 && info.width * info.height <= max_pixels, "bad frame size");
  HDL_FUZZ_CHECK(info.rotation % 90 == 0 && info.rotation >= 0 && info.rotation < 360, "bad rotation");
  for (size_t i = 1; i < info.pts.size(); ++i) HDL_FUZZ_CHECK(info.pts[i - 1] < info.pts[i], "pts not ascending");
  HDL_FUZZ_CHECK(!info.keyframes.empty(), "no keyframes");
  for (size_t i = 0; i < info.keyframes.size(); ++i) {
    HDL_FUZZ_CHECK(info.keyframes[i] >= 0 && info.keyframes[i] < info.num_frames(), "keyframe out of range");
    HDL_FUZZ_CHECK(i == 0 || info.keyframes[i - 1] < info.keyframes[i], "keyframes not ascending");
  }
}

// Up to 8 frames: the first ones, or from a random start in random steps (0: a repeat).
std::vector<int64_t> pick_frames(FuzzedDataProvider& p, int64_t n) {
  const int count = p.ConsumeIntegralInRange(1, 8);
  std::vector<int64_t> frames;
  if (p.ConsumeBool()) {
    for (int64_t i = 0; i < count && i < n; ++i) frames.push_back(i);
    return frames;
  }
  int64_t f = p.ConsumeIntegralInRange<int64_t>(0, n - 1);
  for (int i = 0; i < count && f < n; ++i, f += p.ConsumeIntegralInRange<int64_t>(0, 40)) frames.push_back(f);
  return frames;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr int64_t kMaxPixels = int64_t(1) << 20;  // huge frames are refused fast
  fuzz::Input in(data, size);
  const ColorFormat colors[] = {ColorFormat::kRGB, ColorFormat::kBGR, ColorFormat::kGray};
  VideoDecoderOptions options;
  options.color = colors[in.params.ConsumeIntegralInRange(0, 2)];
  options.apply_rotation = in.params.ConsumeBool();
  options.max_frame_pixels = kMaxPixels;
  VideoDecoder dec(options);
  const std::unique_ptr<RandomAccessFile> file = memory_file(in.payload);
  const Result<VideoInfo> info = dec.probe(*file);
  if (!info.is_ok()) {
    HDL_FUZZ_CHECK(!info.status().message().empty(), "probe() error without a message");
    return 0;
  }
  check_info(*info, kMaxPixels);
  const std::vector<int64_t> frames = pick_frames(in.params, info->num_frames());
  const int64_t t = int64_t(frames.size()), c = color_channels(options.color);
  const int64_t h = options.apply_rotation ? info->display_height() : info->height;
  const int64_t w = options.apply_rotation ? info->display_width() : info->width;
  Status s;
  if (in.params.ConsumeBool()) {
    int64_t next = 0;
    s = dec.decode(*file, *info, frames, [&](int64_t k, const ConstTensorView& v) {
      HDL_FUZZ_CHECK(k == next++, "sink called out of order");
      HDL_FUZZ_CHECK(v.shape == (Shape{h, w, c}), "frame of the wrong shape");
      return Status::ok();
    });
    if (s.is_ok()) HDL_FUZZ_CHECK(next == t, "sink not called for every frame");
  } else {
    // [T, H, W, C] with 3 spare pixels per row and a guard either side.
    constexpr uint8_t kFill = 0xA5;
    constexpr int64_t kGuard = 64;
    const int64_t row = (w + 3) * c;
    std::vector<uint8_t> bytes(size_t(t * h * row + 2 * kGuard), kFill);
    TensorView out(bytes.data() + kGuard, Shape{t, h, w, c}, DType::kU8, Layout::kFHWC);
    out.strides = Shape{h * row, row, c, 1};
    s = dec.decode_into(*file, *info, frames, out);
    for (size_t i = 0; i < bytes.size(); ++i) {
      const int64_t at = int64_t(i) - kGuard;
      if (at < 0 || at >= t * h * row || at % row >= w * c) HDL_FUZZ_CHECK(bytes[i] == kFill, "wrote outside the view");
    }
  }
  if (!s.is_ok()) HDL_FUZZ_CHECK(!s.message().empty(), "decode error without a message");
  return 0;
}
