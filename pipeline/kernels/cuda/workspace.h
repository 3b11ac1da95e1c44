// Per-stream scratch of the device kernels: host-side tables (resize passes, lookup tables,
// sample descriptors) and the device buffers they are uploaded into, plus intermediate images.
// Buffers only grow, so steady state allocates nothing; growing frees the old device block
// (cudaFree waits for the device, so work still reading it is safe, just slow).
//
// Uploads are small (a few KB) asynchronous copies on the kernel's stream from the workspace's
// own host vectors, whose contents the kernels' host code rewrites only after CUDA has taken
// them (a pageable-source cudaMemcpyAsync returns once the source may be reused).
//
// Thread safety: not thread-safe. Use one workspace per stream (work on one stream runs in
// order, which is what makes reusing the device buffers safe), like kernels::ResizeWorkspace.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "media/api.h"
#include "media/cuda/stream.h"
#include "media/storage.h"
#include "pipeline/kernels/cuda/host_tables.h"

HDL_API_BEGIN
namespace hdl::kernels::cuda {

class DeviceWorkspace {
 public:
  /// Device buffers come from `device` (cuda:N) when first needed; constructing touches no CUDA.
  explicit DeviceWorkspace(Device device = Device::cuda(0)) : device_(device) {}

  Device device() const { return device_; }

  /// Device buffer number `slot` (< kSlots), at least `bytes` long. kResourceExhausted when
  /// the allocation fails, kUnsupported without a device.
  Result<void*> buffer(int slot, size_t bytes);
  /// buffer(slot, bytes) holding a copy of `host` (enqueued on `stream`).
  Result<void*> upload(int slot, const void* host, size_t bytes, hdl::cuda::Stream& stream);

  static constexpr int kSlots = 6;

  // Host-side scratch reused by the kernels' launch code.
  ResizePasses resize_passes;
  CmnTable cmn_table;
  std::vector<uint8_t> host_params;

 private:
  Device device_;
  std::array<StoragePtr, kSlots> buffers_;
};

}  // namespace hdl::kernels::cuda
HDL_API_END
