// webdataset_reader: the samples of WebDataset tar shards, read in indexed mode (the third
// worked example of SourceOperator, beside file_reader.cc and video_reader.cc).
//
// prepare() expands the shard specs, then loads or builds every shard's index in parallel
// (tar/shard_index.h: the stamped sidecar "<shard>.idx", built from the header blocks on first
// open) and keeps, per sample, only what run() needs: its shard, its key, and the (offset,
// size) of the field output 0 reads and of the label field. The samples of all shards, in
// shard order then archive order, are the dataset: an epoch is the pipeline's EpochOrder over
// them, so the global shuffle per (seed, epoch), the sample-level split across ranks
// (shard_id / num_shards, pad_shards), the last-batch policy and exact resume are the same as
// for every other reader, for any thread count. run() reads a field with one pread through
// the pipeline's FileSystem (the last 256 shards used stay open, shared by the threads); from
// a remote shard (a URL) the data and the label come in one range read (one request).
//
// A shard whose index cannot be built (not a tar, truncated, a bad header, duplicate keys) or
// that cannot be opened becomes one sample that fails with that error when it runs, under the
// pipeline's error policy, so a bad shard is reported, named, and loses nothing else.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <cstdio>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <tbb/parallel_for.h>

#include "pipeline/errors.h"
#include "media/file_system.h"
#include "media/url_file_system.h"
#include "pipeline/operator.h"
#include "pipeline/readers/reader_args.h"
#include "pipeline/readers/tar/shard_index.h"
#include "pipeline/readers/tar/shard_sample.h"
#include "pipeline/readers/tar/shard_spec.h"
#include "pipeline/readers/tar/tar_stream.h"
#include "pipeline/registry.h"
#include "pipeline/spec.h"

namespace hdl {
namespace {

// Where a field's bytes are in its shard; size -1: the sample has no such field.
struct FieldRef {
  int64_t offset = 0;
  int64_t size = -1;
};

// One sample as run() needs it.
struct ShardSample {
  int32_t shard = 0;
  FieldRef data;   // output 0
  FieldRef label;  // the label field (size -1 when absent or not asked for)
};

// The shards open now, shared by the worker threads (a RandomAccessFile's read() is a pread,
// safe to call concurrently): the kKeep used last, so that a shuffled epoch, whose samples come
// from every shard, opens a shard again only when more than kKeep are in use (an open is a
// system call locally, a HEAD request for an object store). A shard evicted while a thread
// still reads it stays open until that read is done (shared_ptr).
class OpenShards {
 public:
  static constexpr size_t kKeep = 256;

  Result<std::shared_ptr<const RandomAccessFile>> get(FileSystem& fs, int32_t shard, const std::string& path) {
    {
      std::lock_guard lock(mu_);
      if (const auto it = find(shard); it != files_.end()) {
        files_.splice(files_.begin(), files_, it);
        return files_.front().second;
      }
    }
    HDL_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> opened, fs.open(path));  // outside the lock
    std::shared_ptr<const RandomAccessFile> file(std::move(opened));
    std::lock_guard lock(mu_);
    files_.emplace_front(shard, file);
    if (files_.size() > kKeep) files_.pop_back();
    return file;
  }
  // The shard's file when it is open; null when not (never opens: no I/O).
  std::shared_ptr<const RandomAccessFile> peek(int32_t shard) {
    std::lock_guard lock(mu_);
    const auto it = find(shard);
    return it != files_.end() ? it->second : nullptr;
  }

 private:
  using Files = std::list<std::pair<int32_t, std::shared_ptr<const RandomAccessFile>>>;
  Files::iterator find(int32_t shard) {  // under mu_
    return std::find_if(files_.begin(), files_.end(), [&](const auto& e) { return e.first == shard; });
  }

