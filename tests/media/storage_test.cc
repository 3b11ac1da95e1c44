#include "media/storage.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace hdl {
namespace {

TEST(BufferPool, ReusesReleasedBlocksWithoutNewAllocations) {
  BufferPool pool(host_allocator());
  for (int round = 0; round < 10; ++round) {
    std::vector<StoragePtr> held;
    for (int i = 0; i < 4; ++i) held.push_back(pool.acquire(3 * 224 * 224 * 4 * 64));
  }
  const BufferPoolStats s = pool.stats();
  EXPECT_EQ(s.acquires, 40u);
  EXPECT_EQ(s.allocations, 4u);  // the first round only
  EXPECT_EQ(s.bytes_cached, s.bytes_allocated);
}

// A cached block of a larger class serves a smaller request up to half its size, not below.
TEST(BufferPool, ReusesALargerCachedBlockUpToTwiceTheAskedSize) {
  BufferPool pool(host_allocator());
  void* big = nullptr;
  { auto b = pool.acquire(10 << 20); big = b->data(); }
  {
    auto s = pool.acquire(6 << 20);  // 10 MiB <= 2 x 6 MiB: the cached block
    EXPECT_EQ(s->data(), big);
    EXPECT_GE(s->capacity(), size_t(10) << 20);
  }
  { auto t = pool.acquire(4 << 20); }  // 10 MiB > 2 x 4 MiB: a new block
  const BufferPoolStats st = pool.stats();
  EXPECT_EQ(st.acquires, 3u);
  EXPECT_EQ(st.allocations, 2u);
  EXPECT_EQ(st.bytes_cached, st.bytes_allocated);
}

TEST(BufferPool, RoundsToClassesWastingAtMostAnEighth) {
  for (size_t n : {1ul, 255ul, 257ul, 1000ul, 4097ul, 123457ul, 150528ul * 256, (1ul << 33) + 1}) {
    const size_t r = BufferPool::round_up(n);
    EXPECT_GE(r, n);
    EXPECT_LE(r, std::max<size_t>(256, n + n / 8)) << n;
  }
}

TEST(BufferPool, BlocksOutliveThePoolSafely) {
  StoragePtr kept;
  {
    BufferPool pool(host_allocator());
    kept = pool.acquire(1 << 20);
    static_cast<char*>(kept->data())[0] = 42;
  }
  EXPECT_EQ(static_cast<char*>(kept->data())[0], 42);
  kept.reset();  // freed to the allocator, not to the dead pool (ASan would catch a misuse)
}

TEST(BufferPool, RespectsTheCacheLimit) {
  BufferPool pool(host_allocator(), 1 << 20);
  { auto a = pool.acquire(800 << 10), b = pool.acquire(800 << 10); }
  EXPECT_LE(pool.stats().bytes_cached, 1u << 20);
  pool.trim();
  EXPECT_EQ(pool.stats().bytes_cached, 0u);
  EXPECT_EQ(pool.stats().bytes_allocated, 0u);
}

TEST(BufferPool, IsThreadSafe) {
  BufferPool pool(host_allocator());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        auto s = pool.acquire(static_cast<size_t>(1000 + (i % 7) * 4096));
        static_cast<char*>(s->data())[0] = 1;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(pool.stats().acquires, 8000u);
  EXPECT_LE(pool.stats().allocations, 7u * 4u);
}

TEST(Storage, AllocationsAreAligned) {
  for (size_t n : {1ul, 63ul, 4096ul, 1000001ul, (9ul << 20) + 1}) {  // small and batch-sized
    auto s = Storage::allocate(host_allocator(), n);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(s->data()) % Allocator::kAlignment, 0u);
  }
}

}  // namespace
}  // namespace hdl
