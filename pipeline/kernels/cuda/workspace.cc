#include "pipeline/kernels/cuda/workspace.h"

#include <string>

#include "media/cuda/allocator.h"
#if HDL_HAVE_CUDA
#include "media/cuda/detail/check.h"
#endif

namespace hdl::kernels::cuda {

Result<void*> DeviceWorkspace::buffer(int slot, size_t bytes) {
  if (slot < 0 || slot >= kSlots) return Status::internal("DeviceWorkspace: bad slot");
  StoragePtr& b = buffers_[slot];
  if (!b || b->capacity() < bytes) {
    b.reset();  // free first: the old block is not needed and device memory may be tight
    try {
      // Grow by half again so that slowly growing requests do not reallocate every time.
      b = Storage::allocate(hdl::cuda::device_allocator(device_.index), bytes + bytes / 2);
    } catch (const hdl::cuda::AllocationError& e) {
      return Status::resource_exhausted(e.what());
    } catch (const std::exception& e) {
      return Status::resource_exhausted(std::string("DeviceWorkspace: ") + e.what());
    }
  }
  return b->data();
}

Result<void*> DeviceWorkspace::upload(int slot, const void* host, size_t bytes,
                                      hdl::cuda::Stream& stream) {
#if HDL_HAVE_CUDA
  HDL_ASSIGN_OR_RETURN(void* d, buffer(slot, bytes));
  HDL_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d, host, bytes, cudaMemcpyHostToDevice,
                                           static_cast<cudaStream_t>(stream.handle())));
  return d;
#else
  (void)slot, (void)host, (void)bytes, (void)stream;
  return Status::unsupported("not available: built without CUDA");
#endif
}

}  // namespace hdl::kernels::cuda
