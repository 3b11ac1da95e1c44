// Streaming mode's epoch: which shards one rank reads front to back, and the samples that come
// out of its bounded shuffle buffer, in an order that is a pure function of (seed, epoch, rank,
// world) and the shards' contents (the same for any thread count, and on a replay).
//
// The plan (plan_rank_stream): the shards, shuffled per (seed, epoch) when asked (the same
// permutation on every rank), then split across the ranks:
//   - counts known (every shard's number of samples, from a counting pass or the index): the
//     concatenation of the shuffled shards is cut into `world` contiguous ranges of
//     floor(r*T/W) .. floor((r+1)*T/W) samples, so the ranks' counts differ by at most one and
//     every sample is in exactly one range, whatever the shard sizes and even with fewer shards
//     than ranks; a rank reads the shards its range touches, the first one or two partly (it
//     reads through the samples before its range, without their bytes for plain tar);
//   - counts unknown (a nominal epoch length was given): shards rank, rank + world, ... of the
//     shuffled list, whole (webdataset's split_by_node); with fewer shards than ranks, every
//     rank reads every shard and keeps the samples i with i % world == rank (a sample-level
//     split, reading world times the bytes).
// The rank's input sequence is its segments in order, repeated from the start when the epoch
// asks for more samples than they hold (padding to the longest rank, a nominal length, or a
// shard that failed part-way). The shuffle buffer (size B; 0: none; and at most
// TarLimits::max_buffered_bytes of samples, however few) fills with B inputs, then
// each output is a uniformly drawn element whose place the next input takes; its draws are one
// RandomStream per (seed, epoch, rank).
//
// A shard that cannot be opened or fails part-way (truncated, bad header, not a tar) gives one
// error item where its next sample would have been, naming the shard, the key and the byte
// offset; its remaining samples are lost, the next segment follows.
//
// Thread safety: an EpochStream is used by one thread at a time; plan_rank_stream is pure.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "media/api.h"
#include "media/status.h"
#include "pipeline/random.h"
#include "pipeline/readers/tar/tar_stream.h"

HDL_API_BEGIN
namespace hdl {

class FileSystem;

/// Part of a shard a rank reads: samples [skip, skip + take) (take -1: to the end).
struct StreamSegment {
  int32_t shard = 0;
  int64_t skip = 0;
  int64_t take = -1;
};

struct StreamPlan {
  std::vector<StreamSegment> segments;  ///< in reading order
  int64_t stride = 1;                   ///< keep every stride-th input (sample-level split)
  int64_t phase = 0;                    ///< ... starting at this one
  int64_t samples = -1;                 ///< inputs the segments hold (-1: unknown)
};

/// Rank `rank` of `world`'s plan for `epoch`. `counts`: every shard's samples (empty: unknown).
StreamPlan plan_rank_stream(int64_t num_shards, const std::vector<int64_t>& counts, bool shuffle, uint64_t seed,
                            int64_t epoch, int64_t rank, int64_t world);

/// What a stream needs of its reader.
struct StreamConfig {
  std::vector<std::string> shards;        ///< paths or URLs, in spec order
  std::vector<int64_t> counts;            ///< samples per shard (empty: unknown)
  std::vector<int64_t> first;             ///< global index of each shard's first sample (counts known)
  SampleStreamOptions sample_options;     ///< fields to keep
  std::vector<std::string> wanted;        ///< a sample without any of these is left out (skip_missing)
  bool shuffle = false;
  int64_t shuffle_buffer = 0;             ///< B
  uint64_t seed = 0;
  int64_t rank = 0, world = 1;
  TarLimits limits;
};

/// One sample out of a stream, or the error in its place.
struct StreamItem {
  Status error;              ///< not ok: this position fails with it
  StreamedSample sample;
  int32_t shard = -1;
  int64_t global_index = -1; ///< counts known: shard order then archive order; else -1
};

/// The samples of one (rank, epoch), front to back through the shuffle buffer.
class EpochStream {
 public:
  EpochStream(const StreamConfig& config, FileSystem& fs, int64_t epoch);
  ~EpochStream();
  /// The next output (the position after the last one returned).
  StreamItem next();
  int64_t buffer_peak() const { return buffer_peak_; }
  /// The most bytes the shuffle buffer held (TarLimits::max_buffered_bytes bounds it).
  int64_t buffer_bytes_peak() const { return buffer_bytes_peak_; }
  int64_t shards_opened() const { return shards_opened_; }

 private:
  // The next input (repeating the segments as needed); false when they hold nothing at all.
  bool next_input(StreamItem* out);
  bool open_segment();  // false: open_error_ says why
  void close_segment();

  const StreamConfig& config_;
  FileSystem& fs_;
  StreamPlan plan_;
  uint64_t rng_key_;          // the buffer's draws: one RandomStream per output position
  uint64_t epoch_;
  int64_t outputs_ = 0;
  size_t segment_ = 0;
  bool open_ = false;
  Status open_error_;
  std::unique_ptr<class RandomAccessFile> file_;
  std::unique_ptr<SampleStream> samples_;
  int64_t ordinal_ = 0;       // samples of the open shard read so far
  int64_t taken_ = 0;         // of the segment's
  int64_t inputs_ = 0;        // inputs seen (before the stride filter)
  std::vector<StreamItem> buffer_;
  int64_t buffer_peak_ = 0;
  int64_t buffered_bytes_ = 0, buffer_bytes_peak_ = 0;
  int64_t shards_opened_ = 0;
};

}  // namespace hdl
HDL_API_END
