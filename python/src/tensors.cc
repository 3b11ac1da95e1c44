// Zero-copy hand-over of hdl tensors to torch (DLPack) and numpy (array with a capsule base).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <algorithm>
#include <string>
#include <span>
#include <chrono>
#include <vector>

#include "decoders/nvjpeg/nvjpeg_hardware.h"
#include "decoders/video_decoder.h"
#include "media/cuda/runtime.h"
#include "media/cuda/stream.h"
#include "media/cuda/allocator.h"
#include "python/src/bindings.h"

namespace hdl::python {
namespace {

// The DLPack ABI (dlpack.h v0.6/v0.7, which torch 1.13 speaks), written out so that the
// extension needs neither torch's headers nor libtorch.
struct DLDevice {
  int32_t device_type;  // kDLCPU = 1, kDLCUDA = 2
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;  // kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; nullptr = compact row-major
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

// What a capsule owns: the tensor (a Storage reference) and the shape/stride arrays.
struct Holder {
  DLManagedTensor managed{};
  Tensor tensor;
  std::vector<int64_t> shape, strides;
  std::shared_ptr<const cuda::DeviceSync> sync;  // device tensors of a gpu stage
  void* consumer = nullptr;                      // the cudaStream_t that reads them
};

DLDataType dl_dtype(DType t) {
  switch (t) {
    case DType::kU8: return {1, 8, 1};
    case DType::kI16: return {0, 16, 1};
    case DType::kI32: return {0, 32, 1};
    case DType::kI64: return {0, 64, 1};
    case DType::kF16: return {2, 16, 1};
    case DType::kBF16: return {4, 16, 1};
    case DType::kF32: return {2, 32, 1};
  }
  return {1, 8, 1};
}

// Called by the consumer (torch) when it drops the tensor, or by the capsule if never consumed.
// Needs no GIL: it touches no Python object.
void delete_holder(DLManagedTensor* self) {
  auto* h = static_cast<Holder*>(self->manager_ctx);
  // The memory goes back to the pipeline's pool now; it writes there again only after the
  // consumer's work queued so far. Errors (CUDA already shut down at exit) are ignored.
  if (h->sync) (void)h->sync->release_after(cuda::Stream::borrow(h->consumer, h->tensor.device()));
  delete h;
}

void capsule_destructor(PyObject* capsule) {
  // A consumed capsule is renamed "used_dltensor": the consumer owns the tensor now.
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    if (m && m->deleter) m->deleter(m);
  } else {
    PyErr_Clear();
  }
}

const char* numpy_name(DType t) {
  if (t == DType::kBF16) throw py::type_error("numpy has no bfloat16: cast (fn.cast) or use torch output");
  return dtype_name(t);
}

}  // namespace

py::object to_dlpack(const Tensor& t, std::shared_ptr<const cuda::DeviceSync> sync, void* consumer) {
  auto* h = new Holder;
  h->tensor = t;
  h->sync = std::move(sync);
  h->consumer = consumer;
  h->shape.assign(t.shape().begin(), t.shape().end());
  const Shape strides = contiguous_strides(t.shape());
  h->strides.assign(strides.begin(), strides.end());
  DLTensor& d = h->managed.dl_tensor;
  d.data = t.defined() ? t.data() : nullptr;
  const Device dev = t.device();
  d.device = {dev.is_cpu() ? 1 : 2, dev.index};
  d.ndim = t.shape().ndim();
  d.dtype = dl_dtype(t.dtype());
  d.shape = h->shape.data();
  d.strides = h->strides.data();
  d.byte_offset = 0;
  h->managed.manager_ctx = h;
  h->managed.deleter = &delete_holder;
  PyObject* cap = PyCapsule_New(&h->managed, "dltensor", &capsule_destructor);
  if (!cap) {
    delete h;
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(cap);
}

py::object to_numpy(const Tensor& t, bool writable) {
  if (!t.device().is_cpu()) throw py::type_error("numpy output needs host memory; this tensor is on " + t.device().to_string());
  const py::dtype dt(numpy_name(t.dtype()));
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  std::vector<py::ssize_t> strides;
  for (int64_t s : contiguous_strides(t.shape())) strides.push_back(static_cast<py::ssize_t>(s * dtype_size(t.dtype())));
  // The base capsule owns a Tensor copy: the Storage lives as long as the array (and its views).
  py::capsule base(new Tensor(t), [](void* p) { delete static_cast<Tensor*>(p); });
  py::array a(dt, shape, strides, t.defined() ? t.data() : nullptr, base);
  if (!writable) py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return std::move(a);
}

py::object view_to_numpy(const ConstTensorView& v) {
  const py::dtype dt(numpy_name(v.dtype));
  std::vector<py::ssize_t> shape(v.shape.begin(), v.shape.end());
  std::vector<py::ssize_t> strides;
  for (int64_t s : v.strides) strides.push_back(static_cast<py::ssize_t>(s * dtype_size(v.dtype)));
  // A non-owning array: a base object is given so that pybind11 does not copy.
  py::array a(dt, shape, strides, v.data, py::none());
  py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return std::move(a);
}

py::object batch_to_python(const Batch& b, bool numpy, std::optional<uintptr_t> consumer) {
  const auto& sync = b.device_sync();
  void* stream = consumer ? reinterpret_cast<void*>(*consumer) : nullptr;
  if (sync) {
    if (numpy) throw py::type_error("numpy output needs host memory; this pipeline's gpu stage writes device memory");
    Status st;
    {
      py::gil_scoped_release nogil;
      st = consumer ? sync->wait_ready(cuda::Stream::borrow(stream, sync->ready().device()))
                    : sync->ready().synchronize();
    }
    if (!st.is_ok()) throw std::runtime_error("gpu stage: " + st.message());
  }
  auto one = [&](const Tensor& t) -> py::object {
    if (!t.defined()) return py::none();
    if (numpy) return to_numpy(t);
    return consumer ? to_dlpack(t, sync, stream) : to_dlpack(t);
  };
  if (b.is_dense() && b.size() > 0) return one(b.as_tensor());
  py::list out;
  for (int64_t i = 0; i < b.size(); ++i) out.append(one(b.sample(i)));
  return std::move(out);
}

void bind_tensors(py::module_& m) {
  m.def("cuda_status", [] {
    py::dict d;
    d["built"] = cuda::built_with_cuda();
    d["available"] = cuda::available();
    d["device_count"] = cuda::device_count();
    d["reason"] = cuda::unavailable_reason();
    d["version"] = cuda::version_string();
    return d;
  }, "What this build and machine offer the gpu stage: built, available, device_count, reason (why not), version");
  m.def("hardware_jpeg_status", [](int device) {
    Status s;
    {
      py::gil_scoped_release nogil;
      NvjpegHardwareDecoder hw(device);
      s = hw.status();
    }
    py::dict d;
    d["available"] = s.is_ok();
    d["reason"] = s.is_ok() ? std::string() : s.message();
    return d;
  }, py::arg("device") = 0,
     "Whether cuda:device has hardware JPEG engines the mixed stage can use: available, reason (why not)");
  m.def("video_hardware_status", [](int device) {
    Status s;
    {
      py::gil_scoped_release nogil;
      s = video_hardware_status(device);
    }
    py::dict d;
    d["available"] = s.is_ok();
    d["reason"] = s.is_ok() ? std::string() : s.message();
    return d;
  }, py::arg("device") = 0,
     "Whether video_reader(device='mixed') can decode on cuda:device's hardware video decoders (NVDEC through "
     "FFmpeg's cuda hwaccel): available, reason (why not)");
  // The engines alone (samples/benchmark/gpu_bench.py's hw-alone): the files' bytes decoded in
  // batches of `batch`, `repeats` times over, into device memory; the wall time of the decode
  // calls only (outputs allocated once, supports() done once per file, outside the timing).
  m.def("_hardware_decode_bench", [](const std::vector<std::string>& files, int batch, int device, int repeats) {
    py::dict d;
    std::vector<std::span<const uint8_t>> taken;
    std::vector<Tensor> outs;
    int64_t refused = 0;
    double seconds = 0;
    Status error;
    {
      py::gil_scoped_release nogil;
      NvjpegHardwareDecoder hw(device);
      error = hw.status();
      Result<cuda::Stream> stream = error.is_ok() ? cuda::Stream::create(Device::cuda(device)) : Result<cuda::Stream>(error);
      if (!stream.is_ok()) error = stream.status();
      for (size_t i = 0; error.is_ok() && i < files.size(); ++i) {
        const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(files[i].data()), files[i].size());
        Result<ImageInfo> info = hw.supports(bytes, DecodeRequest{});
        if (!info.is_ok()) {
          ++refused;
          continue;
        }
        taken.push_back(bytes);
        outs.push_back(Tensor::empty(Shape{info->height, info->width, 3}, DType::kU8, Layout::kHWC,
                                     cuda::device_allocator(device)));
      }
      for (int r = 0; error.is_ok() && r < repeats; ++r) {
        for (size_t first = 0; error.is_ok() && first < taken.size(); first += static_cast<size_t>(batch)) {
          std::vector<HardwareDecodeItem> items;
          for (size_t i = first; i < std::min(taken.size(), first + static_cast<size_t>(batch)); ++i)
            items.push_back({taken[i], outs[i].view()});
          const auto t0 = std::chrono::steady_clock::now();
          for (const Status& s : hw.decode(items, ColorFormat::kRGB, *stream))
            if (!s.is_ok()) error = s;
          if (error.is_ok()) error = stream->synchronize();
          seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        }
      }
    }
    if (!error.is_ok()) throw std::runtime_error(error.to_string());
    d["images"] = static_cast<int64_t>(taken.size()) * repeats;
    d["seconds"] = seconds;
    d["refused"] = refused;
    return d;
  }, py::arg("files"), py::arg("batch") = 256, py::arg("device") = 0, py::arg("repeats") = 1);
  // Used by tests: a pooled-looking tensor without a pipeline.
  m.def("_test_tensor", [](std::vector<int64_t> shape, const std::string& dtype, bool numpy) {
    Shape s(shape.begin(), shape.end());
    Tensor t = Tensor::empty(s, parse_dtype(dtype));
    std::memset(t.data(), 0, t.num_bytes());
    return numpy ? to_numpy(t) : to_dlpack(t);
  });
}

}  // namespace hdl::python
