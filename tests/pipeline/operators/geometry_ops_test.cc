// crop, random_resized_crop, pad, flip, random_flip and transpose inside pipelines on real
// photos: declared shapes/dtypes/layouts, pixels equal to calling the kernels directly (the
// kernels are tested against torchvision), per-sample arguments from coin_flip/random_uniform,
// random_flip's rate and determinism across thread counts, and argument errors naming the
// argument.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>

#include "pipeline/decode/crop_geometry.h"
#include "pipeline/kernels/crop.h"
#include "pipeline/kernels/resize.h"
#include "tests/pipeline/operators/op_test_util.h"

namespace hdl {
namespace {

using testing::by_kernel;
using testing::OpRun;
using testing::run_op;
using testing::same_tensor;
using testing::TempImageFolder;

using GeometryOpsTest = testing::OpTest<2, 5>;

TEST_F(GeometryOpsTest, CropWithPerSamplePositionEqualsKernel) {
  const OpRun run = run_op(root(), [](PipelineSpec& s, TensorRef images) {
    auto x = s.add("random_uniform", {}, {{"range", {0.0, 1.0}}});
    auto c = s.add("crop", {images}, {{"crop", {200, 150}}, {"fill", {7.0}}}, {{"crop_pos_x", x[0]}});
    return std::vector<TensorRef>{c[0], x[0]};
  });
  ASSERT_TRUE(run.dense_first);
  for (size_t k = 0; k < run.images().size(); ++k) {
    const Tensor& in = run.images()[k];
    const double px = *run.outputs[1][k].typed<float>();
    const int64_t top = crop_offset(in.shape()[0], 200, 0.5), left = crop_offset(in.shape()[1], 150, px);
    const double fill[1] = {7.0};
    const Tensor want = by_kernel({200, 150, 3}, DType::kU8, Layout::kHWC,
                                  [&](const TensorView& o) { return kernels::crop(in.view(), top, left, o, fill); });
    EXPECT_TRUE(same_tensor(run.outputs[0][k], want)) << k;
  }
}

TEST_F(GeometryOpsTest, CropLargerThanTheImageIsFilled) {
  const OpRun run = run_op(root(), [](PipelineSpec& s, TensorRef images) {
    return std::vector<TensorRef>{s.add("crop", {images}, {{"crop", {80}}})[0]};
  }, {64, 48});
  for (size_t k = 0; k < run.images().size(); ++k) {
    const Tensor& out = run.outputs[0][k];
    ASSERT_EQ(out.shape(), (Shape{80, 80, 3}));
    EXPECT_EQ(out.typed<uint8_t>()[0], 0);  // top-left is padding: (80 - 48) // 2 = 16 columns
    const Tensor want = by_kernel({80, 80, 3}, DType::kU8, Layout::kHWC, [&](const TensorView& o) {
      return kernels::crop(run.images()[k].view(), -8, -16, o);
    });
    EXPECT_TRUE(same_tensor(out, want));
  }
}

TEST_F(GeometryOpsTest, RandomResizedCropEqualsKernelOnTheReplayedWindow) {
  const OpRun run = run_op(root(), [](PipelineSpec& s, TensorRef images) {
    return std::vector<TensorRef>{s.add("random_resized_crop", {images}, {{"size", {96, 80}}, {"interpolation", "bicubic"}}, {}, "rrc")[0]};
  });
  ASSERT_TRUE(run.dense_first);
  kernels::ResizeWorkspace ws;
  for (size_t k = 0; k < run.images().size(); ++k) {
    const Tensor& in = run.images()[k];
    RandomStream rng(RandomStream::key_for(11, "rrc"), run.epochs[k], run.positions[k]);
    StreamDraws draws(rng);
    const CropWindow w = random_resized_crop_window({in.shape()[0], in.shape()[1]}, {}, draws);
    const Tensor want = by_kernel({96, 80, 3}, DType::kU8, Layout::kHWC, [&](const TensorView& o) {
      return kernels::resize(ConstTensorView(in.view()).crop_hw(w.top, w.left, w.height, w.width), o,
                             {kernels::ResizeFilter::kCubic, true}, ws);
    });
    EXPECT_TRUE(same_tensor(run.outputs[0][k], want)) << k;
  }
}

// random_interpolation: the filter drawn from the same stream after the window (timm's 'random').
TEST_F(GeometryOpsTest, RandomResizedCropDrawsItsFilterAfterTheWindow) {
  const OpRun run = run_op(root(), [](PipelineSpec& s, TensorRef images) {
    return std::vector<TensorRef>{s.add("random_resized_crop", {images},
                                        {{"size", {64, 48}}, {"pillow", true},
                                         {"random_interpolation", std::vector<std::string>{"nearest", "bicubic"}}},
                                        {}, "rrc")[0]};
  });
  kernels::ResizeWorkspace ws;
  int drawn[2] = {0, 0};
  for (size_t k = 0; k < run.images().size(); ++k) {
    const Tensor& in = run.images()[k];
    RandomStream rng(RandomStream::key_for(11, "rrc"), run.epochs[k], run.positions[k]);
    StreamDraws draws(rng);
    const CropWindow w = random_resized_crop_window({in.shape()[0], in.shape()[1]}, {}, draws);
    const uint64_t f = rng.below(2);
    ++drawn[f];
    kernels::ResizeOptions o{f ? kernels::ResizeFilter::kCubic : kernels::ResizeFilter::kNearest, true};
    o.pillow = true;
    const Tensor want = by_kernel({64, 48, 3}, DType::kU8, Layout::kHWC, [&](const TensorView& out) {
      return kernels::resize(ConstTensorView(in.view()).crop_hw(w.top, w.left, w.height, w.width), out, o, ws);
    });
    EXPECT_TRUE(same_tensor(run.outputs[0][k], want)) << k;
  }
  EXPECT_GT(drawn[0], 0);
  EXPECT_GT(drawn[1], 0);
}

TEST_F(GeometryOpsTest, PadEqualsKernelForEveryMode) {
  for (const char* mode : {"constant", "edge", "reflect", "symmetric"}) {
    const OpRun run = run_op(root(), [&](PipelineSpec& s, TensorRef images) {
      return std::vector<TensorRef>{s.add("pad", {images}, {{"padding", {3, 5, 7, 2}}, {"padding_mode", mode}, {"fill", {1.0, 2.0, 3.0}}})[0]};
    }, {40, 30});
    ASSERT_TRUE(run.dense_first) << mode;  // static input size: the padded size is known
    const double fill[3] = {1, 2, 3};
    for (size_t k = 0; k < run.images().size(); ++k) {
      const Tensor want = by_kernel({47, 40, 3}, DType::kU8, Layout::kHWC, [&](const TensorView& o) {
        return kernels::pad(run.images()[k].view(), {3, 5, 7, 2}, kernels::parse_pad_mode(mode), o, fill);
      });
      EXPECT_TRUE(same_tensor(run.outputs[0][k], want)) << mode;
    }
  }
}

TEST_F(GeometryOpsTest, FlipDrivenByCoinFlipEqualsKernel) {
  const OpRun run = run_op(root(), [](PipelineSpec& s, TensorRef images) {
    auto h = s.add("coin_flip", {}, {{"probability", 0.5}});
    auto v = s.add("coin_flip", {}, {{"probability", 0.5}});
    auto f = s.add("flip", {images}, {}, {{"horizontal", h[0]}, {"vertical", v[0]}});
    return std::vector<TensorRef>{f[0], h[0], v[0]};
  });
  int flipped = 0;
  for (size_t k = 0; k < run.images().size(); ++k) {
    const bool h = *run.outputs[1][k].typed<int32_t>() != 0, v = *run.outputs[2][k].typed<int32_t>() != 0;
    flipped += h || v;
    const Tensor& in = run.images()[k];
    const Tensor want = by_kernel(in.shape(), DType::kU8, Layout::kHWC,
                                  [&](const TensorView& o) { return kernels::flip(in.view(), o, h, v); });
    EXPECT_TRUE(same_tensor(run.outputs[0][k], want)) << k;
  }
  EXPECT_GT(flipped, 0);
}

// Flip decisions of a random_flip run: output == flipped input (the 8x8 photos are not symmetric).
std::vector<int> flip_decisions(const OpRun& run, bool horizontal) {
  std::vector<int> d;
  for (size_t k = 0; k < run.images().size(); ++k) {
    const Tensor& in = run.images()[k];
    const Tensor flipped = by_kernel(in.shape(), DType::kU8, Layout::kHWC, [&](const TensorView& o) {
      return kernels::flip(in.view(), o, horizontal, !horizontal);
    });
    const bool f = same_tensor(run.outputs[0][k], flipped);
    EXPECT_TRUE(f || same_tensor(run.outputs[0][k], in)) << k;
    d.push_back(f);
  }
  return d;
}

TEST_F(GeometryOpsTest, RandomFlipRateAndDeterminismAcrossThreadCounts) {
  TempImageFolder folder(4, 10);
  auto run_with = [&](int threads, const char* direction) {
    return run_op(folder.root().string(), [&](PipelineSpec& s, TensorRef images) {
      return std::vector<TensorRef>{s.add("random_flip", {images}, {{"probability", 0.3}, {"direction", direction}}, {}, "flip")[0]};
    }, {8, 8}, {.batch_size = 8, .num_threads = threads, .seed = 5}, 25);
  };
  const std::vector<int> one = flip_decisions(run_with(1, "horizontal"), true);
  const std::vector<int> two = flip_decisions(run_with(2, "horizontal"), true);
  EXPECT_EQ(one, two);
  ASSERT_EQ(one.size(), 1000u);
  const int n = static_cast<int>(std::count(one.begin(), one.end(), 1));
  std::cout << "[ random_flip p=0.3 ] " << n << " of 1000 flipped\n";
  EXPECT_NEAR(n, 300, 60) << "flip rate " << n / 1000.0;  // 4 sigma of Binomial(1000, 0.3)
  const std::vector<int> vertical = flip_decisions(run_with(2, "vertical"), false);
  EXPECT_NEAR(std::count(vertical.begin(), vertical.end(), 1), 300, 60);
}

TEST_F(GeometryOpsTest, TransposeBothWays) {
  const OpRun run = run_op(root(), [](PipelineSpec& s, TensorRef images) {
    auto chw = s.add("transpose", {images}, {{"output_layout", "CHW"}});
    auto back = s.add("transpose", {chw[0]}, {{"output_layout", "HWC"}});
    return std::vector<TensorRef>{chw[0], back[0]};
  }, {30, 20});
  ASSERT_TRUE(run.dense_first);
  for (size_t k = 0; k < run.images().size(); ++k) {
    const Tensor& in = run.images()[k];
    EXPECT_EQ(run.outputs[0][k].layout(), Layout::kCHW);
    const Tensor want = by_kernel({3, 30, 20}, DType::kU8, Layout::kCHW,
                                  [&](const TensorView& o) { return kernels::hwc_to_chw(in.view(), o); });
    EXPECT_TRUE(same_tensor(run.outputs[0][k], want));
    EXPECT_TRUE(same_tensor(run.outputs[1][k], in));
  }
}

TEST_F(GeometryOpsTest, BadArgumentsNameTheArgument) {
  auto has = [](const std::string& msg, const std::string& part) {
    return msg.find(part) != std::string::npos ? ::testing::AssertionSuccess()
                                                : ::testing::AssertionFailure() << msg;
  };
  EXPECT_TRUE(has(testing::config_error(root(), "crop", {{"crop", {1, 2, 3}}}), "crop \"op\": argument \"crop\" must have 1 or 2 elements, got 3"));
  EXPECT_TRUE(has(testing::config_error(root(), "crop", {{"crop", {5}}, {"crop_pos_x", 1.5}}), "argument \"crop_pos_x\" must be in [0, 1]"));
  EXPECT_TRUE(has(testing::config_error(root(), "crop", {{"crop", {5}}, {"fill", {1.0, 2.0}}}), "argument \"fill\" has 2 values for 3 channels"));
  EXPECT_TRUE(has(testing::config_error(root(), "pad", {{"padding", {1, 2, 3}}}), "argument \"padding\" must have 1 or 2 or 4 elements"));
  EXPECT_TRUE(has(testing::config_error(root(), "pad", {{"padding", {1}}, {"padding_mode", "wrap"}}), "argument \"padding_mode\" must be one of"));
  EXPECT_TRUE(has(testing::config_error(root(), "random_resized_crop", {{"size", {8}}, {"ratio", {2.0, 1.0}}}), "argument \"ratio\""));
  EXPECT_TRUE(has(testing::config_error(root(), "flip", {{"horizontal", 2}}), "argument \"horizontal\" must be in [0, 1]"));
  EXPECT_TRUE(has(testing::config_error(root(), "random_flip", {{"direction", "diagonal"}}), "argument \"direction\""));
  EXPECT_TRUE(has(testing::config_error(root(), "transpose", {{"output_layout", "NCHW"}}), "argument \"output_layout\""));
}

}  // namespace
}  // namespace hdl

