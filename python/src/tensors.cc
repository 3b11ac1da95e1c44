// Zero-copy hand-over of hdl tensors to torch (DLPack) and numpy (array with a capsule base).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "media/cuda/stream.h"
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
  // Used by tests: a pooled-looking tensor without a pipeline.
  m.def("_test_tensor", [](std::vector<int64_t> shape, const std::string& dtype, bool numpy) {
    Shape s(shape.begin(), shape.end());
    Tensor t = Tensor::empty(s, parse_dtype(dtype));
    std::memset(t.data(), 0, t.num_bytes());
    return numpy ? to_numpy(t) : to_dlpack(t);
  });
}

}  // namespace hdl::python
