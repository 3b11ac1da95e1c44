// Memory: allocators behind one interface, reference-counted storage blocks, and a pool.
//
// Batch buffers come from a BufferPool so that a steady-state epoch allocates no batch memory:
// a buffer released by the consumer (when the last Tensor referring to it dies, possibly long
// after the pipeline that made it) goes back to the pool it came from, or to its allocator if
// the pool is gone.
//
// Thread safety: allocators and pools are thread-safe. A Storage is immutable apart from the
// bytes it points to, which its users synchronise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "media/api.h"
#include "media/device.h"

HDL_API_BEGIN
namespace hdl {

/// Where memory comes from. Implementations: host (aligned malloc), pinned host and device
/// memory (accelerator builds). Thread-safe.
class Allocator {
 public:
  virtual ~Allocator() = default;
  /// Returns `bytes` bytes aligned to at least kAlignment. Throws std::bad_alloc on failure.
  virtual void* allocate(size_t bytes) = 0;
  /// Frees memory from allocate(); `bytes` is the size that was asked for.
  virtual void deallocate(void* p, size_t bytes) = 0;
  /// The device the memory is addressable from (pinned host memory reports cpu).
  virtual Device device() const = 0;
  /// True for page-locked host memory that DMA engines can read directly.
  virtual bool pinned() const { return false; }
  virtual const char* name() const = 0;

  static constexpr size_t kAlignment = 64;  ///< a cache line, and enough for AVX-512 loads
};

/// The process-wide host allocator (64-byte aligned). Never destroyed.
Allocator& host_allocator();

/// A block of memory with shared ownership. Obtain from Storage::allocate or a BufferPool;
/// when the last shared_ptr goes the block returns where it came from.
class Storage {
 public:
  using Releaser = void (*)(void* context, void* data, size_t capacity);

  /// A block straight from `alloc`, freed to it on release.
  static std::shared_ptr<Storage> allocate(Allocator& alloc, size_t bytes);

  Storage(void* data, size_t capacity, Device device, bool pinned,
          std::shared_ptr<void> owner, Releaser release)
      : data_(data), capacity_(capacity), device_(device), pinned_(pinned),
        owner_(std::move(owner)), release_(release) {}
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t capacity() const { return capacity_; }  ///< usable bytes (>= what was asked for)
  Device device() const { return device_; }
  bool pinned() const { return pinned_; }

 private:
  void* data_;
  size_t capacity_;
  Device device_;
  bool pinned_;
  std::shared_ptr<void> owner_;  // keeps the pool (or allocator adapter) alive
  Releaser release_;
};
using StoragePtr = std::shared_ptr<Storage>;

/// Counters of a BufferPool.
struct BufferPoolStats {
  uint64_t acquires = 0;        ///< calls to acquire()
  uint64_t allocations = 0;     ///< of those, how many had to call the allocator
  uint64_t bytes_allocated = 0; ///< bytes currently obtained from the allocator (cached + in use)
  uint64_t bytes_cached = 0;    ///< bytes sitting in the free lists
};

/// Caches released blocks by size class (each class wastes at most 1/8 of a block) and hands
/// them out again: the smallest cached block of the asked class or a larger one up to twice it
/// (so that samples of varying sizes, such as ragged clips of videos of different sizes, reuse
/// pages already touched instead of faulting in fresh ones). Thread-safe. Blocks outlive the
/// pool safely.
class BufferPool {
 public:
  /// `max_cached_bytes`: released blocks beyond this are freed instead of cached.
  explicit BufferPool(Allocator& alloc, size_t max_cached_bytes = size_t(1) << 30);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  /// A block of at least `bytes` bytes (contents undefined). Throws std::bad_alloc.
  StoragePtr acquire(size_t bytes);
  /// Frees every cached block.
  void trim();
  BufferPoolStats stats() const;
  Allocator& allocator() const;

  /// The size class `bytes` rounds up to.
  static size_t round_up(size_t bytes);

  struct Core;  // implementation detail (storage.cc)

 private:
  std::shared_ptr<Core> core_;
};

}  // namespace hdl
HDL_API_END
