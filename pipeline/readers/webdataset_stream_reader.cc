// webdataset_reader in streaming mode (mode "streaming", or "auto" with a compressed shard):
// every shard read front to back, shuffled shards and a bounded shuffle buffer
// (shard_stream.h), for storage where seeks cost and for compressed shards.
//
// How it fits SourceOperator: the rank split and the shuffle are the stream's, so the epoch
// the pipeline walks is the identity over this rank's N stream positions (sharding() says: no
// shuffle, one shard), and run() for dataset_index p takes the stream's p-th output. N is
//   - epoch_samples, when given (a nominal epoch, as webdataset's with_epoch; the rank's shards
//     are read again from the start when they hold fewer; nothing is counted: the first batch
//     comes as soon as its samples are read);
//   - else counted in prepare() (every shard's samples, in parallel: plain tar from its index
//     sidecar or headers, compressed tar by decompressing it once): the rank's range of the
//     shuffled concatenation, ceil(total / world) with pad_shards (the shorter ranks repeat
//     their first samples, as DistributedSampler pads), so that every sample is read exactly
//     once per epoch across the ranks and every rank has as many batches.
//
// Threads: one stream per epoch (the epoch after it is prefetched on its own), read by
// whichever worker needs a position not yet read, one output at a time under the stream's
// lock; outputs read for other positions wait in a map until their run() takes them. Memory:
// the shuffle buffer, the positions in flight (prefetch depth x batch size), and the last
// kKeepTaken outputs taken (a replacement after a skipped failure, or last_batch "pad", asks
// for a neighbour again). A position asked for again after that (last_batch "fill", a resume
// before the stream's position) is replayed: a new stream read from the epoch's start (counted
// in webdataset_stream_replays). start_at() (a resume) skips the positions before it unstored.
#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <tbb/parallel_for.h>

#include "media/file_system.h"
#include "media/url_file_system.h"
#include "pipeline/dataset.h"
#include "pipeline/errors.h"
#include "pipeline/operator.h"
#include "pipeline/readers/reader_args.h"
#include "pipeline/readers/shard_stream.h"
#include "pipeline/readers/tar/shard_index.h"
#include "pipeline/readers/tar/shard_sample.h"
#include "pipeline/readers/tar/shard_spec.h"
#include "pipeline/spec.h"

namespace hdl {
namespace {

using Item = std::shared_ptr<const StreamItem>;

// One epoch's stream and the outputs read but not yet taken.
struct EpochState {
  std::mutex produce_mu;  // held while the stream reads one output (taken before mu)
  std::mutex mu;          // the fields below
  std::unique_ptr<EpochStream> stream;
  int64_t next_output = 0;  // the stream's next position
  int64_t floor = 0;        // positions below it are not kept (start_at)
  std::map<int64_t, Item> ready;
  std::map<int64_t, Item> taken;  // the kKeepTaken highest positions taken
};

class StreamingShardReader final : public SourceOperator {
 public:
  static constexpr size_t kKeepTaken = 64;
  static constexpr int64_t kDefaultBuffer = 1000;  // shuffle with shuffle_buffer 0

