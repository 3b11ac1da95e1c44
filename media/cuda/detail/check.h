// Private: CUDA error -> Status, for the .cc/.cu files of the CUDA backend. Includes the CUDA
// runtime headers, so it is only ever included under HDL_HAVE_CUDA and never from a public
// header.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "media/api.h"
#include "media/status.h"

HDL_API_BEGIN
namespace hdl::cuda::detail {

/// "what: out of memory (cudaErrorMemoryAllocation)". Clears CUDA's sticky last error for
/// non-sticky errors so the next call does not report this one again.
inline std::string error_text(cudaError_t e, const std::string& what) {
  (void)cudaGetLastError();
  return what + ": " + cudaGetErrorString(e) + " (" + cudaGetErrorName(e) + ")";
}

/// Ok, or kInternal / kResourceExhausted (out of memory) naming the call that failed.
inline Status to_status(cudaError_t e, const std::string& what) {
  if (e == cudaSuccess) return Status::ok();
  if (e == cudaErrorMemoryAllocation) return Status::resource_exhausted(error_text(e, what));
  return Status::internal(error_text(e, what));
}

}  // namespace hdl::cuda::detail

/// Returns the Status of a failed CUDA runtime call from the enclosing function.
#define HDL_CUDA_RETURN_IF_ERROR(call) \
  HDL_RETURN_IF_ERROR(::hdl::cuda::detail::to_status((call), #call))

namespace hdl::cuda::detail {

/// Makes `index` the calling thread's current device for the guard's lifetime (CUDA's current
/// device is per thread; pipeline threads must not leak a switch to other code).
class DeviceGuard {
 public:
  explicit DeviceGuard(int index)
      : previous_(current()),
        status_(to_status(previous_ == index ? cudaSuccess : cudaSetDevice(index), "cudaSetDevice")) {}
  ~DeviceGuard() {
    if (previous_ >= 0 && status_.is_ok()) cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  const Status& status() const { return status_; }

 private:
  static int current() {
    int d = -1;
    if (cudaGetDevice(&d) != cudaSuccess) d = -1, (void)cudaGetLastError();
    return d;
  }

  int previous_ = -1;
  Status status_;
};

}  // namespace hdl::cuda::detail
HDL_API_END
