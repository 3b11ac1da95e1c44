// Pipeline: build a graph once, then iterate batches.
//
//   hdl::PipelineSpec spec;
//   auto files  = spec.add("file_reader", {}, {{"file_root", "data/train"}, {"shuffle", true}});
//   auto images = spec.add("image_decoder", {files[0]}, {{"output_type", "rgb"}});
//   spec.set_outputs({images[0], files[1]});
//   hdl::Pipeline pipe(spec, {.batch_size = 64, .num_threads = 4, .seed = 42});
//   for (int epoch = 0; epoch < 3; ++epoch)
//     for (const hdl::PipelineOutput& batch : pipe.epoch_batches())
//       train(batch.outputs[0], batch.outputs[1]);
//
// Per-sample work runs on one TBB arena of num_threads workers (the consumer's thread does no
// pipeline work), prefetch_depth batches ahead of the consumer, across epoch boundaries; both
// may be PipelineOptions::kAuto (tuned while it runs). Each
// sample is written straight into its slot of the output batch. Every random choice is a
// function of (seed, operator, epoch, sample position), so batches are bit-identical across
// runs and thread counts, and state() / load_state() resume mid-epoch exactly.
//
// Thread safety: one consumer thread at a time may call next(), reset(), load_state();
// stats() and state() may be called from any thread. Destroying a Pipeline stops its work
// (in-flight samples finish, the rest are dropped); Batches already handed out stay valid.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "media/api.h"
#include "media/batch.h"
#include "media/cache_file_system.h"
#include "media/file_system.h"
#include "media/storage.h"
#include "pipeline/dataset.h"
#include "pipeline/errors.h"
#include "pipeline/registry.h"
#include "pipeline/spec.h"

HDL_API_BEGIN
namespace hdl {

/// What happens when a sample cannot be produced (corrupt file, unreadable path, ...).
enum class ErrorPolicy {
  kRaise,  ///< next() throws DataError naming operator, sample and file; iteration may go on
  kSkip,   ///< the sample is replaced by the next readable one in epoch order and counted
};
/// Parses "raise" / "skip" (on_error; the one check: Python's edges call it). Throws ConfigError.
ErrorPolicy parse_error_policy(const std::string& name);

struct PipelineOptions {
  /// num_threads / prefetch_depth: chosen, and re-chosen, while the pipeline runs, from the
  /// measured rate of finished samples, the consumer's wait and the batch size
  /// (pipeline/detail/autotune.h; "auto" in Python, JSON-built pipelines and hdl-bench
  /// --autotune). The choice in use is in PipelineStats::autotune_threads / _prefetch_depth.
  static constexpr int kAuto = -1;

