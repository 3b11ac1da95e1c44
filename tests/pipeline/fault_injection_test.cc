// Fault injection through the FileSystem seam (media/file_system.h), LevelDB-style: a
// FaultyFileSystem wraps the real one and, per path and per point in the run, returns EIO,
// short reads, ENOENT (a file that vanishes mid-epoch), a file that shrinks while it is read,
// EACCES, or slow reads. The pipeline reads real corpus JPEGs with several threads over
// several epochs, under ErrorPolicy raise and skip, and every sample of every epoch must be
// accounted for exactly: delivered unchanged, or failed and (under skip) replaced by the one
// sample the executor's rule names, with stats and the failure budget exact.
//
// When is a fault "on"? The test drives a clock: before each next() it sets the clock to the
// call's number. Batch g (counted over the whole run) is scheduled during the call that
// returns batch g - prefetch_depth and is finished when the call that returns batch g
// returns, so its reads happen while the clock is in that window. A fault covers a clock
// range; the model below knows, for every read the executor does, whether the fault is on,
// and fails the test if a fault was placed where a read's window straddles its range (the
// outcome would depend on thread timing).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <limits>
#include <map>
#include <thread>
#include <unordered_map>

#include "media/file_system.h"
#include "pipeline/pipeline.h"
#include "tests/pipeline/test_ops.h"
#include "tests/test_util.h"

namespace hdl {
namespace {

using testing::TempImageFolder;

enum class Fault { kNone, kEio, kShortReads, kVanish, kShrink, kDenied, kSlow };

constexpr int64_t kForever = std::numeric_limits<int64_t>::max();

// Whether a fault makes the sample fail, and the words the DataError must carry.
bool fails(Fault f) { return f == Fault::kEio || f == Fault::kVanish || f == Fault::kShrink || f == Fault::kDenied; }
const char* cause(Fault f) {
  switch (f) {
    case Fault::kEio: return "Input/output error";
    case Fault::kVanish: return "No such file or directory";
    case Fault::kShrink: return "file shrank while being read";
    case Fault::kDenied: return "Permission denied";
    default: return "";
  }
}

struct FaultRange {
  Fault fault;
  int64_t from, to;  // clock range [from, to)
};

// The real file system with faults per path and clock range. Faults are added before the
// pipeline is built (the table is then read-only); the clock and the counters are atomic.
class FaultyFileSystem final : public FileSystem {
 public:
  void add(const std::string& path, Fault f, int64_t from, int64_t to) { table_[path].ranges.push_back({f, from, to}); }
  void set_clock(int64_t t) { clock_.store(t); }
  /// read() calls made on `path`'s files (to see that short reads were looped over).
  int64_t reads(const std::string& path) const {
    auto it = table_.find(path);
    return it == table_.end() ? 0 : it->second.reads.load();
  }

  Result<std::unique_ptr<RandomAccessFile>> open(const std::string& path) override {
    Entry* e = nullptr;
    Fault f = Fault::kNone;
    if (auto it = table_.find(path); it != table_.end()) {
      e = &it->second;
      const int64_t t = clock_.load();
      for (const FaultRange& r : e->ranges)
        if (t >= r.from && t < r.to) f = r.fault;
    }
    if (f == Fault::kVanish) return errno_status(ENOENT);
    if (f == Fault::kDenied) return errno_status(EACCES);
    HDL_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> base, real_->open(path));
    if (f == Fault::kNone && !e) return base;
    return std::unique_ptr<RandomAccessFile>(std::make_unique<File>(std::move(base), f, e));
  }

 private:
  struct Entry {
    std::vector<FaultRange> ranges;
    mutable std::atomic<int64_t> reads{0};
  };
  class File final : public RandomAccessFile {
   public:
    File(std::unique_ptr<RandomAccessFile> base, Fault f, Entry* e) : base_(std::move(base)), f_(f), e_(e) {}
    int64_t size() const override { return base_->size(); }
    Result<int64_t> read(int64_t offset, int64_t n, void* dst) const override {
      e_->reads.fetch_add(1);
      switch (f_) {
        case Fault::kEio:
          return errno_status(EIO);
        case Fault::kShortReads:  // legal: a pread may return fewer bytes than asked
          return base_->read(offset, std::min<int64_t>(n, 1 + (offset * 7919) % 3001), dst);
        case Fault::kShrink: {  // the file is cut to half its size after open
          const int64_t end = base_->size() / 2;
          return offset >= end ? Result<int64_t>(0) : base_->read(offset, std::min(n, end - offset), dst);
        }
        case Fault::kSlow:
          std::this_thread::sleep_for(std::chrono::milliseconds(3));
          return base_->read(offset, n, dst);
        default:
          return base_->read(offset, n, dst);
      }
    }

