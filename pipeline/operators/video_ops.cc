// Video operators: video_reader (a source: clips of the videos of a folder tree or file list,
// read and decoded) and video_decoder (one clip from a video's bytes in memory).
//
// Both decode through decoders/video_decoder.h (FFmpeg) into the clip's slot of the batch,
// optionally fused with the image_decoder's geometry (RandomResizedCrop, Resize, CenterCrop):
// one window is drawn per clip and every frame is cropped and resized with it, straight from
// the decoder's frame into the slot.
#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include <map>
#include <optional>

#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include "decoders/video_decoder.h"
#include "media/cuda/allocator.h"
#include "media/cuda/stream.h"
#include "media/file_system.h"
#include "pipeline/errors.h"
#include "pipeline/kernels/cuda/geometry.h"
#include "pipeline/kernels/cuda/resize.h"
#include "pipeline/kernels/cuda/workspace.h"
#include "pipeline/operator.h"
#include "pipeline/operators/decode_geometry.h"
#include "pipeline/operators/op_util.h"
#include "pipeline/operators/reader_args.h"
#include "pipeline/readers/clip_sampler.h"
#include "pipeline/readers/dataset.h"
#include "pipeline/readers/video_metadata_cache.h"
#include "pipeline/registry.h"
#include "pipeline/spec.h"

namespace hdl {
namespace {

// One clip's geometry, drawn once per sample (the window, then the filter, from the sample's
// random stream): the CPU decode and the device decode of a mixed reader use the same one.
struct ClipPlan {
  CropWindow window;
  FusedDecodeArgs args;  // this sample's (its filter drawn)
  DecodePlan plan;
};

// A mixed reader's per-thread device decoding: its own stream (so that each worker thread
// drives its own NVDEC session and kernels), decoder and kernel scratch.
struct DeviceDecode {
  cuda::Stream stream;
  std::unique_ptr<VideoDecoder> decoder;
  std::unique_ptr<kernels::cuda::DeviceWorkspace> workspace;
  StoragePtr scratch;  // a window resized whole before its crop is kept (resize + center crop)
};

struct VideoState final : OpState {
  explicit VideoState(const VideoDecoderOptions& o) : decoder(o) {}
  VideoDecoder decoder;
  kernels::ResizeWorkspace resize;
  std::unique_ptr<DeviceDecode> device;  // mixed reader, made on first use
};

// Counters shared by the worker threads.
struct VideoCounters {
  std::atomic<int64_t> probes{0}, clips{0}, frames_decoded{0}, seeks{0}, packets{0}, retries{0};
  const VideoMetadataCache* metadata = nullptr;  // the reader's metadata cache, if any
  void add(const VideoDecodeReport& r) {
    clips.fetch_add(1, std::memory_order_relaxed);
    frames_decoded.fetch_add(r.frames_decoded, std::memory_order_relaxed);
    seeks.fetch_add(r.seeks, std::memory_order_relaxed);
    packets.fetch_add(r.packets, std::memory_order_relaxed);
    retries.fetch_add(r.retries, std::memory_order_relaxed);
  }
  std::vector<std::pair<std::string, int64_t>> list() const {
    std::vector<std::pair<std::string, int64_t>> l = {
        {"video_probes", probes.load()},   {"video_clips", clips.load()},
        {"video_frames_decoded", frames_decoded.load()}, {"video_seeks", seeks.load()},
        {"video_packets", packets.load()}, {"video_retries", retries.load()}};
    if (metadata) {
      l.emplace_back("video_metadata_cache_hits", metadata->hits());
      l.emplace_back("video_metadata_cache_misses", metadata->misses());
    }
    return l;
  }
};

ClipSampling parse_sampling(const NodeSpec& n, ClipSampler sampler) {
  ClipSampling s;
  s.sampler = sampler;
  s.frames_per_clip = n.get_int("frames_per_clip");
  s.step = n.get_int("step");
  s.frame_rate = n.get_float("frame_rate");
  if (s.frame_rate < 0) throw ConfigError("argument \"frame_rate\" must be >= 0 (0: the video's own frames)");
  return s;
}

// What both operators do once a clip's frames are chosen: decode them into the output, each
// frame cropped and resized with one window per clip.
class ClipDecode {
 public:
  explicit ClipDecode(const NodeSpec& n)
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

  const VideoDecoderOptions& decoder_options() const { return options_; }

  TensorSpec spec() const {
    if (count_only_) return TensorSpec{DType::kI64, Shape{}, Layout::kNone};
    const int64_t t = frames_per_clip_ > 0 ? frames_per_clip_ : -1;
    const int64_t c = color_channels(options_.color);
    if (fused_.center_crop) return {DType::kU8, Shape{t, fused_.center_crop->h, fused_.center_crop->w, c}, Layout::kFHWC};
    if (fused_.resize.size() == 2) return {DType::kU8, Shape{t, fused_.resize[0], fused_.resize[1], c}, Layout::kFHWC};
    return {DType::kU8, Shape{t, -1, -1, c}, Layout::kFHWC};
  }

  bool count_only() const { return count_only_; }
  const FusedDecodeArgs& fused() const { return fused_; }