  int64_t batch_size = 32;         ///< samples per batch
  /// Worker threads; 0 = one per hardware thread; kAuto = tuned: starts at half the CPUs this
  /// process may use (affinity mask and cgroup quota, rounded up) and grows while the consumer
  /// waits and each added thread raises the rate, up to those CPUs (or max_threads).
  int num_threads = 0;
  /// Batches prepared ahead of the consumer (>= 1); kAuto = tuned: starts at 1 and grows by one
  /// when a consumer that had found the batches ready finds none ready (tf.data's rule), while
  /// prefetch_depth x batch bytes <= prefetch_memory_budget (never below 1).
  int prefetch_depth = 2;
  /// With num_threads = kAuto: the most threads the tuner may choose; 0 = the CPUs this process
  /// may use (the cap whatever this says).
  int max_threads = 0;
  /// With prefetch_depth = kAuto: the bytes of prepared batches the tuner may hold ahead.
  size_t prefetch_memory_budget = size_t(1) << 30;
  /// Run-length hint: the number of epochs this run will read (epochs 0 .. epochs - 1); 0 =
  /// unknown (default). Prefetch then starts no batch of an epoch >= epochs, so a run that stops
  /// at its last epoch's end decodes nothing it never reads (a batch of the next epoch is
  /// wasted work, and with video_reader group_clips its first clip decodes the whole group).
  /// Reading on past it still works: batches of that epoch are scheduled as the consumer
  /// reaches it, only without prefetch across the epoch boundary.
  int64_t epochs = 0;
  uint64_t seed = 0;               ///< seeds shuffling and every random operator
  ErrorPolicy on_error = ErrorPolicy::kRaise;
  int64_t max_failures = 100;      ///< skip: failed samples tolerated in all (then DataError)
  size_t max_cached_bytes = size_t(1) << 30;  ///< free batch buffers kept for reuse
  /// Where readers open sample files (shared by all worker threads, so its open() must be
  /// thread-safe; see media/file_system.h); null: default_file_system()
  /// (media/remote_file_system.h): s3:// and http(s):// URLs remotely, other paths locally.
  std::shared_ptr<FileSystem> file_system;
  /// A local cache of remote (s3://, http(s)://) objects, shared by the processes of the
  /// machine naming the same cache.dir (media/cache_file_system.h); cache.dir "" (default):
  /// the environment's (HDL_CACHE_DIR, HDL_CACHE_LIMIT), else none. Ignored when file_system
  /// is given. A directory that cannot be made or written, or a non-positive
  /// cache.limit_bytes, is a ConfigError.
  CacheOptions cache;
  /// The CUDA device (cuda:N) of the pipeline's gpu stage, if it has one.
  int device_id = 0;
};

/// One iteration's results.
struct PipelineOutput {
  std::vector<Batch> outputs;            ///< one per pipeline output, in set_outputs order
  int64_t epoch = 0;
  int64_t batch_index = 0;               ///< within the epoch
  std::vector<int64_t> dataset_indices;  ///< which dataset sample fills each slot
  int64_t num_padding = 0;               ///< trailing slots added by last_batch pad / fill
  int64_t num_replaced = 0;              ///< slots whose sample was replaced under skip
};

/// A pipeline's position, for resuming a job mid-epoch. Text form is stable across versions.
/// With set_epoch_order, the caller restores its own order for the epoch after load_state.
struct PipelineState {
  int64_t epoch = 0;
  int64_t batches_consumed = 0;  ///< batches of `epoch` already handed out
  int64_t failures = 0;          ///< failed samples so far (the skip budget)
  uint64_t fingerprint = 0;      ///< identifies the pipeline (graph, dataset, batch size, seed)

  std::string to_string() const;
  /// Throws PipelineStateError for text not made by to_string().
  static PipelineState parse(const std::string& text);
};

/// Operator counters count the work done, including batches prefetched but not yet handed
/// out; the pipeline-level counts (batches, samples, failures, replaced) count what the
/// consumer received, and are what the skip budget and the saved state use.
struct OperatorStats {
  std::string name;       ///< node name
  std::string op;         ///< operator
  uint64_t samples = 0;   ///< samples it ran on
  uint64_t failures = 0;  ///< of those, how many failed
  double seconds = 0;     ///< total time in run(), summed over threads
  /// What the operator itself counts (Operator::counters), e.g. image_decoder's
  /// jpeg_index_files, jpeg_index_bytes, jpeg_index_hits.
  std::vector<std::pair<std::string, int64_t>> counters;
};

struct PipelineStats {
  std::vector<OperatorStats> operators;  ///< in graph order
  uint64_t batches = 0;                  ///< handed to the consumer
  uint64_t samples = 0;                  ///< slots filled in those batches
  uint64_t failures = 0;                 ///< failed samples (all policies)
  uint64_t replaced = 0;                 ///< samples replaced under skip
  double consumer_wait_seconds = 0;      ///< time next() spent waiting for work
  /// The worker threads and prefetch depth in use now: the tuner's current choice where the
  /// option is PipelineOptions::kAuto, else the option itself (0 threads resolved).
  int autotune_threads = 0;
  int autotune_prefetch_depth = 0;
  std::vector<std::string> recent_errors;  ///< the last few error messages
  BufferPoolStats pool;                  ///< host batches (pinned memory with a gpu stage)
  BufferPoolStats device_pool;           ///< device memory of the gpu stage (zero without one)
};

/// The CPUs this process may use: its sched_getaffinity mask, lowered by a cgroup v2 cpu.max
/// (or v1 cfs) quota when one is set (rounded up), never below 1; std::thread::
/// hardware_concurrency where neither can be read. The limit of num_threads = kAuto.
int available_cpus();

namespace detail { class Executor; }

class Pipeline {
 public:
  /// Validates and builds the graph (ConfigError on any mistake) and starts no work yet.
  Pipeline(const PipelineSpec& spec, const PipelineOptions& options,
           const OpRegistry& registry = OpRegistry::builtin());
  ~Pipeline();
  Pipeline(Pipeline&&) noexcept;
  Pipeline& operator=(Pipeline&&) noexcept;

