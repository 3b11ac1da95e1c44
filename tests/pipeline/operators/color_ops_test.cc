// crop_mirror_normalize, normalize, cast, color_space_conversion, grayscale, solarize, brightness,
// contrast, saturation, hue, color_jitter and gaussian_blur inside pipelines on real photos:
// declared shapes/dtypes/layouts, pixels equal to calling the kernels directly (the kernels are
// tested against torchvision), per-sample factors from random_uniform / coin_flip, color_jitter's
// draws (order uniform over the 24 permutations, factors in range) and determinism across thread
// counts, `probability` (each sample the kernel's output or the input, as the replayed draw says;
// one coin_flip bound to several operators applies all or none), and argument errors naming
// the argument.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "pipeline/decode/crop_geometry.h"
#include "pipeline/kernels/blur.h"
#include "pipeline/kernels/color.h"
#include "pipeline/kernels/normalize.h"
#include "pipeline/operators/color_jitter.h"
#include "tests/pipeline/operators/op_test_util.h"

namespace hdl {
namespace {

using testing::by_kernel;
using testing::OpRun;
using testing::run_op;
using testing::same_tensor;
using testing::TempImageFolder;

using ColorOpsTest = testing::OpTest<2, 4>;

TEST_F(ColorOpsTest, CropMirrorNormalizeEqualsKernel) {
  const OpRun run = run_op(root(), [](PipelineSpec& s, TensorRef images) {
    auto m = s.add("coin_flip", {}, {{"probability", 0.5}});
    auto c = s.add("crop_mirror_normalize", {images},
                   {{"crop", {224}}, {"mean", {0.485, 0.456, 0.406}}, {"std", {0.229, 0.224, 0.225}}, {"dtype", "float16"}},
                   {{"mirror", m[0]}});
    return std::vector<TensorRef>{c[0], m[0]};
  });
  ASSERT_TRUE(run.dense_first);
  for (size_t k = 0; k < run.images().size(); ++k) {
    const Tensor& in = run.images()[k];
    kernels::CropMirrorNormalizeOptions o;
    o.top = crop_offset(in.shape()[0], 224, 0.5), o.left = crop_offset(in.shape()[1], 224, 0.5);
    o.mirror = *run.outputs[1][k].typed<int32_t>() != 0;
    o.norm = {{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}, 255.0f};
    const Tensor want = by_kernel({3, 224, 224}, DType::kF16, Layout::kCHW,
                                  [&](const TensorView& v) { return kernels::crop_mirror_normalize(in.view(), v, o); });
    EXPECT_EQ(run.outputs[0][k].layout(), Layout::kCHW);
    EXPECT_TRUE(same_tensor(run.outputs[0][k], want)) << k;
  }
}

TEST_F(ColorOpsTest, NormalizeAndCastEqualKernels) {
  const OpRun run = run_op(root(), [](PipelineSpec& s, TensorRef images) {
    auto chw = s.add("transpose", {images});
    auto n = s.add("normalize", {chw[0]}, {{"mean", {0.5}}, {"std", {0.25}}});
    auto c = s.add("cast", {images}, {{"dtype", "bfloat16"}});
    return std::vector<TensorRef>{n[0], c[0], chw[0]};
  }, {32, 24});
  ASSERT_TRUE(run.dense_first);
  for (size_t k = 0; k < run.images().size(); ++k) {
    const Tensor& chw = run.outputs[2][k];
    const Tensor norm = by_kernel({3, 32, 24}, DType::kF32, Layout::kCHW, [&](const TensorView& v) {
      return kernels::normalize(chw.view(), v, {{0.5f}, {0.25f}, 255.0f}, 0);
    });
    EXPECT_TRUE(same_tensor(run.outputs[0][k], norm));
    EXPECT_EQ(run.outputs[0][k].layout(), Layout::kCHW);
    const Tensor cast = by_kernel({32, 24, 3}, DType::kBF16, Layout::kHWC,
                                  [&](const TensorView& v) { return kernels::cast(run.images()[k].view(), v); });
    EXPECT_TRUE(same_tensor(run.outputs[1][k], cast));
  }
}

// The same conversion composed from the kernels: via RGB (BGR = channels reversed).
Tensor convert(const Tensor& rgb_in, const std::string& to) {
  const Shape s = rgb_in.shape();
  if (to == "gray") return by_kernel({s[0], s[1], 1}, DType::kU8, Layout::kHWC, [&](const TensorView& v) { return kernels::rgb_to_grayscale(rgb_in.view(), v); });
  if (to == "ycbcr") return by_kernel(s, DType::kU8, Layout::kHWC, [&](const TensorView& v) { return kernels::rgb_to_ycbcr(rgb_in.view(), v); });
  return by_kernel(s, DType::kU8, Layout::kHWC, [&](const TensorView& v) { return kernels::swap_red_blue(rgb_in.view(), v); });
}

TEST_F(ColorOpsTest, ColorSpaceConversionEqualsKernels) {
  const OpRun run = run_op(root(), [](PipelineSpec& s, TensorRef images) {
    auto bgr = s.add("color_space_conversion", {images}, {{"output_type", "bgr"}});
    auto gray_from_bgr = s.add("color_space_conversion", {bgr[0]}, {{"image_type", "bgr"}, {"output_type", "gray"}});
    auto ycc = s.add("color_space_conversion", {images}, {{"output_type", "ycbcr"}});
    auto rgb_back = s.add("color_space_conversion", {ycc[0]}, {{"image_type", "ycbcr"}, {"output_type", "rgb"}});
    auto gray3 = s.add("grayscale", {images}, {{"num_output_channels", 3}});
    return std::vector<TensorRef>{bgr[0], gray_from_bgr[0], ycc[0], rgb_back[0], gray3[0]};
  }, {40, 40});
  for (size_t k = 0; k < run.images().size(); ++k) {
    const Tensor& in = run.images()[k];
    EXPECT_TRUE(same_tensor(run.outputs[0][k], convert(in, "bgr")));
    EXPECT_TRUE(same_tensor(run.outputs[1][k], convert(in, "gray")));
    const Tensor ycc = convert(in, "ycbcr");
    EXPECT_TRUE(same_tensor(run.outputs[2][k], ycc));
    EXPECT_TRUE(same_tensor(run.outputs[3][k], by_kernel(in.shape(), DType::kU8, Layout::kHWC,
                                                         [&](const TensorView& v) { return kernels::ycbcr_to_rgb(ycc.view(), v); })));
    EXPECT_TRUE(same_tensor(run.outputs[4][k], by_kernel(in.shape(), DType::kU8, Layout::kHWC,
                                                         [&](const TensorView& v) { return kernels::rgb_to_grayscale(in.view(), v); })));
  }
}

TEST_F(ColorOpsTest, AdjustmentsWithPerSampleFactorsEqualKernels) {
  using Fn = Status (*)(const ConstTensorView&, const TensorView&, double);
  const std::map<std::string, std::pair<Fn, std::vector<double>>> ops = {
      {"brightness", {kernels::adjust_brightness, {0.5, 1.5}}}, {"contrast", {kernels::adjust_contrast, {0.2, 1.8}}},
      {"saturation", {kernels::adjust_saturation, {0.0, 2.0}}}, {"hue", {kernels::adjust_hue, {-0.3, 0.3}}}};
  for (const auto& [name, op] : ops) {
    const OpRun run = run_op(root(), [&](PipelineSpec& s, TensorRef images) {
      auto f = s.add("random_uniform", {}, {{"range", ArgValue(op.second)}});
      return std::vector<TensorRef>{s.add(name, {images}, {}, {{"factor", f[0]}})[0], f[0]};
    }, {48, 40});
    for (size_t k = 0; k < run.images().size(); ++k) {
      const double f = *run.outputs[1][k].typed<float>();
      const Tensor want = by_kernel({48, 40, 3}, DType::kU8, Layout::kHWC,
                                    [&](const TensorView& v) { return op.first(run.images()[k].view(), v, f); });
      EXPECT_TRUE(same_tensor(run.outputs[0][k], want)) << name << " " << f;
    }
  }
}

TEST_F(ColorOpsTest, ColorJitterEqualsReplayedDrawsAndIsThreadCountIndependent) {
  auto run_with = [&](int threads) {
    return run_op(root(), [](PipelineSpec& s, TensorRef images) {
      return std::vector<TensorRef>{s.add("color_jitter", {images},
          {{"brightness", {0.4}}, {"contrast", {0.4}}, {"saturation", {0.5, 1.5}}, {"hue", {0.1}}}, {}, "jitter")[0]};
    }, {40, 32}, {.batch_size = 3, .num_threads = threads, .seed = 3}, 2);
  };
  const OpRun one = run_with(1), two = run_with(2);
  ColorJitterRanges ranges;
  ranges.range = {std::pair{0.6, 1.4}, std::pair{0.6, 1.4}, std::pair{0.5, 1.5}, std::pair{-0.1, 0.1}};
  for (size_t k = 0; k < one.images().size(); ++k) {
    EXPECT_TRUE(same_tensor(one.outputs[0][k], two.outputs[0][k])) << k;
    RandomStream rng(RandomStream::key_for(3, "jitter"), one.epochs[k], one.positions[k]);
    const ColorJitterDraw d = draw_color_jitter(ranges, rng);
    const Tensor want = by_kernel({40, 32, 3}, DType::kU8, Layout::kHWC,
                                  [&](const TensorView& v) { return apply_color_jitter(d, one.images()[k].view(), v); });
    EXPECT_TRUE(same_tensor(one.outputs[0][k], want)) << k;
  }
}

TEST(ColorJitterDraws, OrderIsUniformAndFactorsStayInRange) {
  ColorJitterRanges ranges;
  ranges.range = {std::pair{0.6, 1.4}, std::nullopt, std::pair{0.0, 2.0}, std::pair{-0.5, 0.5}};
  std::map<std::array<int, 4>, int> orders;
  double sum = 0;
  const int n = 24000;
  for (int i = 0; i < n; ++i) {
    RandomStream rng(RandomStream::key_for(1, "jitter"), 0, static_cast<uint64_t>(i));
    const ColorJitterDraw d = draw_color_jitter(ranges, rng);
    ++orders[d.order];
    EXPECT_FALSE(d.factor[1].has_value());
    ASSERT_TRUE(d.factor[0] && d.factor[2] && d.factor[3]);
    EXPECT_TRUE(*d.factor[0] >= 0.6 && *d.factor[0] < 1.4);
    EXPECT_TRUE(*d.factor[3] >= -0.5 && *d.factor[3] < 0.5);
    sum += *d.factor[0];
  }
  EXPECT_EQ(orders.size(), 24u);
  for (const auto& [order, count] : orders) EXPECT_NEAR(count, n / 24, 150);  // ~5 sigma
  EXPECT_NEAR(sum / n, 1.0, 0.01);
}

TEST_F(ColorOpsTest, GaussianBlurEqualsKernelWithTheReplayedSigma) {
  const OpRun run = run_op(root(), [](PipelineSpec& s, TensorRef images) {
    auto random = s.add("gaussian_blur", {images}, {{"kernel_size", {5, 3}}}, {}, "blur");
    auto fixed = s.add("gaussian_blur", {images}, {{"kernel_size", {7}}, {"sigma", {1.5}}}, {}, "fixed");
    return std::vector<TensorRef>{random[0], fixed[0]};
  }, {36, 30});
  kernels::BlurWorkspace ws;
  for (size_t k = 0; k < run.images().size(); ++k) {
    RandomStream rng(RandomStream::key_for(11, "blur"), run.epochs[k], run.positions[k]);
    StreamDraws draws(rng);
    const double sigma = draws.uniform(0.1, 2.0);
    const Tensor& in = run.images()[k];
    EXPECT_TRUE(same_tensor(run.outputs[0][k], by_kernel(in.shape(), DType::kU8, Layout::kHWC, [&](const TensorView& v) {
      return kernels::gaussian_blur(in.view(), v, {5, 3, sigma, sigma}, ws);
    })));
    EXPECT_TRUE(same_tensor(run.outputs[1][k], by_kernel(in.shape(), DType::kU8, Layout::kHWC, [&](const TensorView& v) {
      return kernels::gaussian_blur(in.view(), v, {7, 7, 1.5, 1.5}, ws);
    })));
  }
}

// A sample's random stream of node `name` in a run_op pipeline seeded with `seed`.
RandomStream stream_of(const OpRun& run, size_t k, uint64_t seed, const char* name) {
  return RandomStream(RandomStream::key_for(seed, name), run.epochs[k], run.positions[k]);
}

TEST_F(ColorOpsTest, SolarizeAndRandomGrayscaleApplyWithTheirProbability) {
  const OpRun run = run_op(root(), [](PipelineSpec& s, TensorRef images) {
    auto always = s.add("solarize", {images}, {{"threshold", 128.0}}, {}, "always");
    auto sol = s.add("solarize", {images}, {{"threshold", 100.0}, {"probability", 0.5}}, {}, "sol");
    auto gray = s.add("grayscale", {images}, {{"num_output_channels", 0}, {"probability", 0.3}}, {}, "gray");
    return std::vector<TensorRef>{always[0], sol[0], gray[0]};
  }, {30, 26}, {.batch_size = 4, .num_threads = 2, .seed = 11}, 8);
  int solarized = 0, grayed = 0;
  const size_t n = run.images().size();
  for (size_t k = 0; k < n; ++k) {
    const Tensor& in = run.images()[k];
    auto kernel = [&](const std::function<Status(const TensorView&)>& f) { return by_kernel(in.shape(), DType::kU8, Layout::kHWC, f); };
    EXPECT_TRUE(same_tensor(run.outputs[0][k], kernel([&](const TensorView& v) { return kernels::solarize(in.view(), v, 128); })));
    // Each sample is the kernel's output or the input, as the replayed `torch.rand(1) < p` says.
    RandomStream s1 = stream_of(run, k, 11, "sol"), s2 = stream_of(run, k, 11, "gray");
    const bool sol = s1.uniform() < 0.5, gray = s2.uniform() < 0.3;
    EXPECT_TRUE(same_tensor(run.outputs[1][k], sol ? kernel([&](const TensorView& v) { return kernels::solarize(in.view(), v, 100); }) : in)) << k;
    EXPECT_TRUE(same_tensor(run.outputs[2][k], gray ? kernel([&](const TensorView& v) { return kernels::rgb_to_grayscale(in.view(), v); }) : in)) << k;
    solarized += sol, grayed += gray;
  }
  ASSERT_EQ(n, 64u);
  EXPECT_NEAR(solarized, 32, 16);  // 4 sigma
  EXPECT_NEAR(grayed, 19, 15);
}

TEST_F(ColorOpsTest, OneCoinFlipAppliesSeveralOperatorsAllOrNone) {
  // RandomApply([ColorJitter(...), GaussianBlur(...), RandomSolarize(p=1)], p=0.6): one draw.
  const OpRun run = run_op(root(), [](PipelineSpec& s, TensorRef images) {
    auto coin = s.add("coin_flip", {}, {{"probability", 0.6}}, {}, "coin");
    auto j = s.add("color_jitter", {images}, {{"brightness", {0.4}}, {"hue", {0.1}}}, {{"probability", coin[0]}}, "jitter");
    auto b = s.add("gaussian_blur", {j[0]}, {{"kernel_size", {3}}}, {{"probability", coin[0]}}, "blur");
    auto z = s.add("solarize", {b[0]}, {{"threshold", 200.0}}, {{"probability", coin[0]}}, "sol");
    return std::vector<TensorRef>{z[0], j[0], coin[0]};
  }, {30, 26}, {.batch_size = 4, .num_threads = 2, .seed = 5}, 6);
  ColorJitterRanges ranges;
  ranges.range = {std::pair{0.6, 1.4}, std::nullopt, std::nullopt, std::pair{-0.1, 0.1}};
  int applied = 0;
  for (size_t k = 0; k < run.images().size(); ++k) {
    const Tensor& in = run.images()[k];
    const bool on = *run.outputs[2][k].typed<int32_t>() != 0;
    if (!on) {
      EXPECT_TRUE(same_tensor(run.outputs[0][k], in)) << k;
      continue;
    }
    ++applied;
    // Bound to 1, the probability draws nothing: the jitter's draws are its stream's first.
    RandomStream rng = stream_of(run, k, 5, "jitter");
    const ColorJitterDraw d = draw_color_jitter(ranges, rng);
    EXPECT_TRUE(same_tensor(run.outputs[1][k], by_kernel(in.shape(), DType::kU8, Layout::kHWC, [&](const TensorView& v) {
      return apply_color_jitter(d, in.view(), v);
    }))) << k;
    EXPECT_FALSE(same_tensor(run.outputs[0][k], in)) << k;
  }
  EXPECT_GT(applied, 5);
  EXPECT_LT(applied, 43);
}

TEST_F(ColorOpsTest, BadArgumentsNameTheArgument) {
  auto has = [](const std::string& msg, const std::string& part) {
    return msg.find(part) != std::string::npos ? ::testing::AssertionSuccess() : ::testing::AssertionFailure() << msg;
  };
  using testing::config_error;
  EXPECT_TRUE(has(config_error(root(), "crop_mirror_normalize", {{"dtype", "float64"}}), "argument \"dtype\" must be one of"));
  EXPECT_TRUE(has(config_error(root(), "crop_mirror_normalize", {{"std", {0.2, 0.0, 0.2}}}), "argument \"std\" must be > 0"));
  EXPECT_TRUE(has(config_error(root(), "crop_mirror_normalize", {{"mean", {0.5, 0.5}}}), "argument \"mean\" has 2 values for 3 channels"));
  EXPECT_TRUE(has(config_error(root(), "cast", {{"dtype", "float8"}}), "cast \"op\": argument \"dtype\" must be one of"));
  EXPECT_TRUE(has(config_error(root(), "color_jitter", {{"hue", {0.7}}}), "argument \"hue\""));
  EXPECT_TRUE(has(config_error(root(), "color_jitter", {{"brightness", {1.5, 0.5}}}), "argument \"brightness\""));
  EXPECT_TRUE(has(config_error(root(), "gaussian_blur", {{"kernel_size", {4}}}), "argument \"kernel_size\" must be odd"));
  EXPECT_TRUE(has(config_error(root(), "grayscale", {{"num_output_channels", 2}}), "argument \"num_output_channels\" must be 0, 1 or 3"));
  EXPECT_TRUE(has(config_error(root(), "grayscale", {{"probability", 0.5}}), "argument \"num_output_channels\" must be 0 or the input's 3"));
  EXPECT_TRUE(has(config_error(root(), "solarize", {{"probability", -0.1}}), "argument \"probability\" must be in"));
  EXPECT_TRUE(has(config_error(root(), "solarize", {{"threshold", -1.0}}), "argument \"threshold\""));
  EXPECT_TRUE(has(config_error(root(), "brightness", {{"factor", -1.0}}), "argument \"factor\" must be in"));
  EXPECT_TRUE(has(config_error(root(), "color_space_conversion", {{"output_type", "hsv"}}), "argument \"output_type\" must be one of"));
  EXPECT_TRUE(has(config_error(root(), "color_space_conversion", {{"image_type", "gray"}, {"output_type", "rgb"}}), "input must be HWC uint8 images with 1 channels"));
}

}  // namespace
}  // namespace hdl