  /// The clip's geometry, drawn from the sample's random stream; nullopt when nothing is fused
  /// (whole frames, or frame counts).
  Result<std::optional<ClipPlan>> plan(SampleIO& io, VideoState& st, const VideoInfo& info) const {
    if (count_only_ || !fused_on_) return std::optional<ClipPlan>();
    const SizeHW image = frame_size(info);
    ClipPlan p;
    p.window = CropWindow{0, 0, image.h, image.w};
    if (random_crop_) {
      StreamDraws draws(io.rng());
      p.window = random_resized_crop_window(image, rrc_, draws);
    }
    FusedDecodeArgs scratch;
    p.args = sample_fused_args(fused_, io.rng(), scratch);
    HDL_ASSIGN_OR_RETURN(p.plan, plan_decode(image, p.window, p.args, 1, st.resize));
    return std::optional<ClipPlan>(std::move(p));
  }

  /// Draws the clip's geometry and decodes it on the CPU into output `output`.
  Status run(SampleIO& io, VideoState& st, const RandomAccessFile& file, const VideoInfo& info,
             const std::vector<int64_t>& frames, int output, VideoCounters& counters) const {
    HDL_ASSIGN_OR_RETURN(const std::optional<ClipPlan> p, plan(io, st, info));
    return decode_cpu(io, st, file, info, frames, p ? &*p : nullptr, output, counters);
  }

  /// Decodes the clip on the CPU with geometry `p` (from plan(): nullptr when nothing is fused).
  Status decode_cpu(SampleIO& io, VideoState& st, const RandomAccessFile& file, const VideoInfo& info,
                    const std::vector<int64_t>& frames, const ClipPlan* p, int output, VideoCounters& counters) const {
    VideoDecodeReport report;
    if (count_only_) {
      HDL_RETURN_IF_ERROR(st.decoder.decode_only(file, info, frames, &report));
      HDL_ASSIGN_OR_RETURN(TensorView out, io.output(output, Shape{}, DType::kI64, Layout::kNone));
      *out.typed<int64_t>() = static_cast<int64_t>(frames.size());
      counters.add(report);
      return Status::ok();
    }
    const int64_t t = static_cast<int64_t>(frames.size()), c = color_channels(options_.color);
    if (!p) {
      const SizeHW image = frame_size(info);
      HDL_ASSIGN_OR_RETURN(TensorView out, io.output(output, Shape{t, image.h, image.w, c}, DType::kU8, Layout::kFHWC));
      HDL_RETURN_IF_ERROR(st.decoder.decode_into(file, info, frames, out, &report));
      counters.add(report);
      return Status::ok();
    }
    const DecodePlan& plan = p->plan;
    HDL_ASSIGN_OR_RETURN(TensorView out, io.output(output, Shape{t, plan.out_size.h, plan.out_size.w, c},
                                                   DType::kU8, Layout::kFHWC));
    const bool padded = !(plan.dst_size == plan.out_size);
    auto sink = [&](int64_t k, const ConstTensorView& frame) -> Status {
      const TensorView slot = out.select(0, k, Layout::kHWC);
      if (padded)
        for (int64_t y = 0; y < plan.out_size.h; ++y)
          std::memset(slot.typed<uint8_t>() + y * slot.strides[0], 0, static_cast<size_t>(plan.out_size.w * c));
      const TensorView target = slot.crop_hw(plan.dst_in_output.y, plan.dst_in_output.x, plan.dst_size.h, plan.dst_size.w);
      const ConstTensorView region = frame.crop_hw(plan.roi.y, plan.roi.x, plan.roi.h, plan.roi.w);
      if (!plan.resample) {
        copy(region, target);
        return Status::ok();
      }
      return kernels::resize_window(region, plan.src_origin, plan.full_in, target, plan.dst_origin, plan.full_out,
                                    p->args.options, st.resize);
    };
    HDL_RETURN_IF_ERROR(st.decoder.decode(file, info, frames, sink, &report));
    counters.add(report);
    return Status::ok();
  }

