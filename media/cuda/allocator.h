// CUDA allocators behind media/storage.h's Allocator: page-locked host memory (the staging
// buffers the copy engines read) and device memory. Both work with BufferPool, which is how
// the pipeline uses them: cudaHostAlloc / cudaMalloc cost milliseconds and synchronise the
// device, so blocks are allocated once and recycled.
//
// Construction never touches CUDA, so an allocator can be made (and handed to a pool) on a
// machine without a GPU; allocate() is where a missing device is reported, as an
// AllocationError (a std::bad_alloc, as Allocator::allocate promises) whose what() says why:
//   "cuda_device: cudaMalloc of 1048576 bytes on cuda:0: no CUDA device: no CUDA-capable
//    device is detected (cudaErrorNoDevice)"
// deallocate() ignores CUDA errors (a block freed while the process exits, after the runtime
// has shut down, must not crash).
//
// Thread safety: allocators are thread-safe (the CUDA runtime is); allocate() sets the calling
// thread's current device only for the duration of the call.
#pragma once

#include <memory>
#include <new>
#include <string>

#include "media/api.h"
#include "media/storage.h"

HDL_API_BEGIN
namespace hdl::cuda {

/// A std::bad_alloc that says why: no device, out of memory, built without CUDA.
class AllocationError : public std::bad_alloc {
 public:
  explicit AllocationError(std::string message)
      : message_(std::make_shared<const std::string>(std::move(message))) {}
  const char* what() const noexcept override { return message_->c_str(); }

 private:
  std::shared_ptr<const std::string> message_;  // shared: copying an exception must not throw
};

/// Page-locked host memory (cudaHostAlloc, portable across devices): pinned() is true, device()
/// is cpu. The source of copy_async() uploads and the memory the CPU stages decode into.
class PinnedHostAllocator final : public Allocator {
 public:
  /// Throws AllocationError when CUDA is unusable or the memory cannot be locked.
  void* allocate(size_t bytes) override;
  void deallocate(void* p, size_t bytes) override;
  Device device() const override { return Device::cpu(); }
  bool pinned() const override { return true; }
  const char* name() const override { return "cuda_pinned_host"; }
};

/// Device memory on cuda:`index` (cudaMalloc, 256-byte aligned).
class DeviceAllocator final : public Allocator {
 public:
  explicit DeviceAllocator(int index = 0) : index_(index) {}
  /// Throws AllocationError when the device is missing or out of memory.
  void* allocate(size_t bytes) override;
  void deallocate(void* p, size_t bytes) override;
  Device device() const override { return Device::cuda(index_); }
  const char* name() const override { return "cuda_device"; }

 private:
  int index_;
};

/// The process-wide pinned host allocator. Never destroyed (storages may outlive statics).
PinnedHostAllocator& pinned_host_allocator();

/// The process-wide allocator of cuda:`index`, created on first use, never destroyed.
/// Throws std::out_of_range for an index outside [0, 64).
DeviceAllocator& device_allocator(int index = 0);

}  // namespace hdl::cuda
HDL_API_END
