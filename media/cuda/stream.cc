#include "media/cuda/stream.h"

#include <algorithm>
#include <utility>

#include "media/cuda/runtime.h"
#if HDL_HAVE_CUDA
#include "media/cuda/detail/check.h"
#endif

namespace hdl::cuda {
namespace {

// A view as rows of dense bytes: `rows` rows of `row_bytes`, `pitch` bytes apart.
struct Rows {
  int64_t rows = 1, row_bytes = 0, pitch = 0;
};

// Contiguous views are one row; otherwise every dimension after the first must be dense.
Result<Rows> rows_of(const ConstTensorView& v, const char* which) {
  const int64_t elem = static_cast<int64_t>(dtype_size(v.dtype));
  if (v.ndim() == 0 || v.is_contiguous()) {
    const int64_t bytes = v.num_elements() * elem;
    return Rows{1, bytes, bytes};
  }
  const Shape dense = contiguous_strides(v.shape);
  for (int d = 1; d < v.ndim(); ++d) {
    if (v.shape[d] > 1 && v.strides[d] != dense[d]) {
      return Status::invalid_argument(std::string("copy_async: ") + which + " " +
                                      v.shape.to_string() + " is not dense within its rows");
    }
  }
  const int64_t row = v.num_elements() / std::max<int64_t>(v.shape[0], 1);
  if (v.strides[0] < row) {
    return Status::invalid_argument(std::string("copy_async: ") + which + " rows overlap");
  }
  return Rows{v.shape[0], row * elem, v.strides[0] * elem};
}

}  // namespace

#if HDL_HAVE_CUDA
namespace {

// Where `p` lives per CUDA, checked against what the view says and against pageable memory.
Status check_memory(const void* p, Device says, const char* which) {
  cudaPointerAttributes a{};
  HDL_CUDA_RETURN_IF_ERROR(cudaPointerGetAttributes(&a, p));
  const bool on_device = a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
  if (a.type == cudaMemoryTypeUnregistered) {
    return Status::invalid_argument(std::string("copy_async: ") + which +
                                    " is pageable host memory; allocate it with "
                                    "PinnedHostAllocator so the copy can be asynchronous");
  }
  if (on_device != !says.is_cpu() || (on_device && a.device != says.index)) {
    return Status::invalid_argument(std::string("copy_async: ") + which + " view says " +
                                    says.to_string() + " but its memory is " +
                                    (on_device ? Device::cuda(a.device).to_string() : "pinned host"));
  }
  return Status::ok();
}

}  // namespace

Result<Stream> Stream::create(Device device, int priority) {
  if (device.is_cpu()) return Status::invalid_argument("Stream::create: a cuda device is needed");
  HDL_RETURN_IF_ERROR(require_device(device));
  detail::DeviceGuard guard(device.index);
  HDL_RETURN_IF_ERROR(guard.status());
  int least = 0, greatest = 0;
  HDL_CUDA_RETURN_IF_ERROR(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cudaStream_t s = nullptr;
  HDL_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking,
                                                        std::clamp(priority, greatest, least)));
  Stream out;
  out.stream_ = s, out.device_ = device, out.owned_ = true, out.valid_ = true;
  return out;
}

void Stream::reset() {
  if (owned_ && stream_) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
  stream_ = nullptr, owned_ = false, valid_ = false;
}

Status Stream::synchronize() const {
  return detail::to_status(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)),
                           "cudaStreamSynchronize");
}

Status Stream::wait(const Event& event) const {
  return detail::to_status(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream_),
                                               static_cast<cudaEvent_t>(event.handle()), 0),
                           "cudaStreamWaitEvent");
}

Result<Event> Event::create(Device device) {
  if (device.is_cpu()) return Status::invalid_argument("Event::create: a cuda device is needed");
  HDL_RETURN_IF_ERROR(require_device(device));
  detail::DeviceGuard guard(device.index);
  HDL_RETURN_IF_ERROR(guard.status());
  cudaEvent_t e = nullptr;
  HDL_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  Event out;
  out.event_ = e, out.device_ = device;
  return out;
}

Event::~Event() {
  if (event_) cudaEventDestroy(static_cast<cudaEvent_t>(event_));
}

Status Event::record(const Stream& stream) {
  if (stream.device() != device_) {
    return Status::invalid_argument("Event::record: event on " + device_.to_string() +
                                    ", stream on " + stream.device().to_string());
  }
  return detail::to_status(cudaEventRecord(static_cast<cudaEvent_t>(event_),
                                           static_cast<cudaStream_t>(stream.handle())),
                           "cudaEventRecord");
}

Status Event::synchronize() const {
  return detail::to_status(cudaEventSynchronize(static_cast<cudaEvent_t>(event_)),
                           "cudaEventSynchronize");
}

