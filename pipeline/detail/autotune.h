// Self-tuning of num_threads and prefetch_depth (private; PipelineOptions::kAuto).
//
// The anchor is tf.data's AUTOTUNE. What carries over from it:
// - A CPU budget that defaults to the CPUs the process may be scheduled on (not the machine's),
//   and a RAM budget for buffered elements.
// - Parallelism tuned from measured rates while the pipeline runs.
// - Prefetch buffers tuned by tf.data's rule (an "upswing" until the buffer has been full once,
//   then a "downswing" in which a consumer that finds it empty grows it), starting at one
//   batch, so a buffer grows only when the producer keeps up on average but not batch by
//   batch. A producer-bound pipeline never fills its buffer and keeps one batch ahead (the next
//   batch is made while the consumer uses the current one); more depth would only cost memory
//   and the first touch of another ~150 MB block. Growth is by one batch, not tf.data's doubling.
// What differs: the knob for threads is the number of samples in flight (worker tasks pulling
// samples) inside one TBB arena sized for the most threads allowed, because a tbb::task_arena
// cannot be resized while work runs in it. Threads start at half the CPUs (rounded up: 1 on a
// 2-core machine) and grow one at a time while the consumer waits and each step raises the
// measured rate of finished samples; a step that does not is undone and retried after 5
// windows, then 10, 20, ... 80.
//
// Thread safety: the tuners are plain values used by the consumer thread only.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "media/api.h"
#include "pipeline/pipeline.h"  // available_cpus

HDL_API_BEGIN
namespace hdl::detail {

/// Hill climbing on the worker count from the consumer's wait time and the finished-sample
/// rate, one step per window (kWindow and at least a few samples per thread).
class ThreadTuner {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kWindow{200};
  /// A window in which the consumer waited at least this share of the time asks for a thread.
  static constexpr double kWaitShare = 0.10;
  /// Windows after a failed step before the step is tried again (the workload or the machine's
  /// load may change, and one noisy window may have failed it): 5, doubling per failure up to 80.
  static constexpr int kRetryWindows = 5, kMaxRetryWindows = 80;

  /// `start` threads now, never more than `max` (>= 1).
  ThreadTuner(int start, int max, Clock::time_point now);
  int threads() const { return threads_; }
  int max_threads() const { return max_; }

  /// Feeds the cumulative counts at `now`: samples finished by the workers, nanoseconds the
  /// consumer spent waiting. Returns the thread count to use from now on.
  int observe(Clock::time_point now, uint64_t samples_done, uint64_t wait_nanos);

 private:
  void begin_window(Clock::time_point now, uint64_t samples_done, uint64_t wait_nanos);

  int threads_;
  int max_;
  int ceiling_;              // a step to ceiling_ + 1 did not pay: the limit until a retry
  int windows_since_fail_ = 0;
  int retry_after_ = kRetryWindows;
  int failed_at_ = 0;        // the last step that did not pay went from here
  bool probing_ = false;     // the last window's step is on trial
  double rate_before_ = 0;   // finished samples per second before the step on trial
  Clock::time_point t0_;
  uint64_t samples0_ = 0, wait0_ = 0;
};

/// tf.data's prefetch rule, one batch at a time, within a memory budget.
class PrefetchTuner {
 public:
  /// Starts at `start` (tf.data: 1), clamped to the budget's depth once batch sizes are known;
  /// `budget` bytes of batches prepared ahead.
  PrefetchTuner(int start, size_t budget);
  int depth() const { return depth_; }
  /// The deepest prefetch the budget allows for batches of `batch_bytes` (>= 1, <= kMaxDepth).
  int max_depth(size_t batch_bytes) const;
  static constexpr int kMaxDepth = 16;

  /// At each next(): how many prefetched batches were finished when the consumer arrived (0:
  /// it had to wait), and the largest batch seen so far. Returns the depth to use from now on.
  int observe(int ready_on_arrival, size_t batch_bytes);

 private:
  int depth_;
  size_t budget_;
  bool upswing_ = true;  // until the buffer has been full once
};

}  // namespace hdl::detail
HDL_API_END
