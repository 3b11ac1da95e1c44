// The video operators' shared frames output (clip_output.h).
#include "pipeline/decode/clip_output.h"

#include <cstring>

#include "media/cuda/allocator.h"
#include "pipeline/errors.h"
#include "pipeline/kernels/cuda/geometry.h"
#include "pipeline/kernels/cuda/resize.h"

namespace hdl::ops {

void VideoCounters::add(const VideoDecodeReport& r) {
  clips.fetch_add(1, std::memory_order_relaxed);
  frames_decoded.fetch_add(r.frames_decoded, std::memory_order_relaxed);
  seeks.fetch_add(r.seeks, std::memory_order_relaxed);
  packets.fetch_add(r.packets, std::memory_order_relaxed);
  retries.fetch_add(r.retries, std::memory_order_relaxed);
  continued.fetch_add(r.continued, std::memory_order_relaxed);
  frame_buffers.fetch_add(r.frame_buffers_allocated, std::memory_order_relaxed);
}

std::vector<std::pair<std::string, int64_t>> VideoCounters::list() const {
  std::vector<std::pair<std::string, int64_t>> l = {
      {"video_probes", probes.load()},   {"video_clips", clips.load()},
      {"video_frames_decoded", frames_decoded.load()}, {"video_seeks", seeks.load()},
      {"video_packets", packets.load()}, {"video_retries", retries.load()},
      {"video_clips_continued", continued.load()}, {"video_frame_buffers_allocated", frame_buffers.load()}};
  if (metadata) {
    l.emplace_back("video_metadata_cache_hits", metadata->hits());
    l.emplace_back("video_metadata_cache_misses", metadata->misses());
  }
  return l;
}

ClipSampling parse_sampling(const NodeSpec& n, ClipSampler sampler) {
  ClipSampling s;
  s.sampler = sampler;
  s.frames_per_clip = n.get_int("frames_per_clip");
  s.step = n.get_int("step");
  s.frame_rate = n.get_float("frame_rate");
  if (s.frame_rate < 0) throw ConfigError("argument \"frame_rate\" must be >= 0 (0: the video's own frames)");
  return s;
}

std::vector<ArgSchema> clip_args() {
  return {
      {"frames_per_clip", ArgType::kInt, ArgValue(16), "frames in a clip; 0: the whole video as one clip", at_least(0)},
      {"step", ArgType::kInt, ArgValue(1), "timeline positions between a clip's frames (2: every other frame)", at_least(1)},
      {"frame_rate", ArgType::kFloat, ArgValue(0.0), "> 0: sample the video at this many frames per second by timestamp (variable frame rate videos included; torchvision VideoClips' frame_rate); 0: the video's own frames", at_least(0)},
  };
}

std::vector<ArgSchema> decode_args() {
  std::vector<ArgSchema> a = {
      {"output_type", ArgType::kString, ArgValue("rgb"), "pixel format: rgb, bgr or gray", one_of({"rgb", "bgr", "gray"})},
      {"apply_rotation", ArgType::kBool, ArgValue(true), "rotate frames as the file's display matrix says (as the ffmpeg CLI does)"},
      {"decoder_threads", ArgType::kInt, ArgValue(1), "FFmpeg threads per decoder: 1 (clips decode in parallel on the pipeline's threads), n, or 0 for FFmpeg's choice", in_range(0, 64)},
      {"max_frame_pixels", ArgType::kInt, ArgValue(int64_t{1} << 26), "refuse videos with larger frames before decoding", at_least(1)},
      {"output", ArgType::kString, ArgValue("frames"), "frames: [T, H, W, C] uint8 pixels; count: decode only (no pixel conversion), output the number of frames (benchmarks, validation)", one_of({"frames", "count"})},
  };
  for (ArgSchema& g : ops::fused_geometry_args("first frame, the same for every frame of the clip")) a.push_back(std::move(g));
  return a;
}

ClipOutput::ClipOutput(const NodeSpec& n)
    : rrc_(ops::parse_random_resized_crop(n)), fused_(ops::parse_fused_geometry(n)),
      frames_per_clip_(n.get_int("frames_per_clip")) {
  options_.color = parse_color_format(n.get_string("output_type"));
  options_.apply_rotation = n.get_bool("apply_rotation");
  options_.threads = static_cast<int>(n.get_int("decoder_threads"));
  options_.max_frame_pixels = n.get_int("max_frame_pixels");
  fused_.dct_scaling = false;  // a video frame is decoded whole
  random_crop_ = n.get_string("random_crop") == "resized";
  fused_on_ = random_crop_ || !fused_.resize.empty() || fused_.center_crop.has_value();
  count_only_ = n.get_string("output") == "count";
  if (count_only_ && fused_on_)
    throw ConfigError("output \"count\" decodes without pixels: it takes no random_crop, resize or center_crop");
}

TensorSpec ClipOutput::spec() const {
  if (count_only_) return TensorSpec{DType::kI64, Shape{}, Layout::kNone};
  const int64_t t = frames_per_clip_ > 0 ? frames_per_clip_ : -1;
  const int64_t c = color_channels(options_.color);
  if (fused_.center_crop) return {DType::kU8, Shape{t, fused_.center_crop->h, fused_.center_crop->w, c}, Layout::kFHWC};
  if (fused_.resize.size() == 2) return {DType::kU8, Shape{t, fused_.resize[0], fused_.resize[1], c}, Layout::kFHWC};
  return {DType::kU8, Shape{t, -1, -1, c}, Layout::kFHWC};
}

Result<std::optional<ClipGeometry>> ClipOutput::draw_geometry(SampleIO& io, VideoState& st,
                                                               const VideoInfo& info) const {
  if (count_only_ || !fused_on_) return std::optional<ClipGeometry>();
  const SizeHW image = frame_size(info);
  ClipGeometry g;
  g.window = CropWindow{0, 0, image.h, image.w};
  if (random_crop_) {
    StreamDraws draws(io.rng());
    g.window = random_resized_crop_window(image, rrc_, draws);
  }
  FusedDecodeArgs scratch;
  g.args = sample_fused_args(fused_, io.rng(), scratch);
  HDL_ASSIGN_OR_RETURN(g.region, fused_decode_region(image, g.window, g.args, 1, st.resize));
  return std::optional<ClipGeometry>(std::move(g));
}

Status ClipOutput::run(SampleIO& io, VideoState& st, const RandomAccessFile& file, const VideoInfo& info,
                       const std::vector<int64_t>& frames, int output, VideoCounters& counters) const {
  HDL_ASSIGN_OR_RETURN(const std::optional<ClipGeometry> g, draw_geometry(io, st, info));
  return decode_cpu(io, st, file, info, frames, g ? &*g : nullptr, output, counters);
}

Status ClipOutput::decode_cpu(SampleIO& io, VideoState& st, const RandomAccessFile& file, const VideoInfo& info,
                              const std::vector<int64_t>& frames, const ClipGeometry* g, int output,
                              VideoCounters& counters) const {
  VideoDecodeReport report;
  if (count_only_) {
    HDL_RETURN_IF_ERROR(st.decoder.decode_only(file, info, frames, &report));
    HDL_ASSIGN_OR_RETURN(TensorView out, io.output(output, Shape{}, DType::kI64, Layout::kNone));
    *out.typed<int64_t>() = static_cast<int64_t>(frames.size());
    counters.add(report);
    return Status::ok();
  }
  const int64_t t = static_cast<int64_t>(frames.size()), c = color_channels(options_.color);
  if (!g) {
    const SizeHW image = frame_size(info);
    HDL_ASSIGN_OR_RETURN(TensorView out, io.output(output, Shape{t, image.h, image.w, c}, DType::kU8, Layout::kFHWC));
    HDL_RETURN_IF_ERROR(st.decoder.decode_into(file, info, frames, out, &report));
    counters.add(report);
    return Status::ok();
  }
  const FusedDecodeRegion& region = g->region;
  HDL_ASSIGN_OR_RETURN(TensorView out, io.output(output, Shape{t, region.out_size.h, region.out_size.w, c},
                                                 DType::kU8, Layout::kFHWC));
  const bool padded = !(region.dst_size == region.out_size);
  auto sink = [&](int64_t k, const ConstTensorView& frame) -> Status {
    const TensorView slot = out.select(0, k, Layout::kHWC);
    if (padded)
      for (int64_t y = 0; y < region.out_size.h; ++y)
        std::memset(slot.typed<uint8_t>() + y * slot.strides[0], 0, static_cast<size_t>(region.out_size.w * c));
    const TensorView target =
        slot.crop_hw(region.dst_in_output.y, region.dst_in_output.x, region.dst_size.h, region.dst_size.w);
    const ConstTensorView decoded = frame.crop_hw(region.roi.y, region.roi.x, region.roi.h, region.roi.w);
    if (!region.resample) {
      copy(decoded, target);
      return Status::ok();
    }
    return kernels::resize_window(decoded, region.src_origin, region.full_in, target, region.dst_origin,
                                  region.full_out, g->args.options, st.resize);
  };
  HDL_RETURN_IF_ERROR(st.decoder.decode(file, info, frames, sink, &report));
  counters.add(report);
  return Status::ok();
}

Result<Tensor> ClipOutput::decode_device(DeviceDecode& dev, const RandomAccessFile& file, const VideoInfo& info,
                                         const std::vector<int64_t>& frames, const ClipGeometry* g, BufferPool& pool,
                                         VideoCounters& counters) const {
  VideoDecodeReport report;
  const int64_t t = static_cast<int64_t>(frames.size()), c = color_channels(options_.color);
  const SizeHW image = frame_size(info);
  const SizeHW out_size = g ? g->region.out_size : image;
  Tensor pixels = Tensor::empty(Shape{t, out_size.h, out_size.w, c}, DType::kU8, Layout::kFHWC, pool);
  // A clip that fails part-way may have work queued that writes its block: the block goes
  // back to the pool (for another thread's stream) only once that work is done.
  auto failed = [&](Status s) {
    (void)dev.stream.synchronize();
    return s;
  };
  if (!g) {
    if (Status s = dev.decoder->decode_into(file, info, frames, pixels.view(), &report); !s.is_ok()) return failed(s);
    counters.add(report);
    return pixels;
  }
  const FusedDecodeRegion& region = g->region;
  // Where the output's top-left pixel falls in the (resized) window: outside it is zero.
  const int64_t top = region.dst_origin.y - region.dst_in_output.y, left = region.dst_origin.x - region.dst_in_output.x;
  const TensorView whole = pixels.view();
  auto sink = [&](int64_t k, const ConstTensorView& frame) -> Status {
    const TensorView slot = whole.select(0, k, Layout::kHWC);
    if (!region.resample)
      return kernels::cuda::crop(frame, region.roi.y - region.dst_in_output.y, region.roi.x - region.dst_in_output.x,
                                 slot, dev.stream);
    const ConstTensorView window = frame.crop_hw(g->window.top, g->window.left, g->window.height, g->window.width);
    if (top == 0 && left == 0 && region.full_out == region.out_size)
      return kernels::cuda::resize(window, slot, g->args.options, *dev.workspace, dev.stream);
    const size_t bytes = static_cast<size_t>(region.full_out.h * region.full_out.w * c);
    if (!dev.scratch || dev.scratch->capacity() < bytes) {
      HDL_RETURN_IF_ERROR(dev.stream.synchronize());  // the old block may still be read
      dev.scratch = Storage::allocate(cuda::device_allocator(dev.stream.device().index), bytes);
    }
    const TensorView resized(dev.scratch->data(), Shape{region.full_out.h, region.full_out.w, c}, DType::kU8,
                             Layout::kHWC, dev.stream.device());
    HDL_RETURN_IF_ERROR(kernels::cuda::resize(window, resized, g->args.options, *dev.workspace, dev.stream));
    return kernels::cuda::crop(resized, top, left, slot, dev.stream);
  };
  if (Status s = dev.decoder->decode(file, info, frames, sink, &report); !s.is_ok()) return failed(s);
  counters.add(report);
  return pixels;
}

}  // namespace hdl::ops