   private:
    std::unique_ptr<RandomAccessFile> base_;
    Fault f_;
    Entry* e_;
  };

  std::shared_ptr<FileSystem> real_ = posix_file_system();
  std::unordered_map<std::string, Entry> table_;
  std::atomic<int64_t> clock_{0};
};

uint64_t hash_bytes(const void* p, int64_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int64_t i = 0; i < n; ++i) h = (h ^ static_cast<const uint8_t*>(p)[i]) * 0x100000001b3ull;
  return h;
}

// What one sample looked like: its label, decoded pixels and file bytes.
struct SampleValue {
  int64_t label = -1;
  uint64_t pixels = 0, bytes = 0;
  friend bool operator==(const SampleValue&, const SampleValue&) = default;
};

SampleValue value_of(const PipelineOutput& out, int64_t slot) {
  Tensor img = out.outputs[0].sample(slot), enc = out.outputs[2].sample(slot);
  return {*out.outputs[1].sample(slot).typed<int64_t>(), hash_bytes(img.data(), static_cast<int64_t>(img.num_bytes())),
          hash_bytes(enc.data(), static_cast<int64_t>(enc.num_bytes()))};
}

// reader (shuffled) -> decode to 32x32 RGB; outputs images, labels, the file bytes. No random
// operator, so a sample's values depend on its file alone (a replacement looks like itself).
PipelineSpec fault_spec(const std::string& root) {
  PipelineSpec spec;
  auto files = spec.add("file_reader", {}, {{"file_root", root}, {"shuffle", true}}, {}, "reader");
  auto images = spec.add("image_decoder", {files[0]}, {{"output_type", "rgb"}, {"resize", std::vector<int64_t>{32, 32}}}, {}, "decode");
  spec.set_outputs({images[0], files[1], files[0]});
  return spec;
}

constexpr int kEpochs = 4;
constexpr int64_t kBatch = 8;
constexpr int kDepth = 2;

class FaultInjectionTest : public ::testing::TestWithParam<int> {  // param: num_threads
 protected:
  void SetUp() override {
    HDL_REQUIRE_CORPUS();
    folder_ = std::make_unique<TempImageFolder>(8, 12);  // 96 files: 12 batches, 0 padding
    spec_ = fault_spec(folder_->root().string());
    // The fault-free reference: each epoch's order, and every sample's values.
    Pipeline pipe(spec_, options(ErrorPolicy::kRaise, 0, nullptr));
    nb_ = pipe.batches_per_epoch();
    n_ = pipe.dataset().size();
    for (int e = 0; e < kEpochs; ++e) {
      order_.emplace_back();
      for (const PipelineOutput& out : pipe.epoch_batches())
        for (int64_t s = 0; s < static_cast<int64_t>(out.dataset_indices.size()); ++s) {
          order_[e].push_back(out.dataset_indices[s]);
          values_[out.dataset_indices[s]] = value_of(out, s);
        }
      ASSERT_EQ(static_cast<int64_t>(order_[e].size()), n_);
    }
    ASSERT_EQ(static_cast<int64_t>(values_.size()), n_);
    ASSERT_EQ(n_ % kBatch, 0) << "the model below assumes full batches";
    for (int64_t i = 0; i < n_; ++i) paths_.push_back(pipe.dataset().path(i));
  }

  PipelineOptions options(ErrorPolicy policy, int64_t max_failures, std::shared_ptr<FileSystem> fs) const {
    PipelineOptions o;
    o.batch_size = kBatch;
    o.num_threads = GetParam();
    o.prefetch_depth = kDepth;
    o.seed = 7;
    o.on_error = policy;
    o.max_failures = max_failures;
    o.file_system = std::move(fs);
    return o;
  }

  // The clock of the call that returns batch g of the run (call k of epoch e: e * (nb + 1) + k;
  // the call that returns the end of the epoch is the (nb+1)-th).
  int64_t clock_of(int64_t g) const { return (g / nb_) * (nb_ + 1) + g % nb_; }
  int64_t call(int e, int64_t k) const { return e * (nb_ + 1) + k; }

