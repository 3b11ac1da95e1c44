// media/cuda on a device: allocators with BufferPool, streams, events, copy_async. Skips
// without a device.
#include <gtest/gtest.h>

#include "tests/cuda/cuda_test_util.h"

namespace hdl::cuda {
namespace {

using ::hdl::testing::corpus_photos;
using ::hdl::testing::diff;
using ::hdl::testing::to_device;
using ::hdl::testing::to_host;

TEST(CudaDeviceTest, AllocatorsWorkThroughBufferPools) {
  HDL_REQUIRE_CUDA_DEVICE();
  for (Allocator* a : {static_cast<Allocator*>(&pinned_host_allocator()),
                       static_cast<Allocator*>(&device_allocator(0))}) {
    BufferPool pool(*a);
    void* first = nullptr;
    {
      StoragePtr s = pool.acquire(1 << 20);
      first = s->data();
      EXPECT_EQ(s->pinned(), a->pinned());
      EXPECT_EQ(s->device(), a->device());
    }
    StoragePtr again = pool.acquire(1 << 20);
    EXPECT_EQ(again->data(), first) << a->name() << ": the released block is reused";
    EXPECT_EQ(pool.stats().allocations, 1u);
  }
}

TEST(CudaDeviceTest, CopyAsyncRoundTripsAPhotoAndRecordsAnEvent) {
  HDL_REQUIRE_CUDA_DEVICE();
  HDL_REQUIRE_CORPUS();
  Result<Stream> stream = Stream::create(Device::cuda(0));
  ASSERT_TRUE(stream.is_ok()) << stream.status().to_string();
  const Tensor photo = corpus_photos(1).at(0);
  const Tensor dev = to_device(photo.view(), *stream);
  EXPECT_EQ(dev.device(), Device::cuda(0));
  EXPECT_EQ(diff(to_host(dev, *stream), photo).mismatches, 0);

  // Rows of a crop window (strided) into a padded slot of a batch (strided): a 2-D copy.
  const int64_t h = 50, w = 60;
  Tensor batch = Tensor::empty({2, h, w + 8, 3}, DType::kU8, Layout::kNone, device_allocator(0));
  TensorView slot = batch.slice(1).view().crop_hw(0, 4, h, w);
  Tensor pinned = ::hdl::testing::copy_to(photo.view(), pinned_host_allocator());
  Result<Event> done = copy_async(ConstTensorView(pinned.view()).crop_hw(10, 20, h, w), slot, *stream);
  ASSERT_TRUE(done.is_ok()) << done.status().to_string();
  // A second stream waits on the event before copying the slot back.
  Result<Stream> other = Stream::create(Device::cuda(0));
  ASSERT_TRUE(other.is_ok());
  ASSERT_TRUE(other->wait(*done).is_ok());
  Tensor back = Tensor::empty({h, w, 3}, DType::kU8, Layout::kHWC, pinned_host_allocator());
  Result<Event> back_done = copy_async(slot, back.view(), *other);
  ASSERT_TRUE(back_done.is_ok()) << back_done.status().to_string();
  ASSERT_TRUE(back_done->synchronize().is_ok());
  EXPECT_EQ(back_done->query().value(), true);
  const Tensor want = ::hdl::testing::copy_to(photo.view().crop_hw(10, 20, h, w), host_allocator());
  EXPECT_EQ(diff(::hdl::testing::copy_to(back.view(), host_allocator()), want).mismatches, 0);
}

TEST(CudaDeviceTest, CopyAsyncRefusesPageableAndMislabelledMemory) {
  HDL_REQUIRE_CUDA_DEVICE();
  Result<Stream> stream = Stream::create(Device::cuda(0));
  ASSERT_TRUE(stream.is_ok());
  std::vector<uint8_t> pageable(300);
  Tensor dev = Tensor::empty({10, 10, 3}, DType::kU8, Layout::kHWC, device_allocator(0));
  Event e = std::move(Event::create(Device::cuda(0))).value();
  Status s = copy_async(ConstTensorView(pageable.data(), {10, 10, 3}, DType::kU8), dev.view(), *stream, e);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("pageable"), std::string::npos) << s.message();
  // Device memory described as host memory.
  TensorView lying = dev.view();
  lying.device = Device::cpu();
  Tensor pinned = Tensor::empty({10, 10, 3}, DType::kU8, Layout::kHWC, pinned_host_allocator());
  s = copy_async(ConstTensorView(lying), pinned.view(), *stream, e);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
}

}  // namespace
}  // namespace hdl::cuda