  /// The next batch of the current epoch, or nullopt when the epoch is over; the call after a
  /// nullopt begins the next epoch. Blocks until the batch is ready. Throws DataError when a
  /// sample failed under raise (the failed batch is lost; the next call goes on with the next
  /// batch).
  std::optional<PipelineOutput> next();
  /// Waits up to `timeout` for what next() would return to be ready (a batch finished, or the
  /// end of the epoch): true when next() will not block. Throws as next() does for an epoch
  /// without an order. For a consumer's deadline (HabanaDataLoader's timeout=).
  bool wait_next(std::chrono::nanoseconds timeout);

  /// The epoch next() is in, and how many batches it has.
  int64_t epoch() const;
  int64_t batches_per_epoch() const;
  /// Drops work in flight and starts `epoch` from its first batch.
  void reset(int64_t epoch);

  /// Makes `epoch` walk `order` (dataset indices, e.g. from a torch sampler, already sharded)
  /// instead of the reader's own shuffle and sharding; the reader's last_batch policy still
  /// applies. Once any order is given, the pipeline never prefetches into an epoch whose order
  /// has not been given, and next() on such an epoch throws PipelineStateError. Call before the
  /// epoch's first next() (or after load_state); giving an order for the epoch in progress
  /// keeps the position (batches already handed out stay handed out) and follows the new order
  /// from there.
  /// Throws ConfigError for indices outside the dataset.
  void set_epoch_order(int64_t epoch, std::vector<int64_t> order);

  PipelineState state() const;
  /// Continues from `state` (made by a pipeline with the same spec, dataset, batch size and
  /// seed; else PipelineStateError). Any thread count works.
  void load_state(const PipelineState& state);

  PipelineStats stats() const;
  const Dataset& dataset() const;
  /// Samples the reader draws from, before sharding: one per file, or one per clip for a video
  /// reader (SourceOperator::num_samples).
  int64_t num_samples() const;
  const PipelineOptions& options() const;
  /// "node.output" names of the outputs, in order.
  std::vector<std::string> output_names() const;

  /// Range over the rest of the current epoch: for (auto& b : pipe.epoch_batches()) {...}.
  class EpochRange;
  EpochRange epoch_batches();

 private:
  std::unique_ptr<detail::Executor> impl_;
};

class Pipeline::EpochRange {
 public:
  class iterator {
   public:
    explicit iterator(Pipeline* p) : p_(p) { advance(); }
    iterator() = default;
    const PipelineOutput& operator*() const { return *cur_; }
    const PipelineOutput* operator->() const { return &*cur_; }
    iterator& operator++() { advance(); return *this; }
    bool operator==(const iterator& o) const { return !cur_ && !o.cur_; }

   private:
    void advance() { cur_ = p_->next(); }
    Pipeline* p_ = nullptr;
    std::optional<PipelineOutput> cur_;
  };
  explicit EpochRange(Pipeline* p) : p_(p) {}
  iterator begin() { return iterator(p_); }
  iterator end() { return iterator(); }

 private:
  Pipeline* p_;
};

}  // namespace hdl
HDL_API_END