  std::mutex mu_;
  Files files_;  // most recent first
};

IndexCachePolicy parse_index_policy(const std::string& s) {
  if (s == "read_only") return IndexCachePolicy::kReadOnly;
  if (s == "rebuild") return IndexCachePolicy::kRebuild;
  if (s == "none") return IndexCachePolicy::kNone;
  return IndexCachePolicy::kReadWrite;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

// A remote shard's data and label fields are read with one range read when at most this many
// bytes lie between them (tar headers and padding: usually 1 KiB).
constexpr int64_t kCoalesceGap = 64 * 1024;

class WebDatasetReader final : public SourceOperator {
 public:
  explicit WebDatasetReader(const NodeSpec& n)
      : sharding_(ops::parse_sharding(n)), fields_(split_field_names(n.get_string("field"))),
        label_field_(field_name(n.get_string("label_field"))), describe_(n.describe()) {
    if (fields_.empty()) throw ConfigError("argument \"field\" names no field (e.g. \"jpg;jpeg;png\")");
    skip_missing_ = n.get_string("missing_field") == "skip";
    index_options_.policy = parse_index_policy(n.get_string("index"));
    const std::string root = n.get_string("file_root");
    Result<std::vector<std::string>> names = expand_shard_specs(n.get_strings("urls"));
    if (!names.is_ok()) throw ConfigError("argument \"urls\": " + names.status().message());
    if (names->empty()) throw ConfigError("argument \"urls\" names no shard");
    for (std::string& s : *names) {
      if (shard_compression(s) != ShardCompression::kNone)
        throw ConfigError("argument \"urls\": \"" + s + "\" is compressed: mode \"indexed\" reads plain .tar shards; "
                          "compressed shards can only be streamed (mode \"streaming\" or \"auto\")");
      shards_.push_back(root.empty() || s.front() == '/' || is_remote_url(s) ? s : root + "/" + s);
      remote_.push_back(is_remote_url(shards_.back()));
      has_remote_ = has_remote_ || remote_.back();
    }
  }

  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec>) const override {
    return {TensorSpec{DType::kU8, Shape{-1}, Layout::kNone}, TensorSpec{DType::kI64, Shape{}, Layout::kNone},
            TensorSpec{DType::kI64, Shape{}, Layout::kNone}};
  }

  void prepare(FileSystem& fs) override {
    file_system_ = &fs;
    const size_t n = shards_.size();
    std::vector<Result<ShardIndex>> indexes(n, Status::internal("not indexed"));
    std::vector<std::string> warnings(n);
    tbb::parallel_for(size_t{0}, n, [&](size_t s) {
      indexes[s] = load_or_build_index(fs, shards_[s], index_options_, &warnings[s]);
    });
    for (const std::string& w : warnings)
      if (!w.empty()) std::fprintf(stderr, "hdl: %s: warning: %s\n", describe_.c_str(), w.c_str());

    std::vector<std::string> paths;
    samples_.clear();
    failed_shards_.clear();
    for (size_t s = 0; s < n; ++s) {
      const int32_t shard = static_cast<int32_t>(s);
      if (!indexes[s].is_ok()) {  // one failing sample names the shard and what is wrong
        failed_shards_.push_back({static_cast<int64_t>(samples_.size()), indexes[s].status()});
        samples_.push_back({shard, {}, {}});
        paths.push_back(shards_[s]);
        continue;
      }
      for (IndexedSample& is : indexes[s]->samples) {
        ShardSample smp{shard, {}, {}};
        for (const std::string& want : fields_) {
          auto it = std::find_if(is.fields.begin(), is.fields.end(), [&](const IndexedField& f) { return f.ext == want; });
          if (it != is.fields.end()) {
            smp.data = {it->offset, it->size};
            break;
          }
        }
        if (smp.data.size < 0 && skip_missing_) {
          missing_skipped_ += 1;
          continue;
        }
        if (!label_field_.empty())
          for (const IndexedField& f : is.fields)
            if (f.ext == label_field_) smp.label = {f.offset, f.size};
        samples_.push_back(smp);
        paths.push_back(shards_[s] + "/" + is.key);
      }
      indexes[s] = Status::internal("released");  // the compact table is all that is kept
    }
    // The dataset's paths are "<shard>/<key>" (a failed shard's one sample: the shard alone).
    dataset_ = std::make_shared<Dataset>(Dataset::from_samples(paths, {}));
  }

  int64_t num_samples() const override { return static_cast<int64_t>(samples_.size()); }

  std::string describe_sample(int64_t sample) const override {
    const ShardSample& s = samples_[static_cast<size_t>(sample)];
    const std::string_view key = key_of(sample);
    std::string out = "tar shard \"" + shards_[static_cast<size_t>(s.shard)] + "\"";
    if (!key.empty()) out += " key \"" + std::string(key) + "\"";
    return out;
  }

  Status run(SampleIO& io) const override {
    const int64_t i = io.sample().dataset_index;
    const ShardSample& s = samples_[static_cast<size_t>(i)];
    if (const Status* failed = shard_failure(i)) return *failed;
    if (s.data.size < 0)
      return Status::invalid_data("no field " + join(fields_, " or ") + " in this sample (missing_field \"skip\" "
                                  "leaves such samples out)");
    HDL_ASSIGN_OR_RETURN(const std::shared_ptr<const RandomAccessFile> file,
                         open_.get(io.file_system(), s.shard, shards_[static_cast<size_t>(s.shard)]));
    HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, Shape{s.data.size}, DType::kU8, Layout::kNone));
    HDL_ASSIGN_OR_RETURN(TensorView label, io.output(1, Shape{}, DType::kI64, Layout::kNone));
    if (remote_[static_cast<size_t>(s.shard)] && coalesced(s)) {
      // A remote shard: the data and the label (adjacent members of one sample) in one range
      // read, one request instead of two.
      const auto [begin, end] = data_and_label(s);
      const std::unique_ptr<char[]> span(new char[static_cast<size_t>(end - begin)]);
      if (Status st = read_exactly(*file, begin, end - begin, span.get()); !st.is_ok())
        return Status(st.code(), "bytes " + std::to_string(begin) + "-" + std::to_string(end - 1) + ": " + st.message());
      if (s.data.size > 0)  // an empty field's output may have no storage
        std::memcpy(out.data, span.get() + (s.data.offset - begin), static_cast<size_t>(s.data.size));
      HDL_ASSIGN_OR_RETURN(*label.typed<int64_t>(),
                           parse_class_index(std::string_view(span.get() + (s.label.offset - begin),
                                                              static_cast<size_t>(s.label.size)),
                                             label_field_, s.label.offset));
    } else {
      if (Status st = read_exactly(*file, s.data.offset, s.data.size, out.data); !st.is_ok())
        return Status(st.code(), "byte " + std::to_string(s.data.offset) + ": " + st.message());
      HDL_ASSIGN_OR_RETURN(*label.typed<int64_t>(), read_label(*file, s.label));
    }
    HDL_ASSIGN_OR_RETURN(TensorView index, io.output(2, Shape{}, DType::kI64, Layout::kNone));
    *index.typed<int64_t>() = i;
    return Status::ok();
  }

  // Remote shards: the ranges run() will read for these samples are fetched ahead
  // (RandomAccessFile::will_need; bounded by RemoteOptions::max_in_flight and prefetch_bytes).
  // Only shards open already are hinted (opening one is a request: run() does it).
  void will_read(std::span<const int64_t> indices) const override {
    if (!has_remote_) return;
    for (const int64_t i : indices) {
      if (i < 0 || i >= num_samples()) continue;
      const ShardSample& s = samples_[static_cast<size_t>(i)];
      if (s.data.size < 0 || !remote_[static_cast<size_t>(s.shard)]) continue;
      const std::shared_ptr<const RandomAccessFile> file = open_.peek(s.shard);
      if (!file) continue;
      if (coalesced(s)) {
        const auto [begin, end] = data_and_label(s);
        file->will_need(begin, end - begin);
      } else {
        file->will_need(s.data.offset, s.data.size);
      }
    }
  }

  std::vector<std::pair<std::string, int64_t>> counters() const override {
    std::vector<std::pair<std::string, int64_t>> c = {
        {"webdataset_shards", static_cast<int64_t>(shards_.size())},
        {"webdataset_failed_shards", static_cast<int64_t>(failed_shards_.size())},
        {"webdataset_missing_field_skipped", missing_skipped_}};
    if (file_system_)  // a remote store's requests, retries, bytes and time to first byte
      for (auto& kv : file_system_->counters()) c.push_back(std::move(kv));
    return c;
  }
  const Dataset& dataset() const override { return dataset_ ? *dataset_ : empty_; }
  const Sharding& sharding() const override { return sharding_; }

 private:
  // Whether run() reads a remote sample's data and label with one range read: a short label
  // at most kCoalesceGap bytes away.
  static bool coalesced(const ShardSample& s) {
    const auto [begin, end] = data_and_label(s);
    return s.label.size >= 0 && s.label.size <= 64 && end - begin - s.data.size <= kCoalesceGap;
  }
  // The bytes from the first of a sample's data and label to the end of the other.
  static std::pair<int64_t, int64_t> data_and_label(const ShardSample& s) {
    return {std::min(s.data.offset, s.label.offset),
            std::max(s.data.offset + s.data.size, s.label.offset + s.label.size)};
  }

  // The label: the field's text as a decimal integer (webdataset decodes "cls" so), surrounding
  // whitespace allowed; -1 when the sample has no label field or none was asked for.
  Result<int64_t> read_label(const RandomAccessFile& file, const FieldRef& f) const {
    if (f.size < 0) return int64_t{-1};
    if (f.size > 64)  // not read (parse_class_index would refuse it too)
      return Status::invalid_data("field \"" + label_field_ + "\" at byte " + std::to_string(f.offset) + " holds " +
                                  std::to_string(f.size) + " bytes: not a class index");
    char text[64];
    if (Status st = read_exactly(file, f.offset, f.size, text); !st.is_ok())
      return Status(st.code(), "byte " + std::to_string(f.offset) + ": " + st.message());
    return parse_class_index(std::string_view(text, size_t(f.size)), label_field_, f.offset);
  }

  const Status* shard_failure(int64_t sample) const {
    for (const auto& [at, status] : failed_shards_)
      if (at == sample) return &status;
    return nullptr;
  }

  std::string_view key_of(int64_t sample) const {
    const std::string_view path = dataset_->relative_path(sample);
    const size_t shard = shards_[static_cast<size_t>(samples_[static_cast<size_t>(sample)].shard)].size();
    return path.size() > shard ? path.substr(shard + 1) : std::string_view();
  }

  Sharding sharding_;
  std::vector<std::string> fields_;  // output 0: the first of these the sample has
  std::string label_field_;          // "" : no label
  bool skip_missing_ = false;
  IndexOptions index_options_;
  std::string describe_;
  std::vector<std::string> shards_;  // paths, in spec order
  std::vector<bool> remote_;         // per shard: a URL
  bool has_remote_ = false;
  // Filled by prepare():
  std::vector<ShardSample> samples_;
  std::vector<std::pair<int64_t, Status>> failed_shards_;  // (its sample, why)
  int64_t missing_skipped_ = 0;
  mutable OpenShards open_;
  const FileSystem* file_system_ = nullptr;  // the pipeline's, from prepare(); read by counters() only
  std::shared_ptr<const Dataset> dataset_;
  Dataset empty_ = Dataset::from_samples({}, {});
};