  // The fault the read of `index` meets while batch g is in flight; kNone when none.
  // Fails the test when a fault range straddles the batch's window.
  Fault fault_at(int64_t index, int64_t g) const {
    const int64_t lo = clock_of(std::max<int64_t>(g - kDepth, 0)), hi = clock_of(g);
    Fault f = Fault::kNone;
    auto it = faults_.find(index);
    if (it == faults_.end()) return f;
    for (const FaultRange& r : it->second) {
      if (lo >= r.from && hi < r.to) f = r.fault;
      else if (!(hi < r.from || lo >= r.to)) ADD_FAILURE() << "fault on sample " << index << " straddles batch " << g;
    }
    return f;
  }
  bool straddles(int64_t index, const FaultRange& r) const {
    for (int e = 0; e < kEpochs; ++e) {
      const int64_t p = std::find(order_[e].begin(), order_[e].end(), index) - order_[e].begin();
      for (int64_t back = 0; back <= 2; ++back) {  // its own slot, or replacing one or two before it
        const int64_t g = e * nb_ + ((p - back + n_) % n_) / kBatch;
        const int64_t lo = clock_of(std::max<int64_t>(g - kDepth, 0)), hi = clock_of(g);
        if (!(lo >= r.from && hi < r.to) && !(hi < r.from || lo >= r.to)) return true;
      }
    }
    return false;
  }
  // Puts fault f over [from, to) on the first unused sample at or after position `pos` of
  // epoch `e` for which the outcome does not depend on timing; returns its dataset index.
  int64_t place(Fault f, int e, int64_t pos, int64_t from, int64_t to) {
    for (int64_t k = 0; k < n_; ++k) {
      const int64_t index = order_[e][(pos + k) % n_];
      if (faults_.count(index) || straddles(index, {f, from, to})) continue;
      faults_[index].push_back({f, from, to});
      return index;
    }
    ADD_FAILURE() << "no sample can take the fault";
    return -1;
  }
  std::shared_ptr<FaultyFileSystem> make_fs() const {
    auto fs = std::make_shared<FaultyFileSystem>();
    for (const auto& [index, ranges] : faults_)
      for (const FaultRange& r : ranges) fs->add(paths_[index], r.fault, r.from, r.to);
    return fs;
  }

  // The standard fault mix: every kind, per path and per epoch.
  void place_standard_faults() {
    place(Fault::kEio, 0, 30, 0, kForever);                          // always EIO
    place(Fault::kEio, 1, 40, call(1, 0), call(2, 0));               // EIO in epoch 1 only
    place(Fault::kDenied, 2, 50, call(2, 0), kForever);              // unreadable from epoch 2 on
    place(Fault::kVanish, 2, 70, call(2, nb_ / 2), kForever);        // deleted mid-epoch 2
    place(Fault::kShrink, 0, 60, 0, call(1, 0));                     // shrinks while read, epoch 0
    place(Fault::kShrink, 3, 20, call(3, 0), kForever);              // ... and in epoch 3
    for (int k = 0; k < 6; ++k) short_.push_back(place(Fault::kShortReads, 0, 5 + 15 * k, 0, kForever));
    for (int k = 0; k < 6; ++k) place(Fault::kSlow, 1, 10 + 15 * k, 0, kForever);
  }

  // What the executor must do with slot `p` of epoch e: the dataset index delivered (or -1
  // when the batch fails under raise) and the failures it causes.
  struct Expect {
    int64_t index = -1;
    int64_t failures = 0;
    Fault first = Fault::kNone;  // the fault of the slot's own sample
  };
  Expect expect(int e, int64_t p, ErrorPolicy policy) const {
    const int64_t g = e * nb_ + p / kBatch;
    Expect x;
    for (int64_t attempt = 0; attempt < n_; ++attempt) {
      const int64_t index = order_[e][(p + attempt) % n_];
      const Fault f = fault_at(index, g);
      if (attempt == 0) x.first = f;
      if (!fails(f)) {
        x.index = index;
        return x;
      }
      ++x.failures;
      if (policy == ErrorPolicy::kRaise) return x;
    }
    return x;
  }

