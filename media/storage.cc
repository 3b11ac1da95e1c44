#include "media/storage.h"

#include <bit>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <vector>

namespace hdl {
namespace {

class HostAllocator final : public Allocator {
 public:
  void* allocate(size_t bytes) override {
    // Batch-sized blocks are page-aligned and whole pages, and left to the system's page size:
    // no MADV_HUGEPAGE. Their first touch is the zeroing of every fresh page, done by the
    // worker threads that write the samples (each its own slot, in parallel). Huge pages made
    // that 2-5x dearer on the 2-core VM measured (docs/PERFORMANCE.md, "Fifth round: start-up"):
    // under free-page reporting a fresh 2 MB page comes back from the host and is backed anew,
    // 0.15-0.3 GB/s, against 0.7-0.9 GB/s for 4 KB pages; on bare metal the difference is a few
    // tens of milliseconds once per process. transparent_hugepage=always still applies.
    const bool big = bytes >= kPageAlignThreshold;
    const size_t align = big ? kPage : kAlignment;
    const size_t rounded = (std::max<size_t>(bytes, 1) + align - 1) / align * align;
    void* p = std::aligned_alloc(align, rounded);
    if (!p) throw std::bad_alloc();
    return p;
  }
  void deallocate(void* p, size_t) override { std::free(p); }
  Device device() const override { return Device::cpu(); }
  const char* name() const override { return "host"; }

 private:
  static constexpr size_t kPage = 4096;
  static constexpr size_t kPageAlignThreshold = size_t(8) << 20;
};

void release_to_allocator(void* context, void* data, size_t capacity) {
  static_cast<Allocator*>(context)->deallocate(data, capacity);
}

}  // namespace

Allocator& host_allocator() {
  static HostAllocator* instance = new HostAllocator();  // never destroyed: storages may outlive statics
  return *instance;
}

Storage::~Storage() {
  if (release_) release_(owner_.get(), data_, capacity_);
}

StoragePtr Storage::allocate(Allocator& alloc, size_t bytes) {
  void* p = alloc.allocate(bytes);
  // A non-owning shared_ptr: the allocator outlives its storages by contract.
  std::shared_ptr<void> owner(&alloc, [](void*) {});
  return std::make_shared<Storage>(p, bytes, alloc.device(), alloc.pinned(), std::move(owner),
                                   &release_to_allocator);
}

struct BufferPool::Core {
  explicit Core(Allocator& a, size_t max_cached) : alloc(a), max_cached_bytes(max_cached) {}
  ~Core() { trim_locked(); }

  void release(void* data, size_t capacity) {
    std::lock_guard lock(mu);
    if (alive && stats.bytes_cached + capacity <= max_cached_bytes) {
      free_lists[capacity].push_back(data);
      stats.bytes_cached += capacity;
      return;
    }
    stats.bytes_allocated -= capacity;
    alloc.deallocate(data, capacity);
  }

  void trim_locked() {
    for (auto& [cap, blocks] : free_lists) {
      for (void* p : blocks) alloc.deallocate(p, cap);
      stats.bytes_allocated -= cap * blocks.size();
    }
    free_lists.clear();
    stats.bytes_cached = 0;
  }

  Allocator& alloc;
  const size_t max_cached_bytes;
  mutable std::mutex mu;
  std::map<size_t, std::vector<void*>> free_lists;  // by capacity
  BufferPoolStats stats;
  bool alive = true;  // false once the BufferPool object is gone: stop caching
};

namespace {
void release_to_pool(void* context, void* data, size_t capacity) {
  static_cast<BufferPool::Core*>(context)->release(data, capacity);
}
}  // namespace

BufferPool::BufferPool(Allocator& alloc, size_t max_cached_bytes)
    : core_(std::make_shared<Core>(alloc, max_cached_bytes)) {}

BufferPool::~BufferPool() {
  std::lock_guard lock(core_->mu);
  core_->alive = false;
  core_->trim_locked();
}

size_t BufferPool::round_up(size_t bytes) {
  if (bytes <= 256) return 256;
  // Classes: 8 steps per power of two, so a block is at most 1/8 larger than asked for.
  const int top = std::bit_width(bytes - 1) - 1;  // floor(log2(bytes - 1))
  const size_t step = size_t(1) << (top - 3);
  return (bytes + step - 1) / step * step;
}

StoragePtr BufferPool::acquire(size_t bytes) {
  size_t cap = round_up(bytes);
  void* p = nullptr;
  {
    std::lock_guard lock(core_->mu);
    ++core_->stats.acquires;
    // The smallest cached block of this class or a larger one up to twice it.
    auto it = core_->free_lists.lower_bound(cap);
    while (it != core_->free_lists.end() && it->first <= 2 * cap && it->second.empty()) ++it;
    if (it != core_->free_lists.end() && it->first <= 2 * cap) {
      p = it->second.back();
      it->second.pop_back();
      cap = it->first;
      core_->stats.bytes_cached -= cap;
    } else {
      ++core_->stats.allocations;
      core_->stats.bytes_allocated += cap;
    }
  }
  if (!p) {
    try {
      p = core_->alloc.allocate(cap);
    } catch (...) {
      std::lock_guard lock(core_->mu);
      core_->stats.bytes_allocated -= cap;
      throw;
    }
  }
  return std::make_shared<Storage>(p, cap, core_->alloc.device(), core_->alloc.pinned(),
                                   std::shared_ptr<void>(core_, core_.get()), &release_to_pool);
}

void BufferPool::trim() {
  std::lock_guard lock(core_->mu);
  core_->trim_locked();
}

BufferPoolStats BufferPool::stats() const {
  std::lock_guard lock(core_->mu);
  return core_->stats;
}

Allocator& BufferPool::allocator() const { return core_->alloc; }

}  // namespace hdl
