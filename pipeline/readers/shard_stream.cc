#include "pipeline/readers/shard_stream.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "media/file_system.h"

namespace hdl {
namespace {

constexpr uint64_t kShardShuffleSalt = 0x5348415244534855ull;  // "SHARDSHU"
constexpr uint64_t kBufferSalt = 0x5354524d42554646ull;        // "STRMBUFF"

std::vector<int32_t> shard_order(int64_t n, bool shuffle, uint64_t seed, int64_t epoch) {
  std::vector<int32_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  if (!shuffle || n < 2) return order;
  RandomStream rng(mix64(seed ^ kShardShuffleSalt), static_cast<uint64_t>(epoch), 0);
  for (int64_t i = n - 1; i > 0; --i)  // Fisher-Yates, the same on every rank
    std::swap(order[static_cast<size_t>(i)], order[rng.below(static_cast<uint64_t>(i + 1))]);
  return order;
}

bool has_any(const StreamedSample& s, const std::vector<std::string>& wanted) {
  for (const std::string& w : wanted)
    if (s.find(w)) return true;
  return false;
}

}  // namespace

StreamPlan plan_rank_stream(int64_t num_shards, const std::vector<int64_t>& counts, bool shuffle, uint64_t seed,
                            int64_t epoch, int64_t rank, int64_t world) {
  StreamPlan plan;
  const std::vector<int32_t> order = shard_order(num_shards, shuffle, seed, epoch);
  if (!counts.empty()) {
    int64_t total = 0;
    for (int64_t c : counts) total += c;
    // Contiguous ranges of the shuffled concatenation (128-bit products: no overflow).
    const auto cut = [&](int64_t r) { return static_cast<int64_t>(static_cast<__int128>(total) * r / world); };
    const int64_t lo = cut(rank), hi = cut(rank + 1);
    plan.samples = hi - lo;
    int64_t at = 0;
    for (int32_t s : order) {
      const int64_t c = counts[static_cast<size_t>(s)];
      const int64_t begin = std::max(lo, at), end = std::min(hi, at + c);
      if (begin < end) plan.segments.push_back({s, begin - at, end - begin});
      at += c;
    }
    return plan;
  }
  if (num_shards >= world) {  // webdataset's split_by_node: whole shards rank, rank + world, ...
    for (size_t i = static_cast<size_t>(rank); i < order.size(); i += static_cast<size_t>(world))
      plan.segments.push_back({order[i], 0, -1});
    return plan;
  }
  for (int32_t s : order) plan.segments.push_back({s, 0, -1});  // fewer shards than ranks
  plan.stride = world;
  plan.phase = rank;
  return plan;
}

EpochStream::EpochStream(const StreamConfig& config, FileSystem& fs, int64_t epoch)
    : config_(config),
      fs_(fs),
      plan_(plan_rank_stream(static_cast<int64_t>(config.shards.size()), config.counts, config.shuffle, config.seed,
                             epoch, config.rank, config.world)),
      rng_key_(mix64(config.seed ^ kBufferSalt ^ mix64(static_cast<uint64_t>(config.rank)))),
      epoch_(static_cast<uint64_t>(epoch)) {}

EpochStream::~EpochStream() = default;

bool EpochStream::open_segment() {
  const StreamSegment& seg = plan_.segments[segment_];
  const std::string& path = config_.shards[static_cast<size_t>(seg.shard)];
  samples_.reset();
  file_.reset();
  ordinal_ = taken_ = 0;
  open_ = true;
  shards_opened_ += 1;
  Result<std::unique_ptr<RandomAccessFile>> f = fs_.open(path);
  if (!f.is_ok()) {
    open_error_ = f.status().with_context("tar shard \"" + path + "\"");
    return false;
  }
  file_ = std::move(*f);
  samples_ = std::make_unique<SampleStream>(
      open_member_stream(file_byte_source(*file_, 0, stream_read_ahead(path)), path, shard_compression(path), config_.limits), path,
      config_.sample_options);
  return true;
}

void EpochStream::close_segment() {
  samples_.reset();
  file_.reset();
  open_ = false;
  segment_ += 1;
}

bool EpochStream::next_input(StreamItem* out) {
  while (segment_ < plan_.segments.size()) {
    const StreamSegment& seg = plan_.segments[segment_];
    if (!open_ && !open_segment()) {  // the shard's one error item
      const bool mine = inputs_++ % plan_.stride == plan_.phase;
      close_segment();
      if (!mine) continue;
      *out = StreamItem{open_error_, {}, seg.shard, -1};
      return true;
    }
    if (seg.take >= 0 && taken_ >= seg.take) {
      close_segment();
      continue;
    }
    // Bytes are read from the call that returns the sample just before the range on (that call
    // also reads the first member of the next sample); a sample-level split reads them all.
    samples_->set_read_data(plan_.stride > 1 || ordinal_ + 1 >= seg.skip);
    StreamedSample s;
    Result<bool> more = samples_->next(&s);
    if (!more.is_ok() || !*more) {
      const bool in_range = ordinal_ >= seg.skip;
      const int32_t shard = seg.shard;
      const int64_t ordinal = ordinal_;
      close_segment();
      if (more.is_ok() || !in_range) continue;  // the end, or an error in another rank's part
      if (inputs_++ % plan_.stride != plan_.phase) continue;
      *out = StreamItem{more.status(), {}, shard,
                        config_.first.empty() ? -1 : config_.first[static_cast<size_t>(shard)] + ordinal};
      return true;
    }
    if (!config_.wanted.empty() && !has_any(s, config_.wanted)) continue;  // skip_missing: not a sample
    const int64_t ordinal = ordinal_++;
    if (ordinal < seg.skip) continue;
    taken_ += 1;
    if (inputs_++ % plan_.stride != plan_.phase) continue;
    *out = StreamItem{Status::ok(), std::move(s), seg.shard,
                      config_.first.empty() ? -1 : config_.first[static_cast<size_t>(seg.shard)] + ordinal};
    return true;
  }
  return false;
}

namespace {
int64_t bytes_of(const StreamItem& it) {
  int64_t n = 0;
  for (const StreamedField& f : it.sample.fields) n += int64_t(f.data.size());
  return n;
}
}  // namespace

StreamItem EpochStream::next() {
  const size_t want = static_cast<size_t>(config_.shuffle ? std::max<int64_t>(config_.shuffle_buffer, 1) : 1);
  for (int pass = 0; pass < 2; ++pass) {
    // B samples, or fewer once they hold TarLimits::max_buffered_bytes.
    while (buffer_.size() < want && (buffer_.empty() || buffered_bytes_ < config_.limits.max_buffered_bytes)) {
      StreamItem it;
      if (!next_input(&it)) break;
      buffered_bytes_ += bytes_of(it);
      buffer_.push_back(std::move(it));
    }
    buffer_bytes_peak_ = std::max(buffer_bytes_peak_, buffered_bytes_);
    buffer_peak_ = std::max(buffer_peak_, static_cast<int64_t>(buffer_.size()));
    if (!buffer_.empty()) break;
    // The segments are spent and the buffer drained: the epoch asks for more (padding, a
    // nominal length, a shard that failed part-way): read them again from the start.
    segment_ = 0;
    inputs_ = 0;
  }
  if (buffer_.empty())
    return StreamItem{Status::invalid_data("rank " + std::to_string(config_.rank) + " of " +
                                           std::to_string(config_.world) + ": its shards hold no sample"),
                      {}, -1, -1};
  size_t j = 0;
  if (buffer_.size() > 1) {
    RandomStream draw(rng_key_, epoch_, static_cast<uint64_t>(outputs_));
    j = static_cast<size_t>(draw.below(buffer_.size()));
  }
  outputs_ += 1;
  StreamItem out = std::move(buffer_[j]);
  if (j + 1 != buffer_.size()) buffer_[j] = std::move(buffer_.back());
  buffer_.pop_back();
  buffered_bytes_ -= bytes_of(out);
  return out;
}

}  // namespace hdl
