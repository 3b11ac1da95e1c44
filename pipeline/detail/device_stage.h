// The device stage of the executor (private): what runs once a batch's cpu stage is complete,
// on the pipeline's CUDA stream, without blocking the host on the device.
//
// For each batch: the device halves of the mixed-stage operators run first (image decoders:
// host bytes and what their host half staged on the cpu stage in, device pixels out; they read
// their inputs on the host, nothing is uploaded for them). Then the pinned host values the gpu
// stage reads, and the cpu stage's pipeline outputs (labels: a pipeline with a device stage
// hands out device batches only), are uploaded
// (cudaMemcpyAsync on the stream; the pinned blocks go back to their pool only once the copies
// have finished), the gpu-stage operators enqueue their kernels (Operator::run_batch, one
// launch per batch where the kernel allows), and an event recorded after them becomes the
// batch's ready event (media/cuda/stream.h DeviceSync). Before the stage writes pooled device
// memory again, its stream waits on the points where consumers released earlier batches
// (DeviceSync::release_after), so memory a consumer's kernels may still read is never
// overwritten. Values no consumer sees live in per-value arenas the stream rewrites in order.
//
// Copies and kernels share one stream per pipeline: in order on the device, which is what makes
// reusing uploads and intermediates safe; the host side of a batch takes microseconds, so one
// stream is not the bottleneck (docs/CUDA.md has the measurements).
//
// Thread safety: run() is called by whichever worker thread completes a batch; calls are
// serialised by the stage's mutex. stats() may be called from any thread.
#pragma once

#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "media/api.h"
#include "media/cuda/stream.h"
#include "media/storage.h"
#include "pipeline/kernels/cuda/workspace.h"

HDL_API_BEGIN
namespace hdl::detail {

struct Job;
struct ExecutorCore;

class DeviceStage {
 public:
  /// Throws ConfigError naming the first gpu node when the device cannot be used.
  DeviceStage(ExecutorCore& core, int device_index);
  ~DeviceStage();

  /// Enqueues the batch's device work; sets job.device and job.device_sync. Data errors of the
  /// stage (an operator refusing its inputs) and CUDA errors come back as a Status.
  Status run(Job& job);

  Device device() const { return device_; }
  /// Device memory: the pool of batches handed to consumers, plus the in-place arenas.
  BufferPoolStats pool_stats() const {
    std::lock_guard lock(mu_);
    BufferPoolStats s = pool_.stats();
    s.bytes_allocated += arena_bytes();
    return s;
  }
  /// Device memory for `value` of the batch being run (under run()): from the pool for a
  /// pipeline output (the consumer holds it), else from the value's arena, which is rewritten
  /// batch after batch and only grows (stream order makes that safe).
  Tensor allocate(int value, const Shape& shape, DType dtype, Layout layout);
  /// Values of the cpu stage the device stage uploads (value ids): what gpu nodes read, and
  /// the cpu stage's pipeline outputs.
  const std::vector<int>& uploads() const { return uploads_; }

 private:
  struct Pending {
    std::shared_ptr<const cuda::DeviceSync> sync;
    std::vector<Tensor> pinned;  // upload sources and what operators hold (BatchIO::hold_until_ready), freed once `sync` is ready
  };
  Status run_locked(Job& job);
  /// Uploads the cpu values of `job` that the device stage reads or hands out; `late`: those
  /// only handed out (pipeline outputs no device node reads), uploaded after the nodes ran.
  Status upload(Job& job, Pending& pending, bool late);
  /// Queues the stream's waits for the consumers' releases taken so far: called before the
  /// first write into pooled (consumer-visible) memory of a batch, and not earlier, so that
  /// work on memory only this stream sees never waits for a consumer (a mixed node's device
  /// half that drains the stream would otherwise wait for the training step that read the
  /// last batch).
  void wait_for_releases();
  void reclaim(bool wait);
  size_t arena_bytes() const;
  struct Arena {
    StoragePtr block;
    size_t used = 0;
  };

  ExecutorCore& core_;
  Device device_;
  std::vector<int> nodes_;    // mixed and gpu nodes, in graph order
  std::vector<int> uploads_;  // cpu-stage values that gpu nodes read as inputs
  mutable std::mutex mu_;     // serialises run(); guards everything below
  cuda::Stream stream_;
  cuda::Event copied_;        // re-recorded after each upload (cuda::copy_async wants one)
  kernels::cuda::DeviceWorkspace workspace_;
  BufferPool pool_;           // device memory of uploads, intermediates and outputs
  std::shared_ptr<cuda::DeviceSync::Releases> releases_;
  std::vector<cuda::Event> release_waits_;  // taken from releases_, not yet queued on the stream
  std::deque<Pending> pending_;
  std::vector<Arena> arenas_;     // per value id: values no consumer sees
  std::vector<bool> is_output_;   // per value id
  std::vector<bool> upload_late_;  // per value id: a cpu output no device node reads
};

}  // namespace hdl::detail
HDL_API_END