// Mode "auto": streaming when a shard is compressed (those have no useful offsets).
bool streams(const NodeSpec& n) {
  const std::string& mode = n.get_string("mode");
  if (mode != "auto") return mode == "streaming";
  Result<std::vector<std::string>> names = expand_shard_specs(n.get_strings("urls"));
  if (!names.is_ok()) return false;  // the indexed reader's constructor says what is wrong
  return std::any_of(names->begin(), names->end(),
                     [](const std::string& s) { return shard_compression(s) != ShardCompression::kNone; });
}

}  // namespace

std::unique_ptr<Operator> make_streaming_webdataset_reader(const NodeSpec& n);  // webdataset_stream_reader.cc

OpSchema webdataset_reader_schema() {
  OpSchema s;
  s.name = "webdataset_reader";
  s.doc = "Reads the samples of WebDataset tar shards (webdataset's conventions: a sample is the run of members "
          "sharing a key, the path up to the first dot of the file name; fields are the rest of the name, "
          "lower-cased), indexed: every shard's index (offset and size of every member's data) comes from its "
          "sidecar \"<shard>.idx\" (DALI's wds2idx v1.2 format with a stamp of the shard's size and modification "
          "time) or is built from the header blocks on first open, in parallel, and saved. Samples of all shards "
          "are one dataset: the global shuffle per (seed, epoch), the sample-level split across ranks "
          "(shard_id / num_shards), the last-batch policy and resume are exact, for any thread count. Plain .tar "
          "shards (ustar, GNU, PAX). A shard that cannot be read or indexed fails one sample, named, under the "
          "error policy. Streaming mode (mode=\"streaming\", or any compressed shard: .tar.gz, .tgz, .tar.bz2, .tar.xz, "
          ".tar.zst): shards shuffled per (seed, epoch) and cut into contiguous per-rank ranges of the counted samples "
          "(or split whole, rank::world, under a nominal epoch_samples), each read front to back through a bounded "
          "shuffle buffer; the same order for any thread count; resume by replay from the epoch's start "
          "(pipeline/readers/README.md).";
  s.is_source = true;
  s.outputs = {{"encoded", "the bytes of the sample's field (uint8, 1-D): the first of `field`'s alternatives"},
               {"label", "label_field's text as an integer (int64 scalar; -1 without one)"},
               {"index", "the sample's index in the dataset (int64 scalar); the pipeline's dataset names it \"<shard>/<key>\""}};
  s.args = {
      {"urls", ArgType::kStrings, ArgValue(std::vector<std::string>{}), "shard specs, webdataset's: brace expansion (\"train-{000000..000127}.tar\"), \"::\"-joined lists, or a list of specs"},
      {"file_root", ArgType::kString, ArgValue(""), "folder relative shard names are in (\"\": as given)"},
      {"field", ArgType::kString, ArgValue("jpg;jpeg;png;webp"), "output 0: the first of these ';'-separated fields (case-insensitive) the sample has"},
      {"label_field", ArgType::kString, ArgValue("cls"), "the field holding the class index as decimal text (\"\": none, label -1)"},
      {"missing_field", ArgType::kString, ArgValue("error"), "a sample without `field`: error (fails when it runs, under the error policy) or skip (left out of the dataset, counted)", one_of({"error", "skip"})},
      {"mode", ArgType::kString, ArgValue("auto"), "indexed (plain .tar: every sample read directly; exact global shuffle and sample-level split), streaming (every shard read front to back, shuffled shards and a bounded shuffle buffer of shuffle_buffer samples, 1000 when 0; for storage where seeks cost; the only mode for compressed shards), or auto (streaming when a shard is compressed, else indexed)", one_of({"auto", "indexed", "streaming"})},
      {"epoch_samples", ArgType::kInt, ArgValue(0), "streaming: samples per rank per epoch, nominal (webdataset's with_epoch: a rank's shards are read again when they hold fewer; nothing is counted, so reading starts at once; exactly-once per epoch is then not promised). 0: count every shard's samples in prepare() (plain tar: from the index; compressed: by decompressing it) and split them exactly", at_least(0)},
      {"seed", ArgType::kInt, ArgValue(0), "streaming: the seed of the shard shuffle and the shuffle buffer (with the epoch); the same on every rank", at_least(0)},
      {"index", ArgType::kString, ArgValue("read_write"), "the shards' index sidecars: read_write (use a valid one, else build and save), read_only (never write), rebuild (always build and save), none (build in memory)", one_of({"read_write", "read_only", "rebuild", "none"})},
  };
  for (ArgSchema& a : ops::sharding_args("samples")) s.args.push_back(std::move(a));
  s.create = [](const NodeSpec& n) -> std::unique_ptr<Operator> {
    if (streams(n)) return make_streaming_webdataset_reader(n);
    return std::make_unique<WebDatasetReader>(n);
  };
  return s;
}

}  // namespace hdl