  /// Decodes the clip's pixels on the device (dev's NVDEC session and stream) into a tensor from
  /// `pool` ([T, H, W, C] on the device, written by work queued on dev.stream), with geometry
  /// `p` as decode_cpu: the window resized whole on the device, then its kept part (the crop,
  /// zero padding) copied into place, which is what the CPU's windowed resize computes. Not
  /// for count_only.
  Result<Tensor> decode_device(DeviceDecode& dev, const RandomAccessFile& file, const VideoInfo& info,
                               const std::vector<int64_t>& frames, const ClipPlan* p, BufferPool& pool,
                               VideoCounters& counters) const {
    VideoDecodeReport report;
    const int64_t t = static_cast<int64_t>(frames.size()), c = color_channels(options_.color);
    const SizeHW image = frame_size(info);
    const SizeHW out_size = p ? p->plan.out_size : image;
    Tensor pixels = Tensor::empty(Shape{t, out_size.h, out_size.w, c}, DType::kU8, Layout::kFHWC, pool);
    // A clip that fails part-way may have work queued that writes its block: the block goes
    // back to the pool (for another thread's stream) only once that work is done.
    auto failed = [&](Status s) {
      (void)dev.stream.synchronize();
      return s;
    };
    if (!p) {
      if (Status s = dev.decoder->decode_into(file, info, frames, pixels.view(), &report); !s.is_ok()) return failed(s);
      counters.add(report);
      return pixels;
    }
    const DecodePlan& plan = p->plan;
    // Where the output's top-left pixel falls in the (resized) window: outside it is zero.
    const int64_t top = plan.dst_origin.y - plan.dst_in_output.y, left = plan.dst_origin.x - plan.dst_in_output.x;
    const TensorView whole = pixels.view();
    auto sink = [&](int64_t k, const ConstTensorView& frame) -> Status {
      const TensorView slot = whole.select(0, k, Layout::kHWC);
      if (!plan.resample)
        return kernels::cuda::crop(frame, plan.roi.y - plan.dst_in_output.y, plan.roi.x - plan.dst_in_output.x, slot,
                                   dev.stream);
      const ConstTensorView window = frame.crop_hw(p->window.top, p->window.left, p->window.height, p->window.width);
      if (top == 0 && left == 0 && plan.full_out == plan.out_size)
        return kernels::cuda::resize(window, slot, p->args.options, *dev.workspace, dev.stream);
      const size_t bytes = static_cast<size_t>(plan.full_out.h * plan.full_out.w * c);
      if (!dev.scratch || dev.scratch->capacity() < bytes) {
        HDL_RETURN_IF_ERROR(dev.stream.synchronize());  // the old block may still be read
        dev.scratch = Storage::allocate(cuda::device_allocator(dev.stream.device().index), bytes);
      }
      const TensorView resized(dev.scratch->data(), Shape{plan.full_out.h, plan.full_out.w, c}, DType::kU8, Layout::kHWC,
                               dev.stream.device());
      HDL_RETURN_IF_ERROR(kernels::cuda::resize(window, resized, p->args.options, *dev.workspace, dev.stream));
      return kernels::cuda::crop(resized, top, left, slot, dev.stream);
    };
    if (Status s = dev.decoder->decode(file, info, frames, sink, &report); !s.is_ok()) return failed(s);
    counters.add(report);
    return pixels;
  }

 private:
  SizeHW frame_size(const VideoInfo& info) const {
    return {options_.apply_rotation ? info.display_height() : info.height,
            options_.apply_rotation ? info.display_width() : info.width};
  }

  VideoDecoderOptions options_;
  RandomResizedCropParams rrc_;
  FusedDecodeArgs fused_;
  int64_t frames_per_clip_;
  bool random_crop_ = false, fused_on_ = false, count_only_ = false;
};

// The metadata of every video file, probed once (by prepare() for the contiguous sampler or a
// metadata cache, else by the first worker that needs it) and kept for the pipeline's life.
// Workers that need a file another worker is probing wait for that probe instead of probing
// it again. A failed probe is not kept: the next sample of that file tries again (the file may
// have been fixed or the error transient), and its error follows the error policy.
class InfoCache {
 public:
  using Info = std::shared_ptr<const VideoInfo>;
  explicit InfoCache(int64_t files) : infos_(static_cast<size_t>(files)), probing_(static_cast<size_t>(files), 0) {}

  Info find(int64_t f) const {
    std::lock_guard lock(stripe(f).mu);
    return infos_[static_cast<size_t>(f)];
  }
  void put(int64_t f, Info info) {
    std::lock_guard lock(stripe(f).mu);
    infos_[static_cast<size_t>(f)] = std::move(info);
  }
  /// File f's metadata: kept, or from `probe()` (called without the lock held; another caller
  /// of get() for f waits for it).
  template <typename Probe>
  Result<Info> get(int64_t f, Probe&& probe) {
    Stripe& s = stripe(f);
    const size_t i = static_cast<size_t>(f);
    {
      std::unique_lock lock(s.mu);
      s.done.wait(lock, [&] { return !probing_[i]; });
      if (infos_[i]) return infos_[i];
      probing_[i] = 1;
    }
    Result<Info> got = probe();
    {
      std::lock_guard lock(s.mu);
      probing_[i] = 0;
      if (got.is_ok()) infos_[i] = *got;
    }
    s.done.notify_all();
    return got;
  }

 private:
  static constexpr size_t kStripes = 64;
  struct Stripe {
    std::mutex mu;
    std::condition_variable done;  // a probe of this stripe finished
  };
  Stripe& stripe(int64_t f) const { return stripes_[static_cast<size_t>(f) % kStripes]; }
  mutable std::array<Stripe, kStripes> stripes_;
  std::vector<Info> infos_;
  std::vector<uint8_t> probing_;  // 1 while a worker probes the file
};

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

class VideoReader : public SourceOperator {
 public:
  explicit VideoReader(const NodeSpec& n)
      : dataset_(ops::parse_dataset(n, "video")), sharding_(ops::parse_sharding(n)),
        sampling_(parse_sampling(n, parse_clip_sampler(n.get_string("sampler")))), decode_(n) {
    sampling_.clips_per_video = n.get_int("clips_per_video");
    sampling_.clip_stride = n.get_int("clip_stride");
    if (sampling_.frames_per_clip == 0 && sampling_.sampler != ClipSampler::kContiguous && sampling_.clips_per_video != 1)
      throw ConfigError("frames_per_clip 0 (the whole video) takes clips_per_video 1");
    index_files();
    infos_ = std::make_unique<InfoCache>(static_cast<int64_t>(file_entry_.size()));
    describe_ = n.describe();
    metadata_path_ = n.get_string("metadata_cache");
  }

  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec>) const override {
    const int64_t t = sampling_.frames_per_clip > 0 ? sampling_.frames_per_clip : -1;
    return {decode_.spec(), TensorSpec{DType::kI64, Shape{}, Layout::kNone},
            TensorSpec{DType::kI64, Shape{t}, Layout::kNone}, TensorSpec{DType::kI64, Shape{}, Layout::kNone}};
  }