Result<bool> Event::query() const {
  const cudaError_t e = cudaEventQuery(static_cast<cudaEvent_t>(event_));
  if (e == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  HDL_RETURN_IF_ERROR(detail::to_status(e, "cudaEventQuery"));
  return true;
}

Status copy_async(const ConstTensorView& src, const TensorView& dst, Stream& stream, Event& done) {
  if (src.shape != dst.shape || src.dtype != dst.dtype) {
    return Status::invalid_argument("copy_async: " + src.shape.to_string() + " " +
                                    dtype_name(src.dtype) + " -> " + dst.shape.to_string() + " " +
                                    dtype_name(dst.dtype));
  }
  if (!stream.valid()) return Status::invalid_argument("copy_async: no stream");
  HDL_ASSIGN_OR_RETURN(Rows s, rows_of(src, "source"));
  HDL_ASSIGN_OR_RETURN(Rows d, rows_of(ConstTensorView(dst), "destination"));
  if (src.num_elements() > 0) {
    HDL_RETURN_IF_ERROR(check_memory(src.data, src.device, "source"));
    HDL_RETURN_IF_ERROR(check_memory(dst.data, dst.device, "destination"));
    detail::DeviceGuard guard(stream.device().index);
    HDL_RETURN_IF_ERROR(guard.status());
    const auto cs = static_cast<cudaStream_t>(stream.handle());
    if (s.rows == 1 && d.rows == 1) {
      HDL_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst.data, src.data, static_cast<size_t>(s.row_bytes),
                                               cudaMemcpyDefault, cs));
    } else {
      // One side is one contiguous row: see it as rows of the other side's width.
      const int64_t rows = std::max(s.rows, d.rows), width = src.num_bytes() / std::max<int64_t>(rows, 1);
      const int64_t sp = s.rows == 1 ? width : s.pitch, dp = d.rows == 1 ? width : d.pitch;
      HDL_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(dst.data, static_cast<size_t>(dp), src.data,
                                                 static_cast<size_t>(sp), static_cast<size_t>(width),
                                                 static_cast<size_t>(rows), cudaMemcpyDefault, cs));
    }
  }
  return done.record(stream);
}

#else  // built without CUDA: every entry point reports it.

namespace {
Status no_cuda() { return Status::unsupported("not available: built without CUDA"); }
}  // namespace

Result<Stream> Stream::create(Device, int) { return no_cuda(); }
void Stream::reset() { stream_ = nullptr, owned_ = false, valid_ = false; }
Status Stream::synchronize() const { return no_cuda(); }
Status Stream::wait(const Event&) const { return no_cuda(); }
Result<Event> Event::create(Device) { return no_cuda(); }
Event::~Event() = default;
Status Event::record(const Stream&) { return no_cuda(); }
Status Event::synchronize() const { return no_cuda(); }
Result<bool> Event::query() const { return no_cuda(); }
Status copy_async(const ConstTensorView& src, const TensorView& dst, Stream&, Event&) {
  (void)rows_of;
  return no_cuda();
}

#endif

Stream Stream::borrow(void* cuda_stream, Device device) {
  Stream s;
  s.stream_ = cuda_stream, s.device_ = device, s.owned_ = false, s.valid_ = true;
  return s;
}

Stream::~Stream() { reset(); }

Stream::Stream(Stream&& o) noexcept
    : stream_(std::exchange(o.stream_, nullptr)), device_(o.device_),
      owned_(std::exchange(o.owned_, false)), valid_(std::exchange(o.valid_, false)) {}

Stream& Stream::operator=(Stream&& o) noexcept {
  if (this != &o) {
    reset();
    stream_ = std::exchange(o.stream_, nullptr), device_ = o.device_;
    owned_ = std::exchange(o.owned_, false), valid_ = std::exchange(o.valid_, false);
  }
  return *this;
}

Event::Event(Event&& o) noexcept : event_(std::exchange(o.event_, nullptr)), device_(o.device_) {}

Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    Event old(std::move(*this));
    event_ = std::exchange(o.event_, nullptr), device_ = o.device_;
  }
  return *this;
}

void DeviceSync::Releases::add(Event event) {
  std::lock_guard lock(mu_);
  events_.push_back(std::move(event));
}

std::vector<Event> DeviceSync::Releases::take() {
  std::lock_guard lock(mu_);
  return std::exchange(events_, {});
}

Status DeviceSync::release_after(const Stream& consumer) const {
  if (!releases_) return Status::ok();
  HDL_ASSIGN_OR_RETURN(Event e, Event::create(consumer.device()));
  HDL_RETURN_IF_ERROR(e.record(consumer));
  releases_->add(std::move(e));
  return Status::ok();
}

Result<Event> copy_async(const ConstTensorView& host_pinned, const TensorView& device, Stream& stream) {
  HDL_ASSIGN_OR_RETURN(Event done, Event::create(stream.device()));
  HDL_RETURN_IF_ERROR(copy_async(host_pinned, device, stream, done));
  return done;
}

}  // namespace hdl::cuda
