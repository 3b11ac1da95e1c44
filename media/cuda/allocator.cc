#include "media/cuda/allocator.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>
#include <stdexcept>

#include "media/cuda/runtime.h"
#if HDL_HAVE_CUDA
#include "media/cuda/detail/check.h"
#endif

namespace hdl::cuda {
namespace {

constexpr int kMaxDevices = 64;

std::string what_failed(const char* allocator, const char* call, size_t bytes, Device where) {
  return std::string(allocator) + ": " + call + " of " + std::to_string(bytes) + " bytes on " +
         where.to_string();
}

// Throws AllocationError unless `where` is usable; the message carries CUDA's reason.
void require(const char* allocator, const char* call, size_t bytes, Device where) {
  // require_device() accepts cpu; pinned memory still needs a device (and a driver).
  const Status s = require_device(where.is_cpu() ? Device::cuda(0) : where);
  if (!s.is_ok()) throw AllocationError(what_failed(allocator, call, bytes, where) + ": " + s.message());
}

}  // namespace

void* PinnedHostAllocator::allocate(size_t bytes) {
  require(name(), "cudaHostAlloc", bytes, device());
#if HDL_HAVE_CUDA
  void* p = nullptr;
  const cudaError_t e = cudaHostAlloc(&p, std::max<size_t>(bytes, 1), cudaHostAllocPortable);
  if (e != cudaSuccess) {
    throw AllocationError(detail::error_text(e, what_failed(name(), "cudaHostAlloc", bytes, device())));
  }
  return p;
#else
  return nullptr;  // unreachable: require() threw
#endif
}

void PinnedHostAllocator::deallocate(void* p, size_t) {
#if HDL_HAVE_CUDA
  if (p && cudaFreeHost(p) != cudaSuccess) cudaGetLastError();
#else
  (void)p;
#endif
}

void* DeviceAllocator::allocate(size_t bytes) {
  require(name(), "cudaMalloc", bytes, device());
#if HDL_HAVE_CUDA
  detail::DeviceGuard guard(index_);
  if (!guard.status().is_ok()) {
    throw AllocationError(what_failed(name(), "cudaMalloc", bytes, device()) + ": " +
                          guard.status().message());
  }
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, std::max<size_t>(bytes, 1));
  if (e != cudaSuccess) {
    throw AllocationError(detail::error_text(e, what_failed(name(), "cudaMalloc", bytes, device())));
  }
  return p;
#else
  return nullptr;
#endif
}

void DeviceAllocator::deallocate(void* p, size_t) {
#if HDL_HAVE_CUDA
  // cudaFree needs no current-device switch: the pointer identifies its device.
  if (p && cudaFree(p) != cudaSuccess) cudaGetLastError();
#else
  (void)p;
#endif
}

PinnedHostAllocator& pinned_host_allocator() {
  static PinnedHostAllocator* instance = new PinnedHostAllocator();
  return *instance;
}

DeviceAllocator& device_allocator(int index) {
  if (index < 0 || index >= kMaxDevices) {
    throw std::out_of_range("device_allocator: device index " + std::to_string(index) +
                            " outside [0, " + std::to_string(kMaxDevices) + ")");
  }
  static std::array<std::atomic<DeviceAllocator*>, kMaxDevices> instances{};
  static std::mutex mu;
  if (DeviceAllocator* a = instances[index].load(std::memory_order_acquire)) return *a;
  std::lock_guard lock(mu);
  if (!instances[index].load(std::memory_order_relaxed)) {
    instances[index].store(new DeviceAllocator(index), std::memory_order_release);
  }
  return *instances[index].load(std::memory_order_relaxed);
}

}  // namespace hdl::cuda
