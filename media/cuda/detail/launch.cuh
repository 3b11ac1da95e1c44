// Private to the .cu files of the device kernels (pipeline/kernels/cuda, decoders/kernels/cuda):
// views as kernels see them, launch shapes, argument checks. In media/ because both layers'
// kernels use it. Includes CUDA headers; never included by a public header. The kernels'
// files name it `detail` (namespace detail = hdl::cuda::detail).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "media/cuda/detail/check.h"
#include "media/cuda/stream.h"
#include "media/tensor.h"

namespace hdl::cuda::detail {

/// A 3-D view by value: element (a, b, c) at data[a * s0 + b * s1 + c * s2].
template <typename T>
struct View3 {
  T* data;
  int64_t n0, n1, n2;
  int64_t s0, s1, s2;
  __device__ T& at(int64_t a, int64_t b, int64_t c) const { return data[a * s0 + b * s1 + c * s2]; }
  bool dense() const { return s2 == 1 && s1 == n2; }
};

template <typename T, typename V>
View3<T> view3(const V& v) {
  return {static_cast<T*>(const_cast<void*>(static_cast<const void*>(v.data))),
          v.shape[0], v.shape[1], v.shape[2], v.strides[0], v.strides[1], v.strides[2]};
}

inline cudaStream_t raw(const Stream& s) { return static_cast<cudaStream_t>(s.handle()); }

/// Blocks of 32 x 8 threads over a w x h plane (times n in z); y is grid-strided past 65535
/// blocks, so kernels loop over y.
inline dim3 block2() { return dim3(32, 8, 1); }
inline dim3 grid2(int64_t w, int64_t h, int64_t n = 1) {
  const int64_t gx = (w + 31) / 32, gy = std::min<int64_t>((h + 7) / 8, 65535);
  return dim3(static_cast<unsigned>(std::max<int64_t>(gx, 1)), static_cast<unsigned>(std::max<int64_t>(gy, 1)),
              static_cast<unsigned>(std::max<int64_t>(n, 1)));
}

/// The stream is usable and every view lives on its device.
inline Status check_device(const char* what, const Stream& s,
                           std::initializer_list<Device> views) {
  if (!s.valid() || s.device().is_cpu()) {
    return Status::invalid_argument(std::string(what) + ": needs a CUDA stream");
  }
  for (const Device& d : views) {
    if (d != s.device()) {
      return Status::invalid_argument(std::string(what) + ": a view on " + d.to_string() +
                                      " given to a stream on " + s.device().to_string());
    }
  }
  return Status::ok();
}

/// Ok, or the launch's error named after `what`.
inline Status launched(const char* what) {
  return to_status(cudaGetLastError(), std::string(what) + " launch");
}

}  // namespace hdl::cuda::detail