namespace hdl {
namespace {

// Which crop of `full` `crop` is: the (top, left) whose window equals it, or (-1, -1).
std::pair<int64_t, int64_t> find_window(const Tensor& full, const Tensor& crop) {
  const int64_t H = full.shape()[0], W = full.shape()[1], C = full.shape()[2];
  const int64_t h = crop.shape()[0], w = crop.shape()[1];
  for (int64_t y = 0; y + h <= H; ++y)
    for (int64_t x = 0; x + w <= W; ++x) {
      bool same = true;
      for (int64_t r = 0; r < h && same; ++r)
        same = std::memcmp(full.typed<uint8_t>() + ((y + r) * W + x) * C, crop.typed<uint8_t>() + r * w * C, w * C) == 0;
      if (same) return {y, x};
    }
  return {-1, -1};
}

// torchvision RandomCrop draws top and left uniformly over every position, ends included.
TEST_F(GeometryOpsTest, RandomCropOffsetsAreUniformOverEveryPosition) {
  const OpRun run = run_op(root(), [](PipelineSpec& s, TensorRef images) {
    return std::vector<TensorRef>{s.add("random_crop", {images}, {{"size", {8, 9}}}, {}, "op")[0]};
  }, {10, 12}, {.batch_size = 5, .num_threads = 2, .seed = 3}, 40);
  ASSERT_TRUE(run.dense_first);
  std::vector<int> tops(3), lefts(4);
  for (size_t k = 0; k < run.outputs[0].size(); ++k) {
    const auto [top, left] = find_window(run.images()[k], run.outputs[0][k]);
    ASSERT_GE(top, 0) << "sample " << k << " is not a window of its input";
    ++tops[top], ++lefts[left];
  }
  const double n = static_cast<double>(run.outputs[0].size());  // 400
  for (int t : tops) EXPECT_NEAR(t / n, 1.0 / 3, 0.06);
  for (int l : lefts) EXPECT_NEAR(l / n, 1.0 / 4, 0.06);
}

// padding then pad_if_needed are two reflections, as torchvision applies them.
TEST_F(GeometryOpsTest, RandomCropPadsTwiceLikeTorchvision) {
  const OpRun run = run_op(root(), [](PipelineSpec& s, TensorRef images) {
    return std::vector<TensorRef>{s.add("random_crop", {images},
        {{"size", {14, 16}}, {"padding", {1}}, {"pad_if_needed", true}, {"padding_mode", "reflect"}}, {}, "op")[0]};
  }, {10, 12});
  for (size_t k = 0; k < run.outputs[0].size(); ++k) {
    const Tensor& img = run.images()[k];
    Tensor once = by_kernel({12, 14, 3}, DType::kU8, Layout::kHWC, [&](const TensorView& v) {
      return kernels::pad(img.view(), {1, 1, 1, 1}, kernels::PadMode::kReflect, v);
    });
    Tensor twice = by_kernel({16, 18, 3}, DType::kU8, Layout::kHWC, [&](const TensorView& v) {
      return kernels::pad(once.view(), {2, 2, 2, 2}, kernels::PadMode::kReflect, v);
    });
    EXPECT_GE(find_window(twice, run.outputs[0][k]).first, 0) << "sample " << k;
  }
}

TEST_F(GeometryOpsTest, RandomCropLargerThanTheImageFailsTheSampleLikeTorchvision) {
  try {
    run_op(root(), [](PipelineSpec& s, TensorRef images) {
      return std::vector<TensorRef>{s.add("random_crop", {images}, {{"size", {20, 20}}}, {}, "op")[0]};
    }, {10, 12});
    FAIL() << "expected a DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("random_crop \"op\": sample"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("required crop size 20x20 is larger than the (padded) image 10x12"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hdl
