#include "pipeline/epoch_order.h"

#include <numeric>

#include "pipeline/errors.h"
#include "pipeline/random.h"

namespace hdl {

LastBatch parse_last_batch(const std::string& name) {
  if (name == "drop") return LastBatch::kDrop;
  if (name == "partial") return LastBatch::kPartial;
  if (name == "pad") return LastBatch::kPad;
  if (name == "fill") return LastBatch::kFill;
  throw ConfigError("last_batch must be one of \"drop\", \"partial\", \"pad\", \"fill\", got \"" +
                    name + "\"");
}

namespace {

constexpr uint64_t kShuffleSalt = 0x53485546464c4530ull;  // "SHUFFLE0"

std::vector<int64_t> global_order(int64_t n, const SourceOperator::Sharding& s, uint64_t seed,
                                  int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  if (!s.shuffle || n < 2) return order;
  RandomStream rng(mix64(seed ^ kShuffleSalt), static_cast<uint64_t>(epoch), 0);
  if (s.shuffle_buffer <= 0 || s.shuffle_buffer >= n) {
    for (int64_t i = n - 1; i > 0; --i)  // Fisher-Yates
      std::swap(order[i], order[rng.below(static_cast<uint64_t>(i + 1))]);
    return order;
  }
  // Bounded buffer: fill, then emit a random element and put the next one in its place.
  std::vector<int64_t> out;
  out.reserve(order.size());
  std::vector<int64_t> buffer(order.begin(), order.begin() + s.shuffle_buffer);
  for (int64_t next = s.shuffle_buffer; next < n; ++next) {
    const size_t j = rng.below(buffer.size());
    out.push_back(buffer[j]);
    buffer[j] = next;
  }
  while (!buffer.empty()) {
    const size_t j = rng.below(buffer.size());
    out.push_back(buffer[j]);
    buffer[j] = buffer.back();
    buffer.pop_back();
  }
  return out;
}

}  // namespace

EpochOrder::EpochOrder(int64_t samples, int64_t batch_size, const SourceOperator::Sharding& s,
                     uint64_t seed, int64_t epoch, int64_t group)
    : batch_size_(batch_size), epoch_(epoch), last_batch_(parse_last_batch(s.last_batch)) {
  if (batch_size <= 0) throw ConfigError("batch_size must be >= 1");
  if (s.num_shards < 1 || s.shard_id < 0 || s.shard_id >= s.num_shards)
    throw ConfigError("shard_id must be in [0, num_shards)");
  if (group < 1 || samples % group != 0)
    throw ConfigError("epoch order: " + std::to_string(samples) + " samples do not split into groups of " +
                      std::to_string(group));
  const int64_t n = samples / group;  // the units shuffled and sharded
  std::vector<int64_t> all = global_order(n, s, seed, epoch);
  int64_t total = n;
  if (s.pad_shards && n > 0) total = (n + s.num_shards - 1) / s.num_shards * s.num_shards;
  order_.reserve(static_cast<size_t>((total / s.num_shards + 1) * group));
  for (int64_t i = s.shard_id; i < total; i += s.num_shards)
    for (int64_t j = 0; j < group; ++j) order_.push_back(all[i % n] * group + j);
  count_batches();
}

EpochOrder::EpochOrder(std::vector<int64_t> order, int64_t dataset_size, int64_t batch_size,
                     const std::string& last_batch, int64_t epoch)
    : order_(std::move(order)), batch_size_(batch_size), epoch_(epoch), last_batch_(parse_last_batch(last_batch)) {
  if (batch_size <= 0) throw ConfigError("batch_size must be >= 1");
  for (size_t i = 0; i < order_.size(); ++i)
    if (order_[i] < 0 || order_[i] >= dataset_size)
      throw ConfigError("epoch order: index " + std::to_string(order_[i]) + " at position " + std::to_string(i) +
                        " is outside the dataset (" + std::to_string(dataset_size) + " samples)");
  count_batches();
}

void EpochOrder::count_batches() {
  const int64_t m = shard_size();
  num_batches_ = last_batch_ == LastBatch::kDrop ? m / batch_size_ : (m + batch_size_ - 1) / batch_size_;
}

int64_t EpochOrder::batch_length(int64_t b) const {
  if (last_batch_ != LastBatch::kPartial || b + 1 < num_batches_) return batch_size_;
  return shard_size() - b * batch_size_;
}

int64_t EpochOrder::num_slots() const {
  return num_batches_ == 0 ? 0 : (num_batches_ - 1) * batch_size_ + batch_length(num_batches_ - 1);
}

int64_t EpochOrder::dataset_index(int64_t position) const {
  const int64_t m = shard_size();
  if (position < m) return order_[static_cast<size_t>(position)];
  if (last_batch_ == LastBatch::kPad) return order_.back();
  return order_[static_cast<size_t>(position % m)];
}

}  // namespace hdl
