// video_decoder: one clip decoded from a video's bytes in memory (e.g. file_reader's output),
// through the ClipOutput it shares with the video readers (pipeline/decode/clip_output.h): FFmpeg
// into the clip's slot of the batch, optionally fused with the image_decoder's geometry
// (RandomResizedCrop, Resize, CenterCrop), one window drawn per clip and every frame cropped and
// resized with it. For videos on disk, the reader is pipeline/readers/video_reader.cc.
#include <algorithm>
#include <string>

#include "decoders/video_decoder.h"
#include "media/file_system.h"
#include "pipeline/decode/clip_output.h"
#include "pipeline/decode/clip_sampler.h"
#include "pipeline/errors.h"
#include "pipeline/operator.h"
#include "pipeline/registry.h"
#include "pipeline/spec.h"

namespace hdl {
namespace {

class VideoDecoderOp final : public Operator {
 public:
  explicit VideoDecoderOp(const NodeSpec& n)
      : sampling_(ops::parse_sampling(n, ClipSampler::kRandom)), output_(n), start_(n.get_string("clip_start")) {}

  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec> in) const override {
    if (in[0].dtype != DType::kU8 || in[0].shape.ndim() != 1)
      throw ConfigError("input must be encoded bytes (uint8, 1-D), got " + std::string(dtype_name(in[0].dtype)) +
                        " " + in[0].shape.to_string());
    const int64_t t = sampling_.frames_per_clip > 0 ? sampling_.frames_per_clip : -1;
    return {output_.spec(), TensorSpec{DType::kI64, Shape{t}, Layout::kNone}};
  }

  Status run(SampleIO& io) const override {
    const ConstTensorView& in = io.input(0);
    const std::unique_ptr<RandomAccessFile> file =
        memory_file({in.typed<uint8_t>(), static_cast<size_t>(in.num_elements())});
    auto& st = *static_cast<ops::VideoState*>(io.state());
    HDL_ASSIGN_OR_RETURN(VideoInfo info, st.decoder.probe(*file));
    counters_.probes.fetch_add(1, std::memory_order_relaxed);
    HDL_RETURN_IF_ERROR(check_clip_fits(sampling_, info));
    const int64_t room = last_clip_start(sampling_, info);
    int64_t start = 0;
    if (start_ == "random") start = static_cast<int64_t>(io.rng().below(static_cast<uint64_t>(room + 1)));
    else if (start_ == "middle") start = room / 2;
    const std::vector<int64_t> frames = clip_frames_at(sampling_, info, start);
    HDL_RETURN_IF_ERROR(output_.run(io, st, *file, info, frames, 0, counters_));
    HDL_ASSIGN_OR_RETURN(TensorView idx, io.output(1, Shape{static_cast<int64_t>(frames.size())}, DType::kI64, Layout::kNone));
    std::copy(frames.begin(), frames.end(), idx.typed<int64_t>());
    return Status::ok();
  }

  std::unique_ptr<OpState> make_state() const override {
    return std::make_unique<ops::VideoState>(output_.decoder_options());
  }
  std::vector<std::pair<std::string, int64_t>> counters() const override { return counters_.list(); }

 private:
  ClipSampling sampling_;
  ops::ClipOutput output_;
  std::string start_;
  mutable ops::VideoCounters counters_;
};

}  // namespace

OpSchema video_decoder_schema() {
  OpSchema s;
  s.name = "video_decoder";
  s.doc = "Decodes one clip of a video held in memory (e.g. file_reader's bytes) with FFmpeg: "
          "frames_per_clip frames `step` apart (0: every frame), starting at a random, the first or the "
          "middle position; optionally fused with RandomResizedCrop / Resize / CenterCrop, one window per "
          "clip. For videos on disk, video_reader reads only the bytes a clip needs.";
  s.inputs = {{"encoded", "a video file's bytes (uint8, 1-D)"}};
  s.outputs = {{"frames", "[T, H, W, C] uint8 (FHWC), or the frame count (output \"count\")"},
               {"frame_indices", "[T] int64: the clip's frames (presentation order)"}};
  s.uses_randomness = true;
  s.args = {{"clip_start", ArgType::kString, ArgValue("random"), "where the clip starts: random, first or middle", one_of({"random", "first", "middle"})}};
  for (ArgSchema& a : ops::clip_args()) s.args.push_back(std::move(a));
  for (ArgSchema& a : ops::decode_args()) s.args.push_back(std::move(a));
  s.create = [](const NodeSpec& n) { return std::make_unique<VideoDecoderOp>(n); };
  return s;
}

}  // namespace hdl