  void prepare(FileSystem& fs) override {
    if (!metadata_path_.empty()) load_metadata();
    // The contiguous sampler needs every video's length to count its clips; with a metadata
    // cache every sampler reads all of it now, so that the cache is complete once saved and
    // the next run starts without a probe. Otherwise it is read on a video's first use.
    clip_offsets_.clear();
    if (sampling_.sampler != ClipSampler::kContiguous && !metadata_) return;
    const int64_t files = static_cast<int64_t>(file_entry_.size());
    tbb::enumerable_thread_specific<VideoDecoder> decoders(decode_.decoder_options());
    tbb::parallel_for(int64_t{0}, files, [&](int64_t f) {
      // A file that cannot be opened or probed is left to its samples, which report why.
      if (auto file = fs.open(dataset_->path(file_entry_[f])); file.is_ok())
        if (auto info = read_metadata(f, **file, decoders.local()); info.is_ok()) infos_->put(f, *std::move(info));
    });
    if (metadata_ && metadata_->changed()) {
      if (Status st = metadata_->save(); !st.is_ok())
        std::fprintf(stderr, "hdl: %s: warning: the metadata cache was not saved (%s)\n", describe_.c_str(),
                     st.message().c_str());
    }
    if (sampling_.sampler != ClipSampler::kContiguous) return;
    const int64_t videos = dataset_->size();
    clip_offsets_.assign(1, 0);
    clip_offsets_.reserve(static_cast<size_t>(videos) + 1);
    for (int64_t v = 0; v < videos; ++v) clip_offsets_.push_back(clip_offsets_.back() + contiguous_clips_of(v));
  }

  int64_t num_samples() const override {
    if (sampling_.sampler == ClipSampler::kContiguous) return clip_offsets_.empty() ? 0 : clip_offsets_.back();
    return dataset_->size() * sampling_.clips_per_video;
  }

  int64_t file_index(int64_t sample) const override {
    if (sampling_.sampler != ClipSampler::kContiguous) return sample / sampling_.clips_per_video;
    return std::upper_bound(clip_offsets_.begin(), clip_offsets_.end(), sample) - clip_offsets_.begin() - 1;
  }

  Status run(SampleIO& io) const override {
    HDL_ASSIGN_OR_RETURN(const Clip clip, pick(io));
    HDL_RETURN_IF_ERROR(decode_.run(io, *static_cast<VideoState*>(io.state()), *clip.file, *clip.info, clip.frames, 0, counters_));
    return write_clip_outputs(io, clip);
  }

  std::unique_ptr<OpState> make_state() const override {
    return std::make_unique<VideoState>(decode_.decoder_options());
  }
  std::vector<std::pair<std::string, int64_t>> counters() const override { return counters_.list(); }
  const Dataset& dataset() const override { return *dataset_; }
  const Sharding& sharding() const override { return sharding_; }

 protected:
  // A sample's clip: its video, open file, metadata and frames (the start drawn from the
  // sample's random stream).
  struct Clip {
    int64_t video = 0;
    std::unique_ptr<RandomAccessFile> file;
    std::shared_ptr<const VideoInfo> info;
    std::vector<int64_t> frames;
  };

  Result<Clip> pick(SampleIO& io) const {
    const int64_t sample = io.sample().dataset_index;
    Clip c;
    c.video = file_index(sample);
    const int64_t k = sampling_.sampler == ClipSampler::kContiguous ? sample - clip_offsets_[c.video]
                                                                     : sample % sampling_.clips_per_video;
    auto& st = *static_cast<VideoState*>(io.state());
    HDL_ASSIGN_OR_RETURN(c.file, io.file_system().open(dataset_->path(c.video)));
    const int64_t f = file_of_[c.video];
    HDL_ASSIGN_OR_RETURN(c.info, infos_->get(f, [&] { return read_metadata(f, *c.file, st.decoder); }));
    HDL_ASSIGN_OR_RETURN(c.frames, frames_of(c.video, *c.info, k, io.rng()));
    return c;
  }

  // Outputs 1..3: label, frame indices, video index.
  Status write_clip_outputs(SampleIO& io, const Clip& clip) const {
    HDL_ASSIGN_OR_RETURN(TensorView label, io.output(1, Shape{}, DType::kI64, Layout::kNone));
    *label.typed<int64_t>() = dataset_->label(clip.video);
    HDL_ASSIGN_OR_RETURN(TensorView idx, io.output(2, Shape{static_cast<int64_t>(clip.frames.size())}, DType::kI64, Layout::kNone));
    std::copy(clip.frames.begin(), clip.frames.end(), idx.typed<int64_t>());
    HDL_ASSIGN_OR_RETURN(TensorView video, io.output(3, Shape{}, DType::kI64, Layout::kNone));
    *video.typed<int64_t>() = clip.video;
    return Status::ok();
  }

