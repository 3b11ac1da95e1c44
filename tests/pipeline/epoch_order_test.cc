#include "pipeline/epoch_order.h"

#include <gtest/gtest.h>

#include "pipeline/errors.h"

#include <algorithm>
#include <numeric>
#include <set>

namespace hdl {
namespace {

using Sharding = SourceOperator::Sharding;

std::vector<int64_t> slots(const EpochOrder& p) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < p.num_slots(); ++i) out.push_back(p.dataset_index(i));
  return out;
}

bool is_permutation_of_range(std::vector<int64_t> v, int64_t n) {
  std::sort(v.begin(), v.end());
  std::vector<int64_t> ref(n);
  std::iota(ref.begin(), ref.end(), 0);
  return v == ref;
}

TEST(EpochOrder, UnshuffledIsInOrder) {
  EpochOrder p(10, 4, Sharding{}, 1, 0);
  EXPECT_EQ(slots(p), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(EpochOrder, ShuffleIsAPermutationPerEpochAndDiffersBetweenEpochs) {
  Sharding s;
  s.shuffle = true;
  for (int64_t buffer : {0, 16}) {
    s.shuffle_buffer = buffer;
    std::set<std::vector<int64_t>> seen;
    for (int64_t epoch = 0; epoch < 5; ++epoch) {
      auto order = slots(EpochOrder(1000, 32, s, 7, epoch));
      EXPECT_TRUE(is_permutation_of_range(order, 1000)) << "buffer " << buffer;
      EXPECT_EQ(order, slots(EpochOrder(1000, 32, s, 7, epoch)));  // reproducible
      seen.insert(order);
    }
    EXPECT_EQ(seen.size(), 5u);
    EXPECT_NE(slots(EpochOrder(1000, 32, s, 7, 0)), slots(EpochOrder(1000, 32, s, 8, 0)));  // seed matters
  }
}

TEST(EpochOrder, ShuffleBufferKeepsReadsNearSequential) {
  Sharding s;
  s.shuffle = true;
  s.shuffle_buffer = 8;
  auto order = slots(EpochOrder(1000, 10, s, 3, 0));
  for (size_t i = 0; i < order.size(); ++i) EXPECT_LT(order[i], static_cast<int64_t>(i) + 8);
}

TEST(EpochOrder, ShardsAreDisjointAndCompleteFor1To8Shards) {
  for (bool shuffle : {false, true}) {
    for (int64_t n : {1, 7, 100, 1001}) {
      for (int64_t shards = 1; shards <= 8; ++shards) {
        std::vector<int64_t> all;
        for (int64_t k = 0; k < shards; ++k) {
          Sharding s{.shard_id = k, .num_shards = shards, .shuffle = shuffle};
          EpochOrder p(n, 5, s, 11, 2);
          auto mine = slots(p);
          EXPECT_LE(std::abs(p.shard_size() - n / shards), 1);
          all.insert(all.end(), mine.begin(), mine.end());
        }
        EXPECT_TRUE(is_permutation_of_range(all, n)) << n << " samples, " << shards << " shards";
      }
    }
  }
}

TEST(EpochOrder, PadShardsGivesEveryShardTheSameBatchCount) {
  for (int64_t shards = 1; shards <= 8; ++shards) {
    std::set<int64_t> batch_counts, sizes;
    std::set<int64_t> covered;
    for (int64_t k = 0; k < shards; ++k) {
      Sharding s{.shard_id = k, .num_shards = shards, .shuffle = true, .pad_shards = true};
      EpochOrder p(103, 4, s, 5, 0);
      batch_counts.insert(p.num_batches());
      sizes.insert(p.shard_size());
      for (auto i : slots(p)) covered.insert(i);
    }
    EXPECT_EQ(batch_counts.size(), 1u) << shards;
    EXPECT_EQ(sizes.size(), 1u) << shards;
    EXPECT_EQ(covered.size(), 103u);
  }
}

TEST(EpochOrder, LastBatchPolicies) {
  // 10 samples, batch 4.
  auto order = [](const char* policy) {
    Sharding s;
    s.last_batch = policy;
    return EpochOrder(10, 4, s, 0, 0);
  };
  EpochOrder drop = order("drop"), partial = order("partial"), pad = order("pad"), fill = order("fill");
  EXPECT_EQ(drop.num_batches(), 2);
  EXPECT_EQ(drop.num_slots(), 8);
  EXPECT_EQ(partial.num_batches(), 3);
  EXPECT_EQ(partial.batch_length(2), 2);
  EXPECT_EQ(partial.num_slots(), 10);
  EXPECT_EQ(pad.num_batches(), 3);
  EXPECT_EQ(pad.batch_length(2), 4);
  EXPECT_EQ(slots(pad), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9}));
  EXPECT_TRUE(pad.is_padding(10));
  EXPECT_FALSE(pad.is_padding(9));
  EXPECT_EQ(slots(fill), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1}));
  // Exact multiple: every policy gives the same full batches.
  for (const char* p : {"drop", "partial", "pad", "fill"}) {
    Sharding s;
    s.last_batch = p;
    EXPECT_EQ(EpochOrder(12, 4, s, 0, 0).num_batches(), 3) << p;
  }
}

TEST(EpochOrder, EmptyShard) {
  Sharding s{.shard_id = 3, .num_shards = 4};
  EpochOrder p(2, 4, s, 0, 0);
  EXPECT_EQ(p.shard_size(), 0);
  EXPECT_EQ(p.num_batches(), 0);
}

TEST(EpochOrder, GroupsMoveWholeAndInOrderThroughShuffleShardsAndPadding) {
  // 7 groups of 3 samples (a video reader's group_clips): the groups are what is shuffled,
  // padded and dealt to the shards; each group's samples follow each other in index order.
  Sharding s;
  s.shuffle = true;
  s.num_shards = 2;
  s.pad_shards = true;
  std::vector<int64_t> all;
  for (int64_t shard = 0; shard < 2; ++shard) {
    s.shard_id = shard;
    const auto order = slots(EpochOrder(21, 3, s, 5, 1, 3));
    ASSERT_EQ(order.size(), 12u) << "4 groups per shard (7 padded to 8)";
    for (size_t i = 0; i < order.size(); i += 3) {
      EXPECT_EQ(order[i] % 3, 0);
      EXPECT_EQ(order[i + 1], order[i] + 1);
      EXPECT_EQ(order[i + 2], order[i] + 2);
    }
    all.insert(all.end(), order.begin(), order.end());
  }
  all.resize(21);  // the 22nd-24th slots are the pad (a repeated group)
  std::vector<int64_t> groups;
  for (size_t i = 0; i < all.size(); i += 3) groups.push_back(all[i] / 3);
  // The group permutation is the sample permutation an ungrouped epoch of 7 samples gets.
  Sharding one = s;
  one.num_shards = 1, one.shard_id = 0, one.pad_shards = false;
  const auto ungrouped = slots(EpochOrder(7, 1, one, 5, 1));
  std::vector<int64_t> dealt;  // shard 0 takes even positions, shard 1 odd
  for (size_t i = 0; i < 8; i += 2) dealt.push_back(ungrouped[i % 7]);
  for (size_t i = 1; i < 8; i += 2) dealt.push_back(ungrouped[i % 7]);
  dealt.resize(7);
  EXPECT_EQ(groups, dealt);
  EXPECT_THROW(EpochOrder(20, 3, Sharding{}, 5, 1, 3), ConfigError);
}

}  // namespace
}  // namespace hdl
