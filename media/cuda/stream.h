// CUDA streams and events as RAII values, and the asynchronous copy between pinned host memory
// and a device.
//
// The pipeline's design (docs/CUDA.md): a copy stream per device uploads each finished batch
// from its pinned buffer and records an Event; device stages wait on that event on their own
// stream (Stream::wait, no host blocking), and the consumer's tensors are ordered on torch's
// current stream the same way (Stream::borrow + wait). Handles appear as void* (a cudaStream_t
// / cudaEvent_t) so that no CUDA header leaks into this one.
//
// Without a usable device, Stream::create and Event::create return kUnsupported
// "no CUDA device: <reason>"; built without CUDA, "not available: built without CUDA".
//
// Thread safety: CUDA streams and events may be used from any thread; these wrappers are
// values, so concurrent use of one object is the caller's to synchronise, as for any value.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "media/api.h"
#include "media/device.h"
#include "media/status.h"
#include "media/tensor.h"

HDL_API_BEGIN
namespace hdl::cuda {

class Event;

/// A CUDA stream on one device. Owned streams are destroyed with the object (after work queued
/// on them completes, as cudaStreamDestroy does); borrowed ones are left alone. Move-only.
class Stream {
 public:
  /// A new non-blocking stream (no implicit sync with the legacy default stream) on `device`
  /// (cuda:N). `priority`: CUDA stream priority (lower is higher; clamped to the device range).
  static Result<Stream> create(Device device, int priority = 0);
  /// A non-owning wrapper of a stream someone else owns, e.g. torch.cuda.current_stream()'s
  /// cuda_stream. nullptr is the legacy default stream.
  static Stream borrow(void* cuda_stream, Device device);

  Stream() = default;  ///< empty: valid() is false
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  bool valid() const { return valid_; }
  void* handle() const { return stream_; }  ///< the cudaStream_t
  Device device() const { return device_; }

  /// Blocks the calling thread until all work queued so far has finished.
  Status synchronize() const;
  /// Work queued on this stream after the call waits for `event` (cudaStreamWaitEvent); the
  /// host does not block. An event never recorded is complete (CUDA's rule).
  Status wait(const Event& event) const;

 private:
  void reset();
  void* stream_ = nullptr;
  Device device_ = Device::cpu();
  bool owned_ = false;
  bool valid_ = false;
};

/// A CUDA event (timing disabled: the cheap kind) on one device. Move-only.
class Event {
 public:
  static Result<Event> create(Device device);

  Event() = default;  ///< empty: valid() is false
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  bool valid() const { return event_ != nullptr; }
  void* handle() const { return event_; }  ///< the cudaEvent_t
  Device device() const { return device_; }

  /// Captures the work queued on `stream` so far. Precondition: same device.
  Status record(const Stream& stream);
  /// Blocks the calling thread until the captured work has finished.
  Status synchronize() const;
  /// True when the captured work has finished, false while pending.
  Result<bool> query() const;

 private:
  void* event_ = nullptr;
  Device device_ = Device::cpu();
};

/// How a producer of device batches and their consumers order themselves without blocking the
/// host. The producer records `ready` after the work that writes a batch; a consumer makes its
/// stream wait on it (wait_ready). When a consumer is done with the batch (its stream has the
/// last work that reads it queued), it calls release_after(its stream): the producer's stream
/// waits on that point before it writes pooled memory again (take_releases). This is torch's
/// record_stream rule for memory its caching allocator recycles. One DeviceSync per batch;
/// the release list is shared by all batches of one producer. Thread-safe.
class DeviceSync {
 public:
  /// Shared by every batch of one producer.
  class Releases {
   public:
    void add(Event event);
    /// The events added since the last call, for the producer's stream to wait on.
    std::vector<Event> take();

   private:
    std::mutex mu_;
    std::vector<Event> events_;
  };

  DeviceSync(Event ready, std::shared_ptr<Releases> releases)
      : ready_(std::move(ready)), releases_(std::move(releases)) {}
  const Event& ready() const { return ready_; }
  /// `consumer`'s later work waits until the batch is written (cudaStreamWaitEvent).
  Status wait_ready(const Stream& consumer) const { return consumer.wait(ready_); }
  /// The producer reuses the batch's memory only after the work queued on `consumer` so far.
  Status release_after(const Stream& consumer) const;

 private:
  Event ready_;
  std::shared_ptr<Releases> releases_;
};

/// Enqueues on `stream` the copy of `src` into `dst` and records `done` after it. Directions:
/// pinned host -> device (the main use: a batch to the GPU), device -> pinned host, device ->
/// device (the stream's device). Same shape and dtype; each view contiguous, or dense within a
/// row with a row stride (strides[0]) of at least a row (a slot of a padded batch, a crop of
/// an image's rows): a 2-D copy. Host memory must be page-locked (PinnedHostAllocator):
/// pageable memory would make the "async" copy synchronous, so it is refused.
/// Returns kInvalidArgument for mismatched or unsupported views, pageable host memory, or a
/// view whose device() disagrees with where its memory is; kUnsupported without a device;
/// kInternal for CUDA errors. Both buffers must stay alive until `done` completes.
Status copy_async(const ConstTensorView& src, const TensorView& dst, Stream& stream, Event& done);

/// The same, recording a new event on `stream` for the caller to wait on.
Result<Event> copy_async(const ConstTensorView& host_pinned, const TensorView& device, Stream& stream);

}  // namespace hdl::cuda
HDL_API_END