  const ClipDecode& clip_decode() const { return decode_; }
  VideoCounters& video_counters() const { return counters_; }

 private:
  // Entries naming the same path (segments of one video on several lines) share one file, so
  // that its metadata is read once.
  void index_files() {
    const int64_t n = dataset_->size();
    file_of_.resize(static_cast<size_t>(n));
    std::unordered_map<std::string_view, int64_t> seen;
    seen.reserve(static_cast<size_t>(n));
    for (int64_t v = 0; v < n; ++v) {
      const auto [it, added] = seen.try_emplace(dataset_->relative_path(v), static_cast<int64_t>(file_entry_.size()));
      if (added) file_entry_.push_back(v);
      file_of_[static_cast<size_t>(v)] = it->second;
    }
  }

  // File f's metadata: from the metadata cache when it holds a valid entry, else probed
  // (counted; kept in the cache, which prepare() saves).
  Result<std::shared_ptr<const VideoInfo>> read_metadata(int64_t f, const RandomAccessFile& file,
                                                         VideoDecoder& decoder) const {
    if (metadata_) {
      bool probed = false;
      Result<std::shared_ptr<const VideoInfo>> info =
          metadata_->get_or_probe(std::string(dataset_->relative_path(file_entry_[f])), file, decoder, &probed);
      if (probed) counters_.probes.fetch_add(1, std::memory_order_relaxed);
      return info;
    }
    HDL_ASSIGN_OR_RETURN(VideoInfo probed, decoder.probe(file));
    counters_.probes.fetch_add(1, std::memory_order_relaxed);
    return std::make_shared<const VideoInfo>(std::move(probed));
  }

  // Reads the metadata cache file once per pipeline; a corrupt one is rebuilt with a warning.
  void load_metadata() {
    if (metadata_) return;
    std::string note;
    try {
      metadata_ = VideoMetadataCache::load(metadata_path_, &note);
    } catch (const ConfigError& e) {
      throw ConfigError(describe_ + ": " + e.what());
    }
    if (!note.empty())
      std::fprintf(stderr, "hdl: %s: warning: metadata_cache \"%s\" is %s\n", describe_.c_str(), metadata_path_.c_str(),
                   note.c_str());
    counters_.metadata = metadata_.get();
  }

  // Entry v's timeline positions: the whole video, or its segment's. Errors name the segment
  // and where it was listed.
  Result<TimelineRange> range_of(int64_t v, const VideoInfo& info) const {
    if (!dataset_->has_segments()) return whole_timeline(info, sampling_.frame_rate);
    const Segment seg = dataset_->segment(v);
    Result<TimelineRange> range = segment_range(info, sampling_.frame_rate, seg);
    if (!range.is_ok()) return segment_error(v, range.status());
    return range;
  }

  Status segment_error(int64_t v, const Status& st) const {
    return Status(st.code(), "segment " + describe_segment(dataset_->segment(v)) + " (" + dataset_->source(v) +
                                 "): " + st.message());
  }

  Result<std::vector<int64_t>> frames_of(int64_t v, const VideoInfo& info, int64_t k, RandomStream& rng) const {
    if (!dataset_->has_segments()) return clip_frames(sampling_, info, k, rng);
    HDL_ASSIGN_OR_RETURN(const TimelineRange range, range_of(v, info));
    Result<std::vector<int64_t>> frames = clip_frames(sampling_, info, range, k, rng);
    if (!frames.is_ok()) return segment_error(v, frames.status());
    return frames;
  }

  // Contiguous: entry v's clips. One (failing) clip for a video that cannot be read or a
  // segment that makes no sense, so that the error is reported when it runs instead of the
  // entry vanishing unnoticed; none for a video or segment shorter than a clip (VideoClips).
  int64_t contiguous_clips_of(int64_t v) const {
    const std::shared_ptr<const VideoInfo> info = infos_->find(file_of_[v]);
    if (!info) return 1;
    const Result<TimelineRange> range = range_of(v, *info);
    return range.is_ok() ? contiguous_clips(sampling_, range->length()) : 1;
  }

  std::shared_ptr<const Dataset> dataset_;  // shared with the spec when given in memory
  Sharding sharding_;
  ClipSampling sampling_;
  ClipDecode decode_;
  std::vector<int64_t> file_of_;      // entry -> file (entries naming one path share it)
  std::vector<int64_t> file_entry_;   // file -> its first entry
  std::vector<int64_t> clip_offsets_;  // contiguous: first sample of each entry, and the total
  std::unique_ptr<InfoCache> infos_;  // by file
  std::string describe_;              // `video_reader "name"`, for warnings
  std::string metadata_path_;         // metadata_cache, or empty
  std::unique_ptr<VideoMetadataCache> metadata_;  // loaded by prepare()
  mutable VideoCounters counters_;
};

// Clips a mixed reader's host half decoded on the device, waiting for their batch's device
// half: by (epoch, position), the slot a sample fills (a replacement under on_error="skip"
// fills the same slot and replaces the entry).
class DeviceClips {
 public:
  struct Entry {
    Tensor pixels;      // [T, H, W, C] on the device, from the reader's pool
    cuda::Event ready;  // recorded on the host half's stream after the work writing `pixels`
  };

