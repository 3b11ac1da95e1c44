// EpochOrder: which dataset sample fills each slot of an epoch, for one shard.
//
// The order is a pure function of (dataset size, batch size, sharding options, seed, epoch):
//   1. the whole dataset in order, or shuffled: a full permutation (Fisher-Yates) or a bounded
//      shuffle buffer (tf.data style: reads stay near-sequential), seeded by (seed, epoch) and
//      identical on every shard;
//   2. with pad_shards, extended by wrapping around to a multiple of num_shards (as torch's
//      DistributedSampler does), so every shard gets the same number of samples and batches;
//   3. shard k takes every num_shards-th sample starting at k: shards are disjoint (apart from
//      the pad_shards wrap) and together cover the dataset;
//   4. the last batch: drop (incomplete batch dropped), partial (smaller last batch),
//      pad (filled by repeating the shard's last sample), fill (filled by wrapping around to
//      the shard's first samples).
//
// With samples in groups (SourceOperator::sample_group() = G > 1: dataset indices gG .. gG+G-1
// form group g, e.g. one video's clips), steps 1-3 move whole groups: the groups are shuffled
// (the same permutation as G = 1 gives for that many samples), padded and dealt to the shards
// group by group, and each group's samples follow each other in index order. Step 4 is per
// sample (a group may straddle two batches).
//
// Thread safety: immutable after construction.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "media/api.h"
#include "pipeline/operator.h"

HDL_API_BEGIN
namespace hdl {

enum class LastBatch { kDrop, kPartial, kPad, kFill };
/// Parses "drop", "partial", "pad", "fill". Throws ConfigError otherwise.
LastBatch parse_last_batch(const std::string& name);

class EpochOrder {
 public:
  /// `group`: SourceOperator::sample_group() (dataset_size must be a multiple of it;
  /// ConfigError otherwise).
  EpochOrder(int64_t dataset_size, int64_t batch_size, const SourceOperator::Sharding& sharding,
            uint64_t seed, int64_t epoch, int64_t group = 1);
  /// An epoch that walks `order` (dataset indices chosen by the caller, e.g. a torch sampler;
  /// already sharded), with the sharding's last-batch policy. Throws ConfigError for an index
  /// outside [0, dataset_size).
  EpochOrder(std::vector<int64_t> order, int64_t dataset_size, int64_t batch_size,
            const std::string& last_batch, int64_t epoch);

  /// Samples of this shard this epoch, before the last-batch policy.
  int64_t shard_size() const { return static_cast<int64_t>(order_.size()); }
  int64_t num_batches() const { return num_batches_; }
  int64_t batch_size() const { return batch_size_; }
  int64_t epoch() const { return epoch_; }
  /// Samples in batch b (smaller than batch_size only for the last batch under partial).
  int64_t batch_length(int64_t b) const;
  /// Slots handed out over the whole epoch (sum of batch lengths).
  int64_t num_slots() const;
  /// The dataset index filling slot `position` (0 <= position < num_slots()).
  int64_t dataset_index(int64_t position) const;
  /// True for slots beyond shard_size() (filled by pad or fill).
  bool is_padding(int64_t position) const { return position >= shard_size(); }

 private:
  void count_batches();

  std::vector<int64_t> order_;  // this shard's dataset indices, in epoch order
  int64_t batch_size_;
  int64_t epoch_;
  int64_t num_batches_ = 0;
  LastBatch last_batch_;
};

}  // namespace hdl
HDL_API_END