  std::unique_ptr<TempImageFolder> folder_;
  PipelineSpec spec_;
  int64_t nb_ = 0, n_ = 0;
  std::vector<std::vector<int64_t>> order_;       // per epoch, per position
  std::map<int64_t, SampleValue> values_;          // per dataset index, fault-free
  std::vector<std::string> paths_;
  std::map<int64_t, std::vector<FaultRange>> faults_;  // per dataset index
  std::vector<int64_t> short_;
};

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST_P(FaultInjectionTest, SkipAccountsForEverySample) {
  place_standard_faults();
  int64_t total_failures = 0, total_replaced = 0;
  for (int e = 0; e < kEpochs; ++e)
    for (int64_t p = 0; p < n_; ++p) {
      const Expect x = expect(e, p, ErrorPolicy::kSkip);
      total_failures += x.failures;
      total_replaced += x.failures > 0;
    }
  ASSERT_GE(total_failures, 8);  // each kind fails at least once, some in several epochs
  auto fs = make_fs();
  // The budget is exactly what the faults use: one more failure would throw.
  Pipeline pipe(spec_, options(ErrorPolicy::kSkip, total_failures, fs));
  std::map<std::string, int> causes_seen;
  for (int e = 0; e < kEpochs; ++e) {
    int64_t k = 0, delivered = 0, replaced_here = 0;
    for (;; ++k) {
      fs->set_clock(call(e, k));
      std::optional<PipelineOutput> out = pipe.next();
      if (!out) break;
      ASSERT_EQ(out->epoch, e);
      ASSERT_EQ(out->batch_index, k);
      ASSERT_EQ(static_cast<int64_t>(out->dataset_indices.size()), kBatch);
      int64_t replaced = 0;
      for (int64_t s = 0; s < kBatch; ++s) {
        const int64_t p = k * kBatch + s;
        const Expect x = expect(e, p, ErrorPolicy::kSkip);
        ASSERT_EQ(out->dataset_indices[s], x.index) << "epoch " << e << " position " << p;
        if (x.failures > 0) ++replaced, ++causes_seen[cause(x.first)];
        else ++delivered;
        EXPECT_EQ(value_of(*out, s), values_.at(x.index)) << "epoch " << e << " position " << p;
      }
      EXPECT_EQ(out->num_replaced, replaced) << "epoch " << e << " batch " << k;
      replaced_here += replaced;
    }
    EXPECT_EQ(k, nb_);
    EXPECT_EQ(delivered + replaced_here, n_) << "epoch " << e;  // every sample, exactly once
  }
  for (Fault f : {Fault::kEio, Fault::kVanish, Fault::kShrink, Fault::kDenied}) EXPECT_GT(causes_seen[cause(f)], 0) << cause(f);
  const PipelineStats st = pipe.stats();
  EXPECT_EQ(st.failures, static_cast<uint64_t>(total_failures));
  EXPECT_EQ(st.replaced, static_cast<uint64_t>(total_replaced));
  EXPECT_EQ(st.batches, static_cast<uint64_t>(kEpochs * nb_));
  EXPECT_EQ(st.samples, static_cast<uint64_t>(kEpochs * n_));
  EXPECT_EQ(pipe.state().failures, total_failures);
  // Messages name operator, sample, file and cause.
  ASSERT_FALSE(st.recent_errors.empty());
  for (const std::string& m : st.recent_errors) {
    bool matched = false;
    for (const auto& [index, ranges] : faults_)
      for (const FaultRange& r : ranges)
        matched |= fails(r.fault) && contains(m, "file_reader \"reader\": sample " + std::to_string(index) + " \"" + paths_[index] + "\": " + cause(r.fault));
    EXPECT_TRUE(matched) << m;
  }
  // Short reads were short (the reader looped over several read() calls per file).
  for (int64_t index : short_) EXPECT_GT(fs->reads(paths_[index]), kEpochs * 4) << paths_[index];
}