  void put(const SampleInfo& s, Entry e) {
    std::lock_guard lock(mu_);
    clips_[{s.epoch, s.position}] = std::move(e);
  }
  std::optional<Entry> take(const SampleInfo& s) {
    std::lock_guard lock(mu_);
    auto it = clips_.find({s.epoch, s.position});
    if (it == clips_.end()) return std::nullopt;
    Entry e = std::move(it->second);
    clips_.erase(it);
    return e;
  }

 private:
  std::mutex mu_;
  std::map<std::pair<int64_t, int64_t>, Entry> clips_;
};

// video_reader(device="mixed") (docs/VIDEO.md, "NVDEC"): clips decoded by the GPU's hardware
// video decoders where they can take the video, by CPU threads where not, into device batches.
//
// Host half (run, per clip on the cpu stage, a TBB task like every cpu operator): pick the clip
// and draw its geometry as the cpu reader does (same random stream, so the same clips, frames
// and windows for a seed), then decode it with this thread's NVDEC session (FFmpeg's cuda
// hwaccel, one session per worker thread: several threads keep several of the GPU's decoder
// engines busy) on this thread's stream; the YUV -> RGB kernel and the window's resize and crop
// write the clip into a device block, and an event recorded after them goes with it to the
// device half. The frames output stages an empty clip ([0, 0, 0, C]). A video NVDEC cannot take
// (codec, profile, chroma format, bit depth, size: FFmpeg's hwaccel refuses it) is remembered
// and decoded on the CPU from then on; a clip that fails on the device for another reason is
// decoded again on the CPU; the CPU's result, or its error under the pipeline's error policy,
// is what counts. CPU-decoded clips are staged in pinned memory, as a mixed image decoder's.
// Device half (run_batch, per batch in the device stage): the pipeline's stream waits for each
// device clip's event and copies it into the batch; staged CPU clips and the other outputs are
// uploaded. The blocks go back to the reader's pool after the batch's ready event.
class MixedVideoReader final : public VideoReader {
 public:
  explicit MixedVideoReader(const NodeSpec& n)
      : VideoReader(n), refused_(std::make_unique<std::atomic<uint8_t>[]>(static_cast<size_t>(dataset().size()))) {
    if (clip_decode().fused().options.pillow)
      throw ConfigError("on the mixed stage video_reader resizes with the gpu kernels: pillow resampling runs on the "
                        "cpu stage (device \"cpu\")");
  }

  Status run(SampleIO& io) const override {
    HDL_ASSIGN_OR_RETURN(const Clip clip, pick(io));
    auto& st = *static_cast<VideoState*>(io.state());
    const ClipDecode& decode = clip_decode();
    HDL_ASSIGN_OR_RETURN(const std::optional<ClipPlan> plan, decode.plan(io, st, *clip.info));
    const ClipPlan* p = plan ? &*plan : nullptr;
    if (!refused_[clip.video].load(std::memory_order_relaxed)) {
      Status s = decode_on_device(io, st, clip, p);
      if (s.is_ok()) {
        device_clips_.fetch_add(1, std::memory_order_relaxed);
        return write_clip_outputs(io, clip);
      }
      if (s.code() == StatusCode::kUnsupported) {
        if (!refused_[clip.video].exchange(1)) refused_videos_.fetch_add(1, std::memory_order_relaxed);
      } else {
        device_failures_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    HDL_RETURN_IF_ERROR(decode.decode_cpu(io, st, *clip.file, *clip.info, clip.frames, p, 0, video_counters()));
    cpu_clips_.fetch_add(1, std::memory_order_relaxed);
    return write_clip_outputs(io, clip);
  }

  Status run_batch(BatchIO& io) const override {
    cuda::Stream& stream = io.stream();
    const bool pixels = !clip_decode().count_only();
    for (int64_t s = 0; s < io.size(); ++s) {
      for (int i = 0; i < 4; ++i) {
        const ConstTensorView& staged = io.staged(i, s);
        if (i == 0 && pixels && staged.shape[0] == 0) {  // decoded on the device by the host half
          const SampleInfo& info = io.sample_io(s).sample();
          std::optional<DeviceClips::Entry> clip = clips_.take(info);
          if (!clip)
            return Status::internal("no device clip for sample " + std::to_string(info.dataset_index) + " at position " +
                                    std::to_string(info.position) + " of epoch " + std::to_string(info.epoch));
          HDL_RETURN_IF_ERROR(stream.wait(clip->ready));
          HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, s, clip->pixels.shape(), DType::kU8, Layout::kFHWC));
          HDL_RETURN_IF_ERROR(copy(clip->pixels.view(), out, stream));
          io.hold_until_ready(std::move(clip->pixels));
          continue;
        }
        HDL_ASSIGN_OR_RETURN(TensorView out, io.output(i, s, staged.shape, staged.dtype, staged.layout));
        HDL_RETURN_IF_ERROR(copy(staged, out, stream));
      }
    }
    return Status::ok();
  }

  std::vector<std::pair<std::string, int64_t>> counters() const override {
    std::vector<std::pair<std::string, int64_t>> c = VideoReader::counters();
    c.insert(c.end(), {{"video_device_clips", device_clips_.load()},
                       {"video_cpu_clips", cpu_clips_.load()},
                       {"video_device_refused_videos", refused_videos_.load()},
                       {"video_device_failures", device_failures_.load()}});
    return c;
  }

