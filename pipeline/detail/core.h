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

  void process(Job& job, int64_t slot);
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
  int threads;
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

  std::mutex mu;  // guards outstanding and Job::done
  std::condition_variable cv;
  int64_t outstanding = 0;

  mutable std::mutex errors_mu;
  std::deque<std::string> recent_errors;
};

}  // namespace hdl::detail
HDL_API_END
