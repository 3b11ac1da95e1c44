// Host-side behaviour of media/cuda: what a machine without a GPU (or a build without CUDA)
// sees. On a machine with a device these tests check the other branch of each answer.
#include <gtest/gtest.h>

#include <new>
#include <string>
#include <thread>
#include <vector>

#include "media/cuda/allocator.h"
#include "media/cuda/runtime.h"
#include "media/cuda/stream.h"
#include "media/storage.h"
#include "media/tensor.h"

namespace hdl::cuda {
namespace {

TEST(CudaRuntimeTest, AvailabilityIsConsistentAndExplained) {
  EXPECT_EQ(available(), device_count() > 0);
  if (available()) {
    EXPECT_TRUE(unavailable_reason().empty());
    EXPECT_TRUE(require_device(Device::cuda(0)).is_ok());
  } else {
    EXPECT_FALSE(unavailable_reason().empty());
    std::cout << "[ cuda ] unavailable: " << unavailable_reason() << " (" << version_string() << ")\n";
  }
  if (!built_with_cuda()) EXPECT_EQ(unavailable_reason(), "not available: built without CUDA");
  EXPECT_TRUE(require_device(Device::cpu()).is_ok());
}

TEST(CudaRuntimeTest, RequiringAMissingDeviceIsUnsupportedWithTheReason) {
  const Status s = require_device(Device::cuda(device_count()));  // one past the last
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  if (!available()) {
    EXPECT_NE(s.message().find(unavailable_reason()), std::string::npos) << s.message();
    if (built_with_cuda()) EXPECT_EQ(s.message().rfind("no CUDA device: ", 0), 0u) << s.message();
  } else {
    EXPECT_NE(s.message().find("requested but only"), std::string::npos) << s.message();
  }
}

TEST(CudaRuntimeTest, QueryIsThreadSafeAndCached) {
  std::vector<std::thread> threads;
  std::vector<int> counts(8, -1);
  for (int i = 0; i < 8; ++i) threads.emplace_back([&counts, i] { counts[i] = device_count(); });
  for (auto& t : threads) t.join();
  for (int c : counts) EXPECT_EQ(c, device_count());
  EXPECT_EQ(&unavailable_reason(), &unavailable_reason());
}

TEST(CudaAllocatorTest, DescribeThemselvesWithoutTouchingCuda) {
  PinnedHostAllocator pinned;
  DeviceAllocator dev(1);
  EXPECT_TRUE(pinned.pinned());
  EXPECT_TRUE(pinned.device().is_cpu());
  EXPECT_FALSE(dev.pinned());
  EXPECT_EQ(dev.device(), Device::cuda(1));
  EXPECT_EQ(&device_allocator(0), &device_allocator(0));
  EXPECT_EQ(device_allocator(2).device(), Device::cuda(2));
  EXPECT_THROW(device_allocator(-1), std::out_of_range);
}

TEST(CudaAllocatorTest, RefuseWithAClearErrorWithoutADevice) {
  if (available()) GTEST_SKIP() << "a CUDA device is present (this checks the no-device path)";
  for (Allocator* a : {static_cast<Allocator*>(&pinned_host_allocator()),
                       static_cast<Allocator*>(&device_allocator(0))}) {
    try {
      a->allocate(1 << 20);
      ADD_FAILURE() << a->name() << " allocated without a device";
    } catch (const AllocationError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(a->name()), std::string::npos) << what;
      EXPECT_NE(what.find("1048576 bytes"), std::string::npos) << what;
      EXPECT_NE(what.find(unavailable_reason()), std::string::npos) << what;
    }
    // Through a pool and a tensor it is still a std::bad_alloc, as Allocator promises.
    BufferPool pool(*a);
    EXPECT_THROW(pool.acquire(4096), std::bad_alloc);
    EXPECT_EQ(pool.stats().bytes_allocated, 0u);
    EXPECT_THROW(Tensor::empty({2, 2, 3}, DType::kU8, Layout::kHWC, *a), std::bad_alloc);
  }
}

TEST(CudaStreamTest, CreationFailsCleanlyWithoutADevice) {
  if (available()) GTEST_SKIP() << "a CUDA device is present (this checks the no-device path)";
  Result<Stream> s = Stream::create(Device::cuda(0));
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(s.status().message().find(unavailable_reason()), std::string::npos);
  Result<Event> e = Event::create(Device::cuda(0));
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(Stream::create(Device::cpu()).status().code(),
            built_with_cuda() ? StatusCode::kInvalidArgument : StatusCode::kUnsupported);
}

TEST(CudaStreamTest, EmptyAndBorrowedStreamsOwnNothing) {
  Stream empty;
  EXPECT_FALSE(empty.valid());
  Stream borrowed = Stream::borrow(nullptr, Device::cuda(0));  // the legacy default stream
  EXPECT_TRUE(borrowed.valid());
  EXPECT_EQ(borrowed.device(), Device::cuda(0));
  Stream moved = std::move(borrowed);
  EXPECT_TRUE(moved.valid());
  EXPECT_FALSE(borrowed.valid());  // NOLINT: checking the moved-from state on purpose
  Event none;
  EXPECT_FALSE(none.valid());
}

TEST(CudaStreamTest, CopyAsyncRejectsMismatchedViewsBeforeTouchingCuda) {
  if (!built_with_cuda()) GTEST_SKIP() << "not available: built without CUDA";
  std::vector<uint8_t> a(12), b(24);
  Stream s = Stream::borrow(nullptr, Device::cuda(0));
  Event e;
  const Status st = copy_async(ConstTensorView(a.data(), {2, 2, 3}, DType::kU8),
                               TensorView(b.data(), {2, 4, 3}, DType::kU8, Layout::kNone, Device::cuda(0)), s, e);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
}

}  // namespace
}  // namespace hdl::cuda