 private:
  // Decodes the clip with this thread's NVDEC session; ok when it is in clips_ (or, for frame
  // counts, in the staged output).
  Status decode_on_device(SampleIO& io, VideoState& st, const Clip& clip, const ClipPlan* p) const {
    HDL_ASSIGN_OR_RETURN(DeviceDecode* dev, device_decode(io, st));
    HDL_RETURN_IF_ERROR(dev->decoder->device_supports(*clip.info));
    if (clip_decode().count_only()) {
      VideoDecodeReport report;
      HDL_RETURN_IF_ERROR(dev->decoder->decode_only(*clip.file, *clip.info, clip.frames, &report));
      HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, Shape{}, DType::kI64, Layout::kNone));
      *out.typed<int64_t>() = static_cast<int64_t>(clip.frames.size());
      video_counters().add(report);
      return Status::ok();
    }
    Result<Tensor> pixels = clip_decode().decode_device(*dev, *clip.file, *clip.info, clip.frames, p,
                                                        pool(io.device()), video_counters());
    Result<cuda::Event> ready = pixels.is_ok() ? cuda::Event::create(io.device()) : Result<cuda::Event>(pixels.status());
    if (ready.is_ok()) {
      if (Status s = ready->record(dev->stream); !s.is_ok()) ready = s;
    }
    if (!ready.is_ok()) {
      if (pixels.is_ok()) (void)dev->stream.synchronize();  // the block is idle before it goes back to the pool
      return ready.status();
    }
    clips_.put(io.sample(), {std::move(pixels).value(), std::move(ready).value()});
    const int64_t c = color_channels(clip_decode().decoder_options().color);
    HDL_ASSIGN_OR_RETURN(TensorView none, io.output(0, Shape{0, 0, 0, c}, DType::kU8, Layout::kFHWC));
    (void)none;
    return Status::ok();
  }

  // This thread's device decoding, made on first use.
  Result<DeviceDecode*> device_decode(SampleIO& io, VideoState& st) const {
    if (!st.device) {
      const Device device = io.device();
      if (device.is_cpu()) return Status::unsupported("NVDEC: the pipeline has no device stage");
      auto dev = std::make_unique<DeviceDecode>();
      HDL_ASSIGN_OR_RETURN(dev->stream, cuda::Stream::create(device));
      VideoDecoderOptions o = clip_decode().decoder_options();
      o.device = device;
      o.cuda_stream = dev->stream.handle();
      o.threads = 1;
      dev->decoder = std::make_unique<VideoDecoder>(o);
      dev->workspace = std::make_unique<kernels::cuda::DeviceWorkspace>(device);
      st.device = std::move(dev);
    }
    return st.device.get();
  }

  // The pool of device clip blocks (made on first use, on the pipeline's device).
  BufferPool& pool(Device device) const {
    std::call_once(pool_once_, [&] { pool_ = std::make_unique<BufferPool>(cuda::device_allocator(device.index)); });
    return *pool_;
  }

  // Host -> device (a staged value) or device -> device (a device clip), in the stage's stream
  // order; one event, re-recorded (cuda::copy_async wants one; the stage's stream orders them).
  Status copy(const ConstTensorView& from, const TensorView& to, cuda::Stream& stream) const {
    if (!copied_) {
      HDL_ASSIGN_OR_RETURN(cuda::Event e, cuda::Event::create(stream.device()));
      copied_ = std::move(e);
    }
    return cuda::copy_async(from, to, stream, *copied_);
  }

  std::unique_ptr<std::atomic<uint8_t>[]> refused_;  // per video: NVDEC cannot take it
  mutable DeviceClips clips_;
  mutable std::once_flag pool_once_;
  mutable std::unique_ptr<BufferPool> pool_;
  mutable std::optional<cuda::Event> copied_;  // device half only (serialised by the stage)
  mutable std::atomic<int64_t> device_clips_{0}, cpu_clips_{0}, refused_videos_{0}, device_failures_{0};
};

class VideoDecoderOp final : public Operator {
 public:
  explicit VideoDecoderOp(const NodeSpec& n)
      : sampling_(parse_sampling(n, ClipSampler::kRandom)), decode_(n), start_(n.get_string("clip_start")) {}

  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec> in) const override {
    if (in[0].dtype != DType::kU8 || in[0].shape.ndim() != 1)
      throw ConfigError("input must be encoded bytes (uint8, 1-D), got " + std::string(dtype_name(in[0].dtype)) +
                        " " + in[0].shape.to_string());
    const int64_t t = sampling_.frames_per_clip > 0 ? sampling_.frames_per_clip : -1;
    return {decode_.spec(), TensorSpec{DType::kI64, Shape{t}, Layout::kNone}};
  }

  Status run(SampleIO& io) const override {
    const ConstTensorView& in = io.input(0);
    const std::unique_ptr<RandomAccessFile> file =
        memory_file({in.typed<uint8_t>(), static_cast<size_t>(in.num_elements())});
    auto& st = *static_cast<VideoState*>(io.state());
    HDL_ASSIGN_OR_RETURN(VideoInfo info, st.decoder.probe(*file));
    counters_.probes.fetch_add(1, std::memory_order_relaxed);
    HDL_RETURN_IF_ERROR(check_clip_fits(sampling_, info));
    const int64_t room = last_clip_start(sampling_, info);
    int64_t start = 0;
    if (start_ == "random") start = static_cast<int64_t>(io.rng().below(static_cast<uint64_t>(room + 1)));
    else if (start_ == "middle") start = room / 2;
    const std::vector<int64_t> frames = clip_frames_at(sampling_, info, start);
    HDL_RETURN_IF_ERROR(decode_.run(io, st, *file, info, frames, 0, counters_));
    HDL_ASSIGN_OR_RETURN(TensorView idx, io.output(1, Shape{static_cast<int64_t>(frames.size())}, DType::kI64, Layout::kNone));
    std::copy(frames.begin(), frames.end(), idx.typed<int64_t>());
    return Status::ok();
  }

  std::unique_ptr<OpState> make_state() const override {
    return std::make_unique<VideoState>(decode_.decoder_options());
  }
  std::vector<std::pair<std::string, int64_t>> counters() const override { return counters_.list(); }

 private:
  ClipSampling sampling_;
  ClipDecode decode_;
  std::string start_;
  mutable VideoCounters counters_;
};

}  // namespace

