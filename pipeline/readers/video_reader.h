// video_reader: a source operator whose samples are clips of the videos of a folder tree or a
// file list (optionally segments of them). Which clips an epoch has comes from
// decode/clip_sampler.h (random, uniform, contiguous) and every video's metadata (probed once, in
// parallel, when the reader prepares; optionally kept across runs by
// decode/video_metadata_cache.h); the order, shards and last batch from the pipeline's
// EpochOrder, as for every source. A video shorter than one
// clip gives no clip (as torchvision's VideoClips): it is left out of the epoch's clip list at
// prepare() (counted in videos_too_short, named in one warning), so that the epoch's length,
// order, shards and resume are exact. With group_clips (random and uniform samplers) each video's
// clips_per_video clips are one group of the epoch (SourceOperator::sample_group()): videos
// are shuffled, sharded and padded, each video's clips follow each other in time order and
// run on one thread, whose decoder goes on from one clip to the next when the next lies ahead
// (VideoDecoder::hold_session) — torchcodec's clips_at_random_indices semantics. Each clip is
// decoded by the ClipOutput it shares with the video_decoder operator
// (pipeline/decode/clip_output.h) on the pipeline's threads.
//
// The mixed reader (mixed_video_reader.cc) derives from VideoReader: the same clips, decoded
// by NVDEC where it can take the video.
//
// Internal to pipeline/ (not installed; the schema is in registry.h). Thread safety: as every
// operator: immutable after prepare(), run() called concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "decoders/video_decoder.h"
#include "media/api.h"
#include "media/file_system.h"
#include "pipeline/dataset.h"
#include "pipeline/decode/clip_output.h"
#include "pipeline/decode/clip_sampler.h"
#include "pipeline/decode/video_metadata_cache.h"
#include "pipeline/operator.h"
#include "pipeline/spec.h"

HDL_API_BEGIN
namespace hdl {

class VideoInfoCache;
using ops::ClipOutput;
using ops::VideoCounters;
using ops::VideoState;

class VideoReader : public SourceOperator {
 public:
  explicit VideoReader(const NodeSpec& n);
  ~VideoReader() override;

  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec>) const override;
  void prepare(FileSystem& fs) override;
  int64_t num_samples() const override;
  int64_t file_index(int64_t sample) const override;
  Status run(SampleIO& io) const override;
  std::unique_ptr<OpState> make_state() const override;
  /// The video counters, and videos_too_short: the videos left out because they are shorter
  /// than one clip (known once prepare() has returned).
  std::vector<std::pair<std::string, int64_t>> counters() const override;
  const Dataset& dataset() const override { return *dataset_; }
  const Sharding& sharding() const override { return sharding_; }
  /// group_clips: clips_per_video (a video's clips stay together, in time order), else 1.
  int64_t sample_group() const override { return group_; }

 protected:
  // A sample's clip: its video, open file, metadata and frames (the start drawn from the
  // sample's random stream).
  struct Clip {
    int64_t video = 0;
    std::unique_ptr<RandomAccessFile> file;
    std::shared_ptr<const VideoInfo> info;
    std::vector<int64_t> frames;
    // group_clips: the frames of the video's later clips in the epoch (the decoder keeps those
    // it passes), ascending.
    std::vector<int64_t> upcoming;
  };

  Result<Clip> pick(SampleIO& io) const;
  // Outputs 1..3: label, frame indices, video index.
  Status write_clip_outputs(SampleIO& io, const Clip& clip) const;
  const ClipOutput& clip_output() const { return output_; }
  VideoCounters& video_counters() const { return counters_; }

 private:
  // Entries naming the same path (segments of one video on several lines) share one file, so
  // that its metadata is read once.
  void index_files();
  // File f's metadata: from the metadata cache when it holds a valid entry, else probed
  // (counted; kept in the cache, which prepare() saves).
  Result<std::shared_ptr<const VideoInfo>> read_metadata(int64_t f, const RandomAccessFile& file,
                                                         VideoDecoder& decoder) const;
  // Reads the metadata cache file once per pipeline; a corrupt one is rebuilt with a warning.
  void load_metadata();
  // Entry v's timeline positions: the whole video, or its segment's. Errors name the segment
  // and where it was listed.
  Result<TimelineRange> range_of(int64_t v, const VideoInfo& info) const;
  Status segment_error(int64_t v, const Status& st) const;
  Result<std::vector<int64_t>> frames_of(int64_t v, const VideoInfo& info, int64_t k, RandomStream& rng) const;
  // Entry v's clips in an epoch. A video that cannot be read (or a segment that makes no
  // sense) keeps its clips, which fail when they run with the reason, instead of the entry
  // vanishing unnoticed. A video shorter than one clip has none (torchvision's VideoClips);
  // contiguous: neither has a segment shorter than a clip (random and uniform: its clips fail,
  // naming the segment and where it was listed).
  int64_t clips_of(int64_t v) const;
  // The videos shorter than one clip: one warning naming them; ConfigError when no entry has
  // a clip at all and some were too short (naming the longest).
  void report_short_videos(const std::vector<int64_t>& short_entries) const;

  std::shared_ptr<const Dataset> dataset_;  // shared with the spec when given in memory
  Sharding sharding_;
  ClipSampling sampling_;
  ClipOutput output_;
  std::vector<int64_t> file_of_;       // entry -> file (entries naming one path share it)
  std::vector<int64_t> file_entry_;    // file -> its first entry
  std::vector<int64_t> clip_offsets_;  // first sample of each entry, and the total (prepare())
  int64_t group_ = 1;                  // sample_group()
  int64_t videos_too_short_ = 0;       // entries left out: videos shorter than one clip
  std::unique_ptr<VideoInfoCache> infos_;  // by file
  std::string describe_;               // `video_reader "name"`, for warnings
  std::string metadata_path_;          // metadata_cache, or empty
  std::unique_ptr<VideoMetadataCache> metadata_;  // loaded by prepare()
  mutable VideoCounters counters_;
};

/// video_reader(device="mixed"): mixed_video_reader.cc. Throws ConfigError.
std::unique_ptr<Operator> make_mixed_video_reader(const NodeSpec& n);

}  // namespace hdl
HDL_API_END