  explicit StreamingShardReader(const NodeSpec& n)
      : sharding_(ops::parse_sharding(n)), fields_(split_field_names(n.get_string("field"))),
        label_field_(field_name(n.get_string("label_field"))), epoch_samples_(n.get_int("epoch_samples")) {
    if (fields_.empty()) throw ConfigError("argument \"field\" names no field (e.g. \"jpg;jpeg;png\")");
    order_.last_batch = sharding_.last_batch;  // the identity over this rank's positions
    const std::string root = n.get_string("file_root");
    Result<std::vector<std::string>> names = expand_shard_specs(n.get_strings("urls"));
    if (!names.is_ok()) throw ConfigError("argument \"urls\": " + names.status().message());
    if (names->empty()) throw ConfigError("argument \"urls\" names no shard");
    for (std::string& s : *names)
      config_.shards.push_back(root.empty() || s.front() == '/' || is_remote_url(s) ? s : root + "/" + s);
    config_.sample_options.fields = fields_;
    if (!label_field_.empty()) config_.sample_options.fields.push_back(label_field_);
    if (n.get_string("missing_field") == "skip") config_.wanted = fields_;
    config_.shuffle = sharding_.shuffle;
    config_.shuffle_buffer = sharding_.shuffle_buffer > 0 ? sharding_.shuffle_buffer : kDefaultBuffer;
    config_.seed = static_cast<uint64_t>(n.get_int("seed"));
    config_.rank = sharding_.shard_id;
    config_.world = sharding_.num_shards;
    index_options_.policy = n.get_string("index") == "read_only" ? IndexCachePolicy::kReadOnly
                            : n.get_string("index") == "none"    ? IndexCachePolicy::kNone
                            : n.get_string("index") == "rebuild" ? IndexCachePolicy::kRebuild
                                                                 : IndexCachePolicy::kReadWrite;
  }

  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec>) const override {
    return {TensorSpec{DType::kU8, Shape{-1}, Layout::kNone}, TensorSpec{DType::kI64, Shape{}, Layout::kNone},
            TensorSpec{DType::kI64, Shape{}, Layout::kNone}};
  }

  void prepare(FileSystem& fs) override {
    file_system_ = &fs;
    dataset_ = std::make_shared<Dataset>(Dataset::from_samples(config_.shards, {}));
    if (epoch_samples_ > 0) {
      num_samples_ = epoch_samples_;
      // Nothing is counted: the rank's nominal epoch, or all the ranks' when shuffled.
      distinct_samples_ = config_.shuffle ? epoch_samples_ * config_.world : epoch_samples_;
      return;
    }
    const size_t n = config_.shards.size();
    config_.counts.assign(n, 0);
    tbb::parallel_for(size_t{0}, n, [&](size_t s) { config_.counts[s] = count(fs, config_.shards[s]); });
    config_.first.assign(n, 0);
    int64_t total = 0;
    for (size_t s = 0; s < n; ++s) config_.first[s] = total, total += config_.counts[s];
    const StreamPlan plan = plan_rank_stream(static_cast<int64_t>(n), config_.counts, false, 0, 0, config_.rank,
                                             config_.world);
    num_samples_ = sharding_.pad_shards ? (total + config_.world - 1) / config_.world : plan.samples;
    // Shuffled, a rank's shards change from epoch to epoch; else it reads the same ones.
    distinct_samples_ = config_.shuffle ? total : plan.samples;
  }

  int64_t num_samples() const override { return num_samples_; }
  int64_t distinct_samples() const override { return distinct_samples_; }
  const Dataset& dataset() const override { return *dataset_; }
  const Sharding& sharding() const override { return order_; }
  bool stable_indices() const override { return false; }  // positions: another sample each epoch

  std::string describe_sample(int64_t sample) const override {
    return "streamed sample " + std::to_string(sample) + " (rank " + std::to_string(config_.rank) + " of " +
           std::to_string(config_.world) + ")";
  }

  void start_at(int64_t epoch, int64_t position) override {
    const std::shared_ptr<EpochState> st = state_for(epoch, true);
    std::lock_guard produce(st->produce_mu);
    std::lock_guard lock(st->mu);
    if (position < st->next_output) {  // behind the stream: a new one, read up to there unkept
      st->stream.reset();
      st->next_output = 0;
      st->ready.clear();
    }
    st->floor = position;
    st->ready.erase(st->ready.begin(), st->ready.lower_bound(position));
  }

