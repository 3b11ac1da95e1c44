// image_decoder and resize operators inside a pipeline, on real corpus files.
#include <gtest/gtest.h>

#include <cstring>

#include "decoders/decoder_set.h"
#include "pipeline/kernels/resize.h"
#include "pipeline/pipeline.h"
#include "tests/pipeline/test_ops.h"
#include "tests/test_util.h"

namespace hdl {
namespace {

using testing::TempImageFolder;

PipelineSpec decode_resize_spec(const std::string& root, std::vector<int64_t> size) {
  PipelineSpec spec;
  auto files = spec.add("file_reader", {}, {{"file_root", root}}, {}, "reader");
  auto images = spec.add("image_decoder", {files[0]}, {}, {}, "decode");
  auto resized = spec.add("resize", {images[0]}, {{"size", ArgValue(std::move(size))}}, {}, "resize");
  spec.set_outputs({resized[0], files[1]});
  return spec;
}

std::filesystem::path corrupt_jpeg() {
  return testing::corpus_dir() / "tests" / "jpeg" / "corrupt" / "derived_china_truncated_half.jpg";
}

class ImageDecoderOpTest : public ::testing::Test {
 protected:
  void SetUp() override { HDL_REQUIRE_CORPUS(); }
};

TEST_F(ImageDecoderOpTest, BatchSlotsEqualSeparateDecodeAndResize) {
  TempImageFolder folder(3, 5);
  Pipeline pipe(decode_resize_spec(folder.root().string(), {224, 224}), {.batch_size = 6, .num_threads = 2});
  DecoderSet decoders;
  kernels::ResizeWorkspace ws;
  int checked = 0;
  for (const auto& out : pipe.epoch_batches()) {
    const Batch& images = out.outputs[0];
    ASSERT_TRUE(images.is_dense());
    EXPECT_EQ(images.as_tensor().shape(), (Shape{images.size(), 224, 224, 3}));
    for (int64_t i = 0; i < images.size(); ++i, ++checked) {
      const auto bytes = testing::read_file(pipe.dataset().path(out.dataset_indices[i]));
      DecodeRequest req;
      auto shape = decoders.output_shape(bytes, req);
      ASSERT_TRUE(shape.is_ok()) << shape.status().to_string();
      Tensor full = Tensor::empty(*shape, DType::kU8, Layout::kHWC);
      ASSERT_TRUE(decoders.decode(bytes, req, full.view()).is_ok());
      Tensor small = Tensor::empty({224, 224, 3}, DType::kU8, Layout::kHWC);
      ASSERT_TRUE(kernels::resize(full.view(), small.view(), {}, ws).is_ok());
      ASSERT_EQ(std::memcmp(images.sample(i).data(), small.data(), small.num_bytes()), 0) << "sample " << i;
    }
  }
  EXPECT_EQ(checked, 15);
}

TEST_F(ImageDecoderOpTest, ShorterSideResizeGivesRaggedBatchesOfTorchvisionSizes) {
  TempImageFolder folder(2, 4);
  Pipeline pipe(decode_resize_spec(folder.root().string(), {100}), {.batch_size = 8, .num_threads = 2});
  auto out = pipe.next();
  ASSERT_TRUE(out);
  const Batch& images = out->outputs[0];
  EXPECT_FALSE(images.is_dense());
  DecoderSet decoders;
  for (int64_t i = 0; i < images.size(); ++i) {
    const auto bytes = testing::read_file(pipe.dataset().path(out->dataset_indices[i]));
    auto shape = decoders.output_shape(bytes, DecodeRequest{});
    ASSERT_TRUE(shape.is_ok());
    const kernels::SizeHW want = kernels::resize_output_size({(*shape)[0], (*shape)[1]}, std::vector<int64_t>{100});
    EXPECT_EQ(images.sample_shape(i), (Shape{want.h, want.w, 3}));
    EXPECT_EQ(std::min(want.h, want.w), 100);
  }
}

TEST_F(ImageDecoderOpTest, CorruptJpegUnderRaiseNamesOperatorSampleAndFile) {
  TempImageFolder folder(2, 4);
  folder.add_link("class_1", "img_zzz.JPEG", corrupt_jpeg());  // dataset index 8
  Pipeline pipe(decode_resize_spec(folder.root().string(), {64, 64}), {.batch_size = 3, .num_threads = 2});
  std::string error;
  int good = 0;
  while (true) {
    try {
      if (!pipe.next()) break;
      ++good;
    } catch (const DataError& e) {
      error = e.what();
      EXPECT_EQ(e.status().code(), StatusCode::kInvalidData);
    }
  }
  EXPECT_EQ(good, 2);  // 9 samples: batches 0 and 1 fine, batch 2 holds the corrupt file
  EXPECT_NE(error.find("image_decoder \"decode\": sample 8 \""), std::string::npos) << error;
  EXPECT_NE(error.find("img_zzz.JPEG\": libjpeg-turbo: "), std::string::npos) << error;
}

TEST_F(ImageDecoderOpTest, CorruptJpegUnderSkipIsReplaced) {
  TempImageFolder folder(2, 4);
  folder.add_link("class_0", "img_000a.JPEG", corrupt_jpeg());  // dataset index 1
  Pipeline pipe(decode_resize_spec(folder.root().string(), {64, 64}),
                {.batch_size = 3, .num_threads = 2, .on_error = ErrorPolicy::kSkip});
  std::vector<int64_t> indices;
  for (const auto& out : pipe.epoch_batches()) {
    EXPECT_EQ(out.outputs[0].as_tensor().shape(), (Shape{3, 64, 64, 3}));
    indices.insert(indices.end(), out.dataset_indices.begin(), out.dataset_indices.end());
  }
  EXPECT_EQ(indices, (std::vector<int64_t>{0, 2, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(pipe.stats().failures, 1u);
  EXPECT_EQ(pipe.stats().replaced, 1u);
}

TEST_F(ImageDecoderOpTest, AllowPartialAcceptsTruncatedFiles) {
  TempImageFolder folder(1, 2);
  folder.add_link("class_0", "img_zzz.JPEG", corrupt_jpeg());
  PipelineSpec spec;
  auto files = spec.add("file_reader", {}, {{"file_root", folder.root().string()}});
  auto images = spec.add("image_decoder", {files[0]}, {{"allow_partial", true}});
  spec.set_outputs({images[0]});
  Pipeline pipe(spec, {.batch_size = 3, .num_threads = 1});
  auto out = pipe.next();
  ASSERT_TRUE(out);
  EXPECT_EQ(out->outputs[0].sample_shape(2), (Shape{427, 640, 3}));
}

TEST_F(ImageDecoderOpTest, BadResizeArgumentsAreConfigErrors) {
  TempImageFolder folder(1, 2);
  EXPECT_THROW(Pipeline(decode_resize_spec(folder.root().string(), {1, 2, 3}), {}), ConfigError);
  EXPECT_THROW(Pipeline(decode_resize_spec(folder.root().string(), {0}), {}), ConfigError);
  PipelineSpec spec;
  auto files = spec.add("file_reader", {}, {{"file_root", folder.root().string()}});
  auto r = spec.add("resize", {files[0]}, {{"size", {8}}});
  spec.set_outputs({r[0]});
  try {
    Pipeline p(spec, {});
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("resize \"resize_0\": input must be HWC"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hdl