OpSchema video_reader_schema() {
  OpSchema s;
  s.name = "video_reader";
  s.doc = "Reads clips from the videos of a folder tree (classes = sorted subfolder names, labels as "
          "torchvision's ImageFolder / Kinetics assign them) or of a file list, and decodes them with FFmpeg on "
          "the pipeline's threads (any codec FFmpeg decodes; seeks to the keyframe before each clip and "
          "decodes only what the clip needs). Clips: frames_per_clip frames `step` apart; sampler random "
          "(clips_per_video random clips per video, new every epoch), uniform (clips_per_video evenly "
          "spaced, as torchvision's UniformClipSampler) or contiguous (every clip, clip_stride apart, as "
          "torchvision's VideoClips). Frame indices are presentation order; frame_rate samples by time. "
          "With segments (file_list_format \"path label start end\", or segments given in memory) clips "
          "are drawn inside each entry's segment only: the timeline positions whose time lies in [start, end); "
          "a segment that is empty, starts past its video's end or is shorter than a clip fails its samples "
          "(named, under the error policy; contiguous: no clips for one shorter than a clip). "
          "Metadata is read once per video (contiguous or with a metadata_cache: at start, in parallel; else on "
          "first use), never by decoding; metadata_cache keeps it on disk across runs. Optionally fused with "
          "RandomResizedCrop / Resize / CenterCrop, one window per clip. "
          "Samples are clips: shuffling, sharding and the last-batch policy apply to clips.";
  s.is_source = true;
  s.outputs = {{"frames", "[T, H, W, C] uint8 (FHWC), or the frame count (output \"count\")"},
               {"label", "the class index (int64 scalar)"},
               {"frame_indices", "[T] int64: the clip's frames (presentation order)"},
               {"video", "the entry's index in the dataset (int64 scalar: the video, or with segments the segment), e.g. to average clip scores per video"}};
  s.uses_randomness = true;
  s.args = ops::dataset_args("video", default_video_extensions());
  s.args.push_back(ops::file_list_format_arg());
  s.args.insert(s.args.end(), {
      {"sampler", ArgType::kString, ArgValue("random"), "random, uniform or contiguous", one_of({"random", "uniform", "contiguous"})},
      {"clips_per_video", ArgType::kInt, ArgValue(1), "random and uniform: clips drawn from each video per epoch", at_least(1)},
      {"clip_stride", ArgType::kInt, ArgValue(1), "contiguous: timeline positions between clip starts (VideoClips' frames_between_clips)", at_least(1)},
      {"metadata_cache", ArgType::kString, ArgValue(""), "a file keeping every video's metadata across runs (binary, versioned; keyed by the path relative to file_root, an entry valid while the file's size, modification time and a hash of its first and last 64 KiB are unchanged): read when the pipeline is built, every video missing from it or changed probed in parallel (with any sampler), and saved atomically (a temporary file renamed over it; processes sharing it: the last one wins) when something was added. A missing file is created, a corrupt one or one of another version rebuilt with one warning; a file that is not a metadata cache is refused. \"\": none (metadata is read once per run; contiguous: at start, else on first use)"},
  });
  for (ArgSchema& a : ops::sharding_args("clips")) s.args.push_back(std::move(a));
  for (ArgSchema& a : clip_args()) s.args.push_back(std::move(a));
  for (ArgSchema& a : decode_args()) s.args.push_back(std::move(a));
  s.stages = {Stage::kCpu, Stage::kMixed};
  s.create = [](const NodeSpec& n) { return std::make_unique<VideoReader>(n); };
  // device="mixed": NVDEC decodes the clips (CPU threads what it cannot take) into device
  // batches; gpu-stage operators follow (crop_mirror_normalize, ...).
  s.create_device = [](const NodeSpec& n) -> std::unique_ptr<Operator> { return std::make_unique<MixedVideoReader>(n); };
  return s;
}

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
  for (ArgSchema& a : clip_args()) s.args.push_back(std::move(a));
  for (ArgSchema& a : decode_args()) s.args.push_back(std::move(a));
  s.create = [](const NodeSpec& n) { return std::make_unique<VideoDecoderOp>(n); };
  return s;
}

}  // namespace hdl