  Status run(SampleIO& io) const override {
    const SampleInfo& info = io.sample();
    const Item item = take(io.file_system(), info.epoch, info.dataset_index);
    if (!item->error.is_ok()) return item->error;
    const StreamedSample& s = item->sample;
    const StreamedField* data = nullptr;
    for (const std::string& f : fields_)
      if ((data = s.find(f))) break;
    const std::string where = "tar shard \"" + s.url + "\": key \"" + s.key + "\": ";
    if (!data)
      return Status::invalid_data(where + "no field " + join_fields() + " in this sample (missing_field \"skip\" "
                                  "leaves such samples out)");
    int64_t label = -1;
    if (const StreamedField* l = label_field_.empty() ? nullptr : s.find(label_field_)) {
      const std::string_view text(reinterpret_cast<const char*>(l->data.data()), l->data.size());
      Result<int64_t> v = parse_class_index(text, label_field_, l->data_offset);
      if (!v.is_ok()) return Status(v.status().code(), where + v.status().message());
      label = *v;
    }
    HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, Shape{static_cast<int64_t>(data->data.size())}, DType::kU8,
                                                   Layout::kNone));
    std::copy(data->data.begin(), data->data.end(), static_cast<uint8_t*>(out.data));
    HDL_ASSIGN_OR_RETURN(TensorView l, io.output(1, Shape{}, DType::kI64, Layout::kNone));
    *l.typed<int64_t>() = label;
    HDL_ASSIGN_OR_RETURN(TensorView index, io.output(2, Shape{}, DType::kI64, Layout::kNone));
    *index.typed<int64_t>() = item->global_index;
    // Positions name other samples each epoch, but a shard and a key name the same one: the
    // key of per-sample caches (the JPEG entry-point index), which still check the bytes.
    io.set_content_key(std::hash<std::string_view>()(s.url) * 0x9E3779B97F4A7C15ull ^ std::hash<std::string_view>()(s.key));
    return Status::ok();
  }

  std::vector<std::pair<std::string, int64_t>> counters() const override {
    std::vector<std::pair<std::string, int64_t>> c = {
        {"webdataset_shards", static_cast<int64_t>(config_.shards.size())},
        {"webdataset_stream_samples", num_samples_},
        {"webdataset_stream_buffer_peak", buffer_peak_.load()},
        {"webdataset_stream_ready_peak", ready_peak_.load()},
        {"webdataset_stream_shards_opened", shards_opened_.load()},
        {"webdataset_stream_replays", replays_.load()}};
    if (file_system_)
      for (auto& kv : file_system_->counters()) c.push_back(std::move(kv));
    return c;
  }

 private:
  // Samples of one shard as the stream will see them (a failure part-way is one more: its
  // error item).
  int64_t count(FileSystem& fs, const std::string& shard) const {
    const auto keep = [&](const auto& has) {
      if (config_.wanted.empty()) return true;
      for (const std::string& w : config_.wanted)
        if (has(w)) return true;
      return false;
    };
    if (shard_compression(shard) == ShardCompression::kNone) {
      std::string warning;  // a stale sidecar is rebuilt; the indexed mode reports it
      Result<ShardIndex> index = load_or_build_index(fs, shard, index_options_, &warning);
      if (index.is_ok()) {
        int64_t k = 0;
        for (const IndexedSample& s : index->samples)
          k += keep([&](const std::string& w) {
            return std::any_of(s.fields.begin(), s.fields.end(), [&](const IndexedField& f) { return f.ext == w; });
          });
        return k;
      }
    }
    Result<std::unique_ptr<RandomAccessFile>> file = fs.open(shard);
    if (!file.is_ok()) return 1;
    SampleStreamOptions options = config_.sample_options;
    options.read_data = false;
    SampleStream samples(open_member_stream(file_byte_source(**file, 0, stream_read_ahead(shard)), shard,
                                             shard_compression(shard)),
                          shard, options);
    int64_t k = 0;
    StreamedSample s;
    for (;;) {
      Result<bool> more = samples.next(&s);
      if (!more.is_ok()) return k + 1;
      if (!*more) return k;
      k += keep([&](const std::string& w) { return s.find(w) != nullptr; });
    }
  }

  std::shared_ptr<EpochState> state_for(int64_t epoch, bool create) const {
    std::lock_guard lock(epochs_mu_);
    auto it = epochs_.find(epoch);
    if (it != epochs_.end()) return it->second;
    if (!create && epoch + 1 < max_epoch_) return nullptr;  // a late task of an old epoch
    auto st = std::make_shared<EpochState>();
    epochs_[epoch] = st;
    max_epoch_ = std::max(max_epoch_, epoch);
    epochs_.erase(epochs_.begin(), epochs_.lower_bound(epoch - 1));  // the prefetch spans two epochs
    while (epochs_.size() > 3) epochs_.erase(epochs_.begin());
    return st;
  }

  // Position `p` of `epoch`'s stream.
  Item take(FileSystem& fs, int64_t epoch, int64_t p) const {
    const std::shared_ptr<EpochState> st = p < num_samples_ ? state_for(epoch, false) : nullptr;
    if (!st) return replay(fs, epoch, p);
    auto taken_from = [&](std::map<int64_t, Item>::iterator it) {  // under st->mu
      Item item = std::move(it->second);
      st->ready.erase(it);
      st->taken[p] = item;
      while (st->taken.size() > kKeepTaken) st->taken.erase(st->taken.begin());
      return item;
    };
    {
      std::lock_guard lock(st->mu);
      if (auto it = st->ready.find(p); it != st->ready.end()) return taken_from(it);
      if (auto it = st->taken.find(p); it != st->taken.end()) return it->second;
      if (p < std::max(st->next_output, st->floor)) return replay(fs, epoch, p);
    }
    std::lock_guard produce(st->produce_mu);
    for (;;) {
      {
        std::lock_guard lock(st->mu);
        if (auto it = st->ready.find(p); it != st->ready.end()) return taken_from(it);
        if (auto it = st->taken.find(p); it != st->taken.end()) return it->second;
        if (p < st->next_output) break;  // read and gone meanwhile
      }
      if (!st->stream) st->stream = std::make_unique<EpochStream>(config_, fs, epoch);
      const int64_t before = st->stream->shards_opened();
      Item item = std::make_shared<const StreamItem>(st->stream->next());
      shards_opened_ += st->stream->shards_opened() - before;
      raise(buffer_peak_, st->stream->buffer_peak());
      std::lock_guard lock(st->mu);
      const int64_t o = st->next_output++;
      if (st->next_output >= num_samples_) st->stream.reset();  // the epoch is read: its file and buffer go
      if (o < st->floor) continue;
      st->ready[o] = std::move(item);
      raise(ready_peak_, static_cast<int64_t>(st->ready.size()));
    }
    return replay(fs, epoch, p);
  }

  // Position p read by a stream of its own from the epoch's start.
  Item replay(FileSystem& fs, int64_t epoch, int64_t p) const {
    replays_ += 1;
    EpochStream stream(config_, fs, epoch);
    for (int64_t i = 0; i < p; ++i) (void)stream.next();
    return std::make_shared<const StreamItem>(stream.next());
  }

  static void raise(std::atomic<int64_t>& peak, int64_t v) {
    int64_t seen = peak.load();
    while (v > seen && !peak.compare_exchange_weak(seen, v)) {
    }
  }

  std::string join_fields() const {
    std::string out;
    for (const std::string& f : fields_) out += (out.empty() ? "" : " or ") + f;
    return out;
  }

  Sharding sharding_;  // as given: the stream's rank split and shuffle
  Sharding order_;     // what the pipeline's EpochOrder walks: this rank's positions in order
  std::vector<std::string> fields_;
  std::string label_field_;
  int64_t epoch_samples_;
  IndexOptions index_options_;
  StreamConfig config_;  // counts filled by prepare()
  int64_t num_samples_ = 0;
  int64_t distinct_samples_ = 0;
  std::shared_ptr<const Dataset> dataset_;
  const FileSystem* file_system_ = nullptr;
  mutable std::mutex epochs_mu_;
  mutable std::map<int64_t, std::shared_ptr<EpochState>> epochs_;
  mutable int64_t max_epoch_ = 0;
  mutable std::atomic<int64_t> buffer_peak_{0}, ready_peak_{0}, shards_opened_{0}, replays_{0};
};

}  // namespace

std::unique_ptr<Operator> make_streaming_webdataset_reader(const NodeSpec& n) {
  return std::make_unique<StreamingShardReader>(n);
}

}  // namespace hdl
