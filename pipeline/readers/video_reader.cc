// video_reader: clips of the videos of a folder tree or file list, read and decoded on the
// pipeline's threads (video_reader.h). The mixed reader (NVDEC) is mixed_video_reader.cc.
#include "pipeline/readers/video_reader.h"

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include "pipeline/errors.h"
#include "media/file_system.h"
#include "pipeline/readers/reader_args.h"
#include "pipeline/registry.h"

namespace hdl {

// The metadata of every video file, probed once (by prepare() for the contiguous sampler or a
// metadata cache, else by the first worker that needs it) and kept for the pipeline's life.
// Workers that need a file another worker is probing wait for that probe instead of probing
// it again. A failed probe is not kept: the next sample of that file tries again (the file may
// have been fixed or the error transient), and its error follows the error policy.
class VideoInfoCache {
 public:
  using Info = std::shared_ptr<const VideoInfo>;
  explicit VideoInfoCache(int64_t files) : infos_(static_cast<size_t>(files)), probing_(static_cast<size_t>(files), 0) {}

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

VideoReader::VideoReader(const NodeSpec& n)
    : dataset_(ops::parse_dataset(n, "video")), sharding_(ops::parse_sharding(n)),
      sampling_(ops::parse_sampling(n, parse_clip_sampler(n.get_string("sampler")))), output_(n) {
  sampling_.clips_per_video = n.get_int("clips_per_video");
  sampling_.clip_stride = n.get_int("clip_stride");
  if (n.get_bool("group_clips")) {
    if (sampling_.sampler == ClipSampler::kContiguous)
      throw ConfigError(n.describe() + ": group_clips takes the random or uniform sampler (contiguous clips of a "
                        "video are already adjacent without shuffle)");
    sampling_.grouped = sampling_.sampler == ClipSampler::kRandom;
    group_ = sampling_.clips_per_video;
  }
  if (sampling_.frames_per_clip == 0 && sampling_.sampler != ClipSampler::kContiguous && sampling_.clips_per_video != 1)
    throw ConfigError("frames_per_clip 0 (the whole video) takes clips_per_video 1");
  index_files();
  infos_ = std::make_unique<VideoInfoCache>(static_cast<int64_t>(file_entry_.size()));
  describe_ = n.describe();
  metadata_path_ = n.get_string("metadata_cache");
}

std::vector<TensorSpec> VideoReader::infer_outputs(std::span<const TensorSpec>) const {
  const int64_t t = sampling_.frames_per_clip > 0 ? sampling_.frames_per_clip : -1;
  return {output_.spec(), TensorSpec{DType::kI64, Shape{}, Layout::kNone},
          TensorSpec{DType::kI64, Shape{t}, Layout::kNone}, TensorSpec{DType::kI64, Shape{}, Layout::kNone}};
}

void VideoReader::prepare(FileSystem& fs) {
  if (!metadata_path_.empty()) load_metadata();
  // Every video's length is needed now, whatever the sampler: a video shorter than one clip is
  // left out of the epoch's clip list, so the list (its length, order, shards, resume point)
  // is known before the first sample. Probing is demuxing (no decoding), in parallel on the
  // pipeline's threads; with a metadata cache only what the cache lacks is probed, and the
  // cache is complete once saved, so the next run starts without a probe.
  clip_offsets_.clear();
  const int64_t files = static_cast<int64_t>(file_entry_.size());
  tbb::enumerable_thread_specific<VideoDecoder> decoders(output_.decoder_options());
  tbb::parallel_for(int64_t{0}, files, [&](int64_t f) {
    if (infos_->find(f)) return;  // a second prepare() of the same reader
    // A file that cannot be opened or probed is left to its samples, which report why.
    if (auto file = fs.open(dataset_->path(file_entry_[f])); file.is_ok())
      if (auto info = read_metadata(f, **file, decoders.local()); info.is_ok()) infos_->put(f, *std::move(info));
  });
  if (metadata_ && metadata_->changed()) {
    if (Status st = metadata_->save(); !st.is_ok())
      std::fprintf(stderr, "hdl: %s: warning: the metadata cache was not saved (%s)\n", describe_.c_str(),
                   st.message().c_str());
  }
  const int64_t videos = dataset_->size();
  clip_offsets_.assign(1, 0);
  clip_offsets_.reserve(static_cast<size_t>(videos) + 1);
  std::vector<int64_t> short_entries;
  for (int64_t v = 0; v < videos; ++v) {
    const int64_t n = clips_of(v);
    if (n < 0) short_entries.push_back(v);
    clip_offsets_.push_back(clip_offsets_.back() + std::max<int64_t>(n, 0));
  }
  videos_too_short_ = static_cast<int64_t>(short_entries.size());
  if (!short_entries.empty()) report_short_videos(short_entries);
}

int64_t VideoReader::num_samples() const { return clip_offsets_.empty() ? 0 : clip_offsets_.back(); }

int64_t VideoReader::file_index(int64_t sample) const {
  return std::upper_bound(clip_offsets_.begin(), clip_offsets_.end(), sample) - clip_offsets_.begin() - 1;
}

std::vector<std::pair<std::string, int64_t>> VideoReader::counters() const {
  std::vector<std::pair<std::string, int64_t>> c = counters_.list();
  c.emplace_back("videos_too_short", videos_too_short_);
  return c;
}

Status VideoReader::run(SampleIO& io) const {
  HDL_ASSIGN_OR_RETURN(const Clip clip, pick(io));
  auto& st = *static_cast<VideoState*>(io.state());
  // The thread's decoder keeps this video open: its next clip of it, if it lies ahead (the
  // next clip of an ordered eval, a contiguous or uniform sampler, the next clip of a group),
  // goes on decoding instead of starting again from the keyframe; with group_clips it also
  // keeps the frames of the group's later clips that it passes.
  st.decoder.hold_session(clip.info, clip.upcoming);
  HDL_RETURN_IF_ERROR(output_.run(io, st, *clip.file, *clip.info, clip.frames, 0, counters_));
  return write_clip_outputs(io, clip);
}

std::unique_ptr<OpState> VideoReader::make_state() const {
  return std::make_unique<VideoState>(output_.decoder_options());
}

Result<VideoReader::Clip> VideoReader::pick(SampleIO& io) const {
  const int64_t sample = io.sample().dataset_index;
  Clip c;
  c.video = file_index(sample);
  const int64_t k = sample - clip_offsets_[static_cast<size_t>(c.video)];
  auto& st = *static_cast<VideoState*>(io.state());
  HDL_ASSIGN_OR_RETURN(c.file, io.file_system().open(dataset_->path(c.video)));
  const int64_t f = file_of_[c.video];
  HDL_ASSIGN_OR_RETURN(c.info, infos_->get(f, [&] { return read_metadata(f, *c.file, st.decoder); }));
  if (group_ > 1) {
    // Every clip of the video draws the video's starts from the video's stream (random), and
    // the decoder is told the frames of the clips after this one.
    auto clip_of = [&](int64_t j) {
      RandomStream video_rng = io.item_rng(static_cast<uint64_t>(c.video));
      return frames_of(c.video, *c.info, j, video_rng);
    };
    HDL_ASSIGN_OR_RETURN(c.frames, clip_of(k));
    for (int64_t j = k + 1; j < group_; ++j) {
      Result<std::vector<int64_t>> later = clip_of(j);
      if (!later.is_ok()) break;
      c.upcoming.insert(c.upcoming.end(), later->begin(), later->end());
    }
  } else {
    HDL_ASSIGN_OR_RETURN(c.frames, frames_of(c.video, *c.info, k, io.rng()));
  }
  return c;
}

Status VideoReader::write_clip_outputs(SampleIO& io, const Clip& clip) const {
  HDL_ASSIGN_OR_RETURN(TensorView label, io.output(1, Shape{}, DType::kI64, Layout::kNone));
  *label.typed<int64_t>() = dataset_->label(clip.video);
  HDL_ASSIGN_OR_RETURN(TensorView idx, io.output(2, Shape{static_cast<int64_t>(clip.frames.size())}, DType::kI64, Layout::kNone));
  std::copy(clip.frames.begin(), clip.frames.end(), idx.typed<int64_t>());
  HDL_ASSIGN_OR_RETURN(TensorView video, io.output(3, Shape{}, DType::kI64, Layout::kNone));
  *video.typed<int64_t>() = clip.video;
  return Status::ok();
}

void VideoReader::index_files() {
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

Result<std::shared_ptr<const VideoInfo>> VideoReader::read_metadata(int64_t f, const RandomAccessFile& file,
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

void VideoReader::load_metadata() {
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

Result<TimelineRange> VideoReader::range_of(int64_t v, const VideoInfo& info) const {
  if (!dataset_->has_segments()) return whole_timeline(info, sampling_.frame_rate);
  const Segment seg = dataset_->segment(v);
  Result<TimelineRange> range = segment_range(info, sampling_.frame_rate, seg);
  if (!range.is_ok()) return segment_error(v, range.status());
  return range;
}

Status VideoReader::segment_error(int64_t v, const Status& st) const {
  return Status(st.code(), "segment " + describe_segment(dataset_->segment(v)) + " (" + dataset_->source(v) +
                               "): " + st.message());
}

Result<std::vector<int64_t>> VideoReader::frames_of(int64_t v, const VideoInfo& info, int64_t k,
                                                    RandomStream& rng) const {
  if (!dataset_->has_segments()) return clip_frames(sampling_, info, k, rng);
  HDL_ASSIGN_OR_RETURN(const TimelineRange range, range_of(v, info));
  Result<std::vector<int64_t>> frames = clip_frames(sampling_, info, range, k, rng);
  if (!frames.is_ok()) return segment_error(v, frames.status());
  return frames;
}

int64_t VideoReader::clips_of(int64_t v) const {
  const bool contiguous = sampling_.sampler == ClipSampler::kContiguous;
  const int64_t unknown = contiguous ? 1 : sampling_.clips_per_video;  // its samples say why
  const std::shared_ptr<const VideoInfo> info = infos_->find(file_of_[v]);
  if (!info) return unknown;
  if (!check_clip_fits(sampling_, *info).is_ok()) return -1;
  if (!dataset_->has_segments()) return contiguous ? contiguous_clips(sampling_, timeline_length(*info, sampling_.frame_rate)) : unknown;
  if (!contiguous) return unknown;
  const Result<TimelineRange> range = range_of(v, *info);
  return range.is_ok() ? contiguous_clips(sampling_, range->length()) : 1;
}

void VideoReader::report_short_videos(const std::vector<int64_t>& short_entries) const {
  const int64_t span = sampling_.frames_per_clip == 0 ? 1 : sampling_.span();
  auto length = [&](int64_t v) { return timeline_length(*infos_->find(file_of_[v]), sampling_.frame_rate); };
  auto named = [&](int64_t v) {
    return "\"" + std::string(dataset_->relative_path(v)) + "\" (" + std::to_string(length(v)) +
           (sampling_.frame_rate > 0 ? " positions at the clip frame rate)" : " frames)");
  };
  const std::string needs = "one clip needs " + std::to_string(span) + (sampling_.frame_rate > 0 ? " positions" : " frames") +
                            " (frames_per_clip " + std::to_string(sampling_.frames_per_clip) + ", step " +
                            std::to_string(sampling_.step) + ")";
  if (num_samples() == 0) {
    const auto [lo, hi] = std::minmax_element(short_entries.begin(), short_entries.end(),
                                              [&](int64_t a, int64_t b) { return length(a) < length(b); });
    throw ConfigError(describe_ + ": no video is long enough for one clip: " + needs + "; the longest is " +
                      named(*hi) + ", the shortest " + named(*lo));
  }
  std::string list;
  constexpr size_t kNamed = 8;
  for (size_t i = 0; i < short_entries.size() && i < kNamed; ++i) list += (i ? ", " : "") + named(short_entries[i]);
  if (short_entries.size() > kNamed) list += " and " + std::to_string(short_entries.size() - kNamed) + " more";
  std::fprintf(stderr, "hdl: %s: warning: %zu of %lld videos give no clip (as in torchvision's VideoClips), %s: %s\n",
               describe_.c_str(), short_entries.size(), static_cast<long long>(dataset_->size()), needs.c_str(),
               list.c_str());
}

VideoReader::~VideoReader() = default;

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
          "A video shorter than one clip gives no clip (as torchvision's VideoClips): it is left out of the epoch "
          "(counted in the videos_too_short counter, named in one warning; no video long enough is an error). "
          "Metadata is read once per video, at start, in parallel, never by decoding; metadata_cache keeps it on "
          "disk across runs. Optionally fused with "
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
      {"group_clips", ArgType::kBool, ArgValue(false), "random and uniform: keep each video's clips_per_video clips together in the epoch, in time order (the epoch shuffles, shards and pads videos, not clips), decoded by one thread in one pass where a clip lies after the previous one (torchcodec's clips_at_random_indices). Random starts are then drawn per (seed, epoch, video), sorted: the same distribution as without grouping, a different draw. The contiguous sampler refuses it"},
      {"metadata_cache", ArgType::kString, ArgValue(""), "a file keeping every video's metadata across runs (binary, versioned; keyed by the path relative to file_root, an entry valid while the file's size, modification time and a hash of its first and last 64 KiB are unchanged): read when the pipeline is built, every video missing from it or changed probed in parallel (with any sampler), and saved atomically (a temporary file renamed over it; processes sharing it: the last one wins) when something was added. A missing file is created, a corrupt one or one of another version rebuilt with one warning; a file that is not a metadata cache is refused. \"\": none (metadata is read once per run, at start)"},
  });
  for (ArgSchema& a : ops::sharding_args("clips")) s.args.push_back(std::move(a));
  for (ArgSchema& a : ops::clip_args()) s.args.push_back(std::move(a));
  for (ArgSchema& a : ops::decode_args()) s.args.push_back(std::move(a));
  s.stages = {Stage::kCpu, Stage::kMixed};
  s.create = [](const NodeSpec& n) { return std::make_unique<VideoReader>(n); };
  // device="mixed": NVDEC decodes the clips (CPU threads what it cannot take) into device
  // batches; gpu-stage operators follow (crop_mirror_normalize, ...).
  s.create_device = [](const NodeSpec& n) -> std::unique_ptr<Operator> { return make_mixed_video_reader(n); };
  return s;
}

}  // namespace hdl
