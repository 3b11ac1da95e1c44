// What the executor's worker tasks, its device stage and its consumer share (private).
// See pipeline/detail/executor.h for the parts and pipeline/README.md for the design.
#pragma once

#include <tbb/enumerable_thread_specific.h>
#include <tbb/task_arena.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "media/api.h"
#include "pipeline/detail/executor.h"

HDL_API_BEGIN
namespace hdl::detail {

class DeviceStage;

struct ExecutorCore {
  /// The whole setup: builds the graph, lets the reader prepare, checks the batching options,
  /// collects the values kept per batch and starts the device stage (gpu or mixed nodes).
  /// Throws ConfigError (or the graph's errors) for what cannot run.
  ExecutorCore(const PipelineSpec& spec, const PipelineOptions& opts, const OpRegistry& registry);
  ~ExecutorCore();

  /// Produces slot `slot` of `job` (skipped for a cancelled generation); true when it was the
  /// batch's last slot. Runs the device stage after the last one.
  bool process(Job& job, int64_t slot);
  /// A worker task: takes items (a job's slots) from `pending` in order until none is left or more
  /// workers run than `target_workers`. At most target_workers of them run at a time, so the
  /// target is the live thread count of the one arena (which is sized for the most threads).
  void work();
  /// Starts worker tasks up to target_workers and the pending items. Caller holds mu.
  void start_workers_locked();
  /// Sets the worker target (1..threads) and starts workers for pending items if it grew.
  void set_target_workers(int n);
  Status run_sample(Job& job, int64_t slot, const SampleInfo& info, Workspace& ws);
  void record_failure(const Status& status);
  Workspace& workspace();
  /// The host tensor of collected value `value` for slot `slot` of `job`.
  ConstTensorView host_value(const Job& job, int value, int64_t slot) const;
  /// Part of the setup: per node its random stream key, per value its stage, and which host
  /// values each batch keeps (collected, collect_of_value, dense, sample_shape, arena_bytes).
  void collect_values();

  Graph graph;
  PipelineOptions options;
  std::shared_ptr<FileSystem> file_system;  // never null
  int threads;  // the arena's size: num_threads, or the most the tuner may choose
  ThreadBudget budget;
  tbb::task_arena arena;
  BufferPool pool;  // host batches: pinned when a device stage uploads them
  tbb::enumerable_thread_specific<Workspace> workspaces;
  std::vector<uint64_t> rng_keys;       // per node
  std::vector<Stage> value_stage;       // per value: the stage of the node producing it
  // Host values kept per batch: the cpu stage's pipeline outputs and what the device stage reads.
  std::vector<int> collected;           // value ids
  std::vector<int> collect_of_value;    // value -> index in `collected`, or -1
  std::vector<bool> dense;              // per collected value: one [N, ...] tensor
  std::vector<Shape> sample_shape;      // per dense collected value
  std::vector<NodeCounters> counters;   // per node
  std::unique_ptr<std::atomic<size_t>[]> arena_bytes;  // per collected index: largest batch so far
  std::unique_ptr<DeviceStage> device_stage;  // null without gpu nodes

  std::atomic<int64_t> generation{0};
  std::atomic<int64_t> failures{0};  // in batches handed out (stats; consumer writes)
  std::atomic<uint64_t> replaced{0};
  std::atomic<uint64_t> batches{0}, samples{0}, wait_nanos{0};

  std::mutex mu;  // guards outstanding, Job::done, pending and workers
  std::condition_variable cv;
  int64_t outstanding = 0;
  /// Slots [slot, end) of a job, done in order by one worker: one slot, or a run of one
  /// group's samples (SourceOperator::sample_group()).
  struct Item {
    std::shared_ptr<Job> job;
    int64_t slot = 0, end = 0;
  };
  std::deque<Item> pending;  // in hand-out order
  int workers = 0;                        // worker tasks started and not finished
  std::atomic<int> target_workers{1};     // threads in use (tuned with num_threads = kAuto)
  std::atomic<int> prefetch_depth{1};     // batches ahead in use (tuned with kAuto)
  std::atomic<uint64_t> finished{0};      // slots processed (any generation): the tuner's rate

  mutable std::mutex errors_mu;
  std::deque<std::string> recent_errors;
};

}  // namespace hdl::detail
HDL_API_END