TEST_P(FaultInjectionTest, RaiseLosesExactlyTheFailedBatches) {
  place_standard_faults();
  auto fs = make_fs();
  Pipeline pipe(spec_, options(ErrorPolicy::kRaise, 0, fs));
  int64_t expected_failures = 0, thrown = 0, delivered_batches = 0;
  for (int e = 0; e < kEpochs; ++e) {
    int64_t k = 0, accounted = 0;
    for (;; ++k) {
      std::vector<Expect> x;
      int64_t bad = 0;
      for (int64_t s = 0; s < kBatch && k < nb_; ++s) {
        x.push_back(expect(e, k * kBatch + s, ErrorPolicy::kRaise));
        bad += x.back().failures;
      }
      fs->set_clock(call(e, k));
      std::optional<PipelineOutput> out;
      try {
        out = pipe.next();
      } catch (const DataError& err) {
        ASSERT_GT(bad, 0) << "epoch " << e << " batch " << k << ": " << err.what();
        // The message names one of the batch's failed files and its cause.
        bool named = false;
        for (int64_t s = 0; s < kBatch; ++s) {
          const int64_t index = order_[e][k * kBatch + s];
          named |= x[s].failures > 0 && contains(err.what(), "file_reader \"reader\": sample " + std::to_string(index) + " \"" +
                                                                 paths_[index] + "\": " + cause(x[s].first));
        }
        EXPECT_TRUE(named) << err.what();
        expected_failures += bad;
        accounted += kBatch;
        ++thrown;
        continue;
      }
      if (!out) break;
      ASSERT_EQ(bad, 0) << "epoch " << e << " batch " << k << " should have failed";
      ASSERT_EQ(out->batch_index, k);
      EXPECT_EQ(out->num_replaced, 0);
      for (int64_t s = 0; s < kBatch; ++s) {
        ASSERT_EQ(out->dataset_indices[s], order_[e][k * kBatch + s]);
        EXPECT_EQ(value_of(*out, s), values_.at(out->dataset_indices[s]));
      }
      accounted += kBatch;
      ++delivered_batches;
    }
    EXPECT_EQ(k, nb_);
    EXPECT_EQ(accounted, n_) << "epoch " << e;
  }
  EXPECT_GE(thrown, 6);
  const PipelineStats st = pipe.stats();
  EXPECT_EQ(st.failures, static_cast<uint64_t>(expected_failures));
  EXPECT_EQ(st.replaced, 0u);
  EXPECT_EQ(st.batches, static_cast<uint64_t>(delivered_batches));
  EXPECT_EQ(st.samples, static_cast<uint64_t>(delivered_batches * kBatch));
}

TEST_P(FaultInjectionTest, SkipBudgetRunsOutAtExactlyTheRightBatch) {
  place_standard_faults();
  // Failures in batch order; the budget is one less than all of them.
  std::vector<int64_t> per_batch;
  int64_t total = 0;
  for (int e = 0; e < kEpochs; ++e)
    for (int64_t k = 0; k < nb_; ++k) {
      int64_t f = 0;
      for (int64_t s = 0; s < kBatch; ++s) f += expect(e, k * kBatch + s, ErrorPolicy::kSkip).failures;
      per_batch.push_back(f);
      total += f;
    }
  const int64_t budget = total - 1;
  int64_t g_throw = 0;
  for (int64_t sum = 0; sum <= budget; ++g_throw) sum += per_batch[g_throw];
  --g_throw;  // the batch whose failures take the sum past the budget
  auto fs = make_fs();
  Pipeline pipe(spec_, options(ErrorPolicy::kSkip, budget, fs));
  int64_t g = 0;
  for (int e = 0; e < kEpochs; ++e)
    for (int64_t k = 0;; ++k) {
      fs->set_clock(call(e, k));
      if (g == g_throw) {
        try {
          (void)pipe.next();
          FAIL() << "batch " << g << " should exceed max_failures=" << budget;
        } catch (const DataError& err) {
          EXPECT_TRUE(contains(err.what(), "more than max_failures=" + std::to_string(budget) + " samples failed; the last: file_reader \"reader\": sample "))
              << err.what();
          EXPECT_EQ(pipe.stats().failures, static_cast<uint64_t>(total));
          EXPECT_EQ(pipe.stats().batches, static_cast<uint64_t>(g));
          return;
        }
      }
      std::optional<PipelineOutput> out = pipe.next();
      if (!out) break;
      ++g;
    }
  FAIL() << "the budget never ran out";
}

TEST_P(FaultInjectionTest, SlowAndShortReadsChangeNothingButTime) {
  for (int64_t i = 0; i < n_; ++i) faults_[i].push_back({i % 2 ? Fault::kSlow : Fault::kShortReads, 0, kForever});
  auto fs = make_fs();
  Pipeline pipe(spec_, options(ErrorPolicy::kRaise, 0, fs));
  for (int e = 0; e < kEpochs; ++e) {
    int64_t p = 0;
    for (const PipelineOutput& out : pipe.epoch_batches())
      for (int64_t s = 0; s < kBatch; ++s, ++p) {
        ASSERT_EQ(out.dataset_indices[s], order_[e][p]);
        EXPECT_EQ(value_of(out, s), values_.at(order_[e][p]));
      }
    EXPECT_EQ(p, n_);
  }
  EXPECT_EQ(pipe.stats().failures, 0u);
}

INSTANTIATE_TEST_SUITE_P(Threads, FaultInjectionTest, ::testing::Values(1, 3),
                         [](const auto& info) { return std::to_string(info.param) + "threads"; });

}  // namespace
}  // namespace hdl
