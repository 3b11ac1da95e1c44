// The executor behind Pipeline (private). See pipeline/pipeline.h for the contract and
// pipeline/README.md for the design.
#pragma once

#include <tbb/enumerable_thread_specific.h>
#include <tbb/task_arena.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "media/api.h"
#include "pipeline/detail/autotune.h"
#include "pipeline/detail/thread_budget.h"
#include "pipeline/epoch_order.h"
#include "pipeline/graph.h"
#include "pipeline/pipeline.h"

HDL_API_BEGIN
namespace hdl::detail {

/// Memory an operator output uses when it is not a pipeline output: grows, never shrinks,
/// reused sample after sample on one thread.
class ScratchBuffer {
 public:
  ScratchBuffer() = default;
  ScratchBuffer(ScratchBuffer&&) noexcept = default;
  ScratchBuffer& operator=(ScratchBuffer&&) noexcept = default;
  void* reserve(size_t bytes);

 private:
  struct Free { void operator()(void* p) const; };
  std::unique_ptr<void, Free> data_;
  size_t capacity_ = 0;
};

/// One worker thread's state: operator states and the current sample's values.
struct Workspace {
  std::vector<std::unique_ptr<OpState>> states;  // per node
  std::vector<bool> state_made;
  std::vector<ScratchBuffer> scratch;            // per value
  std::vector<ConstTensorView> values;           // per value, for the sample being processed
};

/// A value of the device stage for one batch: dense [N, ...] or one tensor per sample.
struct DeviceValue {
  Tensor dense;
  std::vector<Tensor> ragged;
};

/// One batch in flight.
struct Job {
  int64_t generation = 0;
  int64_t epoch = 0;
  int64_t batch = 0;
  int64_t first_position = 0;
  int64_t length = 0;
  std::shared_ptr<const EpochOrder> order;
  // Host values kept per batch (pipeline outputs of the cpu stage, and what it hands to the
  // device stage), by collected index (Core::collected): dense, or ragged per slot.
  std::vector<Tensor> dense;
  std::vector<std::vector<Tensor>> ragged;
  std::vector<int64_t> dataset_indices;      // per slot
  std::vector<uint32_t> attempts;            // per slot: which attempt produced it (its random stream)
  // With a device stage, ragged collected values are written into one pinned block per batch
  // (sized from earlier batches, so the pool hands out the same blocks every batch).
  std::vector<StoragePtr> arena;                      // per collected index
  std::unique_ptr<std::atomic<size_t>[]> arena_used;  // per collected index: bytes asked for
  std::vector<DeviceValue> device;           // per value id, written by the device stage
  std::shared_ptr<const cuda::DeviceSync> device_sync;  // when the device values are ready
  std::atomic<int64_t> remaining{0};
  std::atomic<int64_t> replaced{0};
  std::atomic<int64_t> failures{0};          // failed attempts in this batch
  std::mutex mu;                             // guards error and last_failure
  Status error;                              // makes next() throw
  Status last_failure;                       // the last failed attempt, for the budget message
  bool done = false;                         // guarded by ExecutorCore::mu
};

struct NodeCounters {
  std::atomic<uint64_t> nanos{0}, samples{0}, failures{0};
};

struct ExecutorCore;

class Executor {
 public:
  Executor(const PipelineSpec& spec, const PipelineOptions& options, const OpRegistry& registry);
  ~Executor();

  std::optional<PipelineOutput> next();
  bool wait_next(std::chrono::nanoseconds timeout);
  int64_t epoch() const { return epoch_; }
  int64_t batches_per_epoch() const { return order_for(epoch_)->num_batches(); }
  void reset(int64_t epoch, int64_t batch = 0);
  void set_epoch_order(int64_t epoch, std::vector<int64_t> order);
  PipelineState state() const;
  void load_state(const PipelineState& state);
  PipelineStats stats() const;
  const Dataset& dataset() const;
  int64_t num_samples() const;
  const PipelineOptions& options() const;
  std::vector<std::string> output_names() const;

  /// What worker tasks share with the consumer (pipeline/detail/core.h).
  using Core = ExecutorCore;

 private:
  std::shared_ptr<const EpochOrder> order_for(int64_t epoch) const;
  bool has_order(int64_t epoch) const;  // false only for an external-order epoch not yet given
  void fill_pipeline();
  void schedule(int64_t epoch, int64_t batch);
  void cancel_in_flight();
  PipelineOutput take(Job& job);
  /// Waits for `job` (the front batch), timing the wait; feeds the tuners.
  void wait_for(const Job& job);
  void tune_threads(uint64_t wait_nanos);

  std::shared_ptr<Core> core_;
  uint64_t fingerprint_ = 0;
  // Consumer side (one thread). The consumer writes the position (epoch_, next_batch_,
  // consumed_failures_) under position_mu_ so that state(), callable from any thread, reads
  // it whole; the consumer's own reads need no lock.
  mutable std::mutex position_mu_;
  int64_t consumed_failures_ = 0;  // failed samples in batches handed out: the skip budget
  int64_t epoch_ = 0;
  int64_t next_batch_ = 0;   // next batch of epoch_ to hand out
  int64_t sched_epoch_ = 0;  // next batch to schedule
  int64_t sched_batch_ = 0;
  std::deque<std::shared_ptr<Job>> in_flight_;  // in hand-out order
  mutable std::mutex orders_mu_;
  mutable std::deque<std::shared_ptr<const EpochOrder>> orders_;  // small cache, by epoch
  bool external_order_ = false;                              // set_epoch_order was used
  std::map<int64_t, std::shared_ptr<const EpochOrder>> given_;  // external orders, by epoch
  // Tuners (consumer thread), present for an option set to PipelineOptions::kAuto.
  std::optional<ThreadTuner> thread_tuner_;
  std::optional<PrefetchTuner> prefetch_tuner_;
  size_t batch_bytes_ = 0;  // the largest batch handed out so far
};

}  // namespace hdl::detail
HDL_API_END
