// timm_augment: the laws of draw_timm_augment against timm's AugmentOp / RandAugment /
// AutoAugment over many draws (op choice with and without weights, per-op probability, Gaussian
// and uniform magnitude noise with clamping, sign, filter choice, blur radius), within 5
// standard deviations; timm's level functions at chosen levels (values from timm 1.0.15's
// LEVEL_TO_ARG); solarize_add; and inside pipelines on real photos, every sample equal to
// replaying its stream, identical across thread counts, argument errors naming the argument.
// (Pixels of every op against timm's own functions on PIL images: tests/python/test_timm.py.)
#include "pipeline/operators/timm_augment_policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "pipeline/kernels/augment.h"
#include "tests/pipeline/operators/op_test_util.h"

namespace hdl {
namespace {

using testing::config_error;
using testing::OpRun;
using testing::run_op;
using testing::same_tensor;
using O = TimmOp;
using F = kernels::WarpFilter;

// Within 5 standard deviations of a binomial count's mean.
void expect_frequency(int64_t count, int64_t n, double p, const std::string& what) {
  const double sd = std::sqrt(n * p * (1 - p));
  EXPECT_NEAR(static_cast<double>(count), n * p, 5 * sd + 1) << what;
}

TimmAugmentParams rand_params(std::vector<O> ops, double prob, double magnitude) {
  TimmAugmentParams p;
  p.ops = std::move(ops);
  p.probabilities.assign(p.ops.size(), prob);
  p.magnitudes.assign(p.ops.size(), magnitude);
  return p;
}

TEST(TimmAugmentPolicy, NamesRoundTripAndUnknownNamesAreConfigErrors) {
  for (int k = 0; k <= static_cast<int>(O::kGaussianBlurRand); ++k)
    EXPECT_EQ(parse_timm_op(timm_op_name(static_cast<O>(k))), static_cast<O>(k));
  try {
    parse_timm_op("Sharpen");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown timm op \"Sharpen\""), std::string::npos) << e.what();
  }
}

TEST(TimmAugmentPolicy, LevelFunctionsAreTimms) {
  // timm 1.0.15: LEVEL_TO_ARG[name](level, {'translate_const': 100, 'translate_pct': 0.45}),
  // _randomly_negate not negating; relative translations then times the image's width / height.
  TimmAugmentParams p;
  p.translate_const = 100;
  struct Case { O op; double level; double want; };
  for (const Case& c : {Case{O::kRotate, 9, 27.0}, Case{O::kPosterize, 9, 3}, Case{O::kPosterizeIncreasing, 9, 1},
                        Case{O::kPosterizeOriginal, 9.7, 7}, Case{O::kSolarize, 9, 230},
                        Case{O::kSolarizeIncreasing, 9, 26}, Case{O::kSolarizeIncreasing, 10, 0},
                        Case{O::kSolarizeAdd, 9, 99}, Case{O::kSolarizeAdd, 10, 110}, Case{O::kColor, 9, 1.72},
                        Case{O::kContrastIncreasing, 9, 1.81}, Case{O::kShearX, 9, 0.27},
                        Case{O::kTranslateX, 9, 90}, Case{O::kTranslateXRel, 9, 0.405 * 72},
                        Case{O::kTranslateYRel, 9, 0.405 * 56}, Case{O::kDesaturate, 9, 0.05},
                        Case{O::kGaussianBlur, 9, 1.81}, Case{O::kGaussianBlurRand, 9, 0.9}}) {
    EXPECT_NEAR(timm_level_arg(p, c.op, c.level, false, 72, 56), c.want, 1e-12) << timm_op_name(c.op);
  }
  EXPECT_DOUBLE_EQ(timm_level_arg(p, O::kRotate, 9, true, 72, 56), -27.0);
  EXPECT_DOUBLE_EQ(timm_level_arg(p, O::kBrightnessIncreasing, 9, true, 72, 56), 1.0 - 0.9 * .9);
  EXPECT_DOUBLE_EQ(timm_level_arg(p, O::kBrightnessIncreasing, 20, true, 72, 56), 0.1);  // max(0.1, ...)
  EXPECT_DOUBLE_EQ(timm_level_arg(p, O::kSolarize, 9, true, 72, 56), 230);             // unsigned
}

TEST(TimmAugmentPolicy, RandAugmentDrawsOpsUniformlyWithProbabilityAndSign) {
  const std::vector<O> ops = {O::kAutoContrast, O::kRotate, O::kShearX, O::kSolarizeAdd, O::kColorIncreasing};
  TimmAugmentParams p = rand_params(ops, 0.5, 9);
  p.num_layers = 3;
  p.filters = {F::kBilinear, F::kBicubic};
  const int64_t n = 20000;
  std::map<O, int64_t> count;
  int64_t steps = 0, negative = 0, signed_steps = 0, bicubic = 0, geometric = 0;
  for (int64_t i = 0; i < n; ++i) {
    RandomStream rng(5, 0, static_cast<uint64_t>(i));
    for (const TimmStep& s : draw_timm_augment(p, 56, 72, rng)) {
      ++count[s.op];
      ++steps;
      if (s.op == O::kRotate || s.op == O::kShearX) {
        ++signed_steps;
        negative += s.arg < 0;
        ++geometric;
        bicubic += s.filter == F::kBicubic;
      }
      if (s.op == O::kColorIncreasing) EXPECT_NEAR(s.arg, 1.0 + (s.arg < 1 ? -0.81 : 0.81), 1e-12);
    }
  }
  // Each of 3 layers: an op uniformly (1/5), applied with probability 0.5.
  for (O op : ops) expect_frequency(count[op], 3 * n, 0.1, timm_op_name(op));
  expect_frequency(steps, 3 * n, 0.5, "applied");
  expect_frequency(negative, signed_steps, 0.5, "negated");
  expect_frequency(bicubic, geometric, 0.5, "bicubic");
}

TEST(TimmAugmentPolicy, MagnitudeNoiseIsGaussianOrUniformAndClamped) {
  TimmAugmentParams p = rand_params({O::kRotate}, 1.0, 9);
  p.num_layers = 1;
  p.magnitude_std = 0.5;
  const int64_t n = 20000;
  double sum = 0, sum2 = 0;
  int64_t at_top = 0;
  for (int64_t i = 0; i < n; ++i) {
    RandomStream rng(6, 0, static_cast<uint64_t>(i));
    const auto steps = draw_timm_augment(p, 56, 72, rng);
    ASSERT_EQ(steps.size(), 1u);
    const double level = std::abs(steps[0].arg) / 3.0;  // Rotate: level / 10 * 30
    EXPECT_LE(level, 10.0 + 1e-12);
    at_top += level >= 10.0 - 1e-12;
    sum += level;
    sum2 += level * level;
  }
  // gauss(9, 0.5) clamped to 10: P(> 10) = P(Z > 2) = 0.02275; the unclamped part's mean
  // stays near 9.
  expect_frequency(at_top, n, 0.02275, "clamped at 10");
  const double mean = sum / n, sd = std::sqrt(sum2 / n - mean * mean);
  EXPECT_NEAR(mean, 9.0, 0.02);
  EXPECT_NEAR(sd, 0.48, 0.02);  // a little under 0.5: the clamp

  p.magnitude_std = 0;
  p.magnitude_uniform = true;
  p.magnitudes = {8};
  int64_t below4 = 0;
  for (int64_t i = 0; i < n; ++i) {
    RandomStream rng(7, 0, static_cast<uint64_t>(i));
    const double level = std::abs(draw_timm_augment(p, 56, 72, rng)[0].arg) / 3.0;
    EXPECT_LE(level, 8.0);
    below4 += level < 4.0;
  }
  expect_frequency(below4, n, 0.5, "uniform(0, 8) below 4");

  p.magnitude_uniform = false;
  p.magnitudes = {15};
  RandomStream rng(8, 0, 0);
  EXPECT_DOUBLE_EQ(std::abs(draw_timm_augment(p, 56, 72, rng)[0].arg), 30.0);  // clamped to 10
  p.magnitude_max = 20;
  RandomStream rng2(8, 0, 0);
  EXPECT_DOUBLE_EQ(std::abs(draw_timm_augment(p, 56, 72, rng2)[0].arg), 45.0);  // mmax20: 15 stays
}

TEST(TimmAugmentPolicy, WeightedChoiceIsWithoutReplacement) {
  // Weights 3, 2, 1 (numpy normalises), two layers without replacement: P(first = i) = w_i / 6,
  // P(second = j | first = i) = w_j / (6 - w_i).
  TimmAugmentParams p = rand_params({O::kInvert, O::kEqualize, O::kAutoContrast}, 1.0, 9);
  p.weights = {3, 2, 1};
  const int64_t n = 30000;
  std::map<std::pair<O, O>, int64_t> pairs;
  for (int64_t i = 0; i < n; ++i) {
    RandomStream rng(9, 0, static_cast<uint64_t>(i));
    const auto steps = draw_timm_augment(p, 56, 72, rng);
    ASSERT_EQ(steps.size(), 2u);
    ASSERT_NE(steps[0].op, steps[1].op);
    ++pairs[{steps[0].op, steps[1].op}];
  }
  const std::vector<std::pair<O, double>> w = {{O::kInvert, 3}, {O::kEqualize, 2}, {O::kAutoContrast, 1}};
  for (const auto& [a, wa] : w)
    for (const auto& [b, wb] : w)
      if (a != b) expect_frequency(pairs[{a, b}], n, wa / 6 * wb / (6 - wa), "pair");
}

TEST(TimmAugmentPolicy, AutoAugmentDrawsOneSubPolicy) {
  TimmAugmentParams p;
  p.policy = TimmAugmentParams::Policy::kAutoAugment;
  p.ops = {O::kEqualize, O::kShearY, O::kColor, O::kInvert};
  p.probabilities = {0.8, 0.8, 0.4, 1.0};
  p.magnitudes = {1, 4, 9, 0};
  p.groups = {2, 1, 1};
  validate(p);
  const int64_t n = 30000;
  std::map<O, int64_t> count;
  for (int64_t i = 0; i < n; ++i) {
    RandomStream rng(10, 0, static_cast<uint64_t>(i));
    for (const TimmStep& s : draw_timm_augment(p, 56, 72, rng)) ++count[s.op];
  }
  expect_frequency(count[O::kEqualize], n, 0.8 / 3, "Equalize");
  expect_frequency(count[O::kShearY], n, 0.8 / 3, "ShearY");
  expect_frequency(count[O::kColor], n, 0.4 / 3, "Color");
  expect_frequency(count[O::kInvert], n, 1.0 / 3, "Invert");
}

// AugMixAugment: Dirichlet(1) weights (each Beta(1, width - 1): mean 1 / width, summing to 1),
// the blend factor Beta(alpha, alpha), depths uniform in {1, 2, 3}, ops uniform with
// replacement, every op applied (probability 1).
TEST(TimmAugmentPolicy, AugMixDrawsWeightsBlendDepthsAndOps) {
  TimmAugmentParams p = rand_params({O::kEqualize, O::kRotate, O::kInvert, O::kShearX}, 1.0, 3);
  p.policy = TimmAugmentParams::Policy::kAugMix;
  p.width = 4;
  p.magnitude_uniform = true;
  validate(p);
  const int64_t n = 20000;
  double w0 = 0, w0_sq = 0, m = 0, m_sq = 0;
  std::map<size_t, int64_t> depth;
  std::map<O, int64_t> ops;
  for (int64_t i = 0; i < n; ++i) {
    RandomStream rng(12, 0, static_cast<uint64_t>(i));
    const TimmAugMixDraw d = draw_timm_augmix(p, 48, 48, rng);
    ASSERT_EQ(d.weights.size(), 4u);
    ASSERT_EQ(d.chains.size(), 4u);
    double sum = 0;
    for (float w : d.weights) sum += w;
    ASSERT_NEAR(sum, 1.0, 1e-6);
    w0 += d.weights[0], w0_sq += d.weights[0] * d.weights[0];
    m += d.blend, m_sq += d.blend * d.blend;
    for (const auto& chain : d.chains) {
      ++depth[chain.size()];
      for (const TimmStep& s : chain) ++ops[s.op];
    }
  }
  // Beta(1, 3): mean 1/4, variance 3 / 80; Beta(1, 1): mean 1/2, variance 1 / 12.
  EXPECT_NEAR(w0 / n, 0.25, 5 * std::sqrt(3.0 / 80 / n));
  EXPECT_NEAR(w0_sq / n - (w0 / n) * (w0 / n), 3.0 / 80, 0.003);
  EXPECT_NEAR(m / n, 0.5, 5 * std::sqrt(1.0 / 12 / n));
  EXPECT_NEAR(m_sq / n - (m / n) * (m / n), 1.0 / 12, 0.005);
  for (size_t k = 1; k <= 3; ++k) expect_frequency(depth[k], 4 * n, 1.0 / 3, "depth " + std::to_string(k));
  EXPECT_EQ(depth.size(), 3u);
  int64_t total = 0;
  for (const auto& [op, c] : ops) total += c;
  for (O op : p.ops) expect_frequency(ops[op], total, 0.25, timm_op_name(op));
  p.depth = 2;
  RandomStream rng(12, 1, 0);
  for (const auto& chain : draw_timm_augmix(p, 48, 48, rng).chains) EXPECT_EQ(chain.size(), 2u);
}

TEST(TimmAugmentPolicy, BlurRandRadiusIsUniformUpToItsLevel) {
  TimmAugmentParams p = rand_params({O::kGaussianBlurRand}, 1.0, 10);
  p.num_layers = 1;
  const int64_t n = 20000;
  int64_t low = 0;
  for (int64_t i = 0; i < n; ++i) {
    RandomStream rng(11, 0, static_cast<uint64_t>(i));
    const double r = draw_timm_augment(p, 56, 72, rng)[0].arg;
    ASSERT_GE(r, 0.1);
    ASSERT_LE(r, 2.0);
    low += r < 1.05;
  }
  expect_frequency(low, n, 0.5, "radius in [0.1, 1.05)");
}

TEST(TimmAugmentPolicy, ValidateNamesTheArgument) {
  auto message = [](const TimmAugmentParams& p) {
    try {
      validate(p);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  TimmAugmentParams p = rand_params({O::kInvert, O::kEqualize}, 0.5, 9);
  EXPECT_EQ(message(p), "");
  p.probabilities = {0.5};
  EXPECT_NE(message(p).find("\"probabilities\""), std::string::npos);
  p = rand_params({O::kInvert, O::kEqualize}, 0.5, 9);
  p.weights = {1, 0};
  EXPECT_NE(message(p).find("1 non-zero weights for 2 ops"), std::string::npos) << message(p);
  p.weights = {};
  p.policy = TimmAugmentParams::Policy::kAutoAugment;
  p.groups = {1, 2};
  EXPECT_NE(message(p).find("sum to 3, not the 2 ops"), std::string::npos) << message(p);
}

TEST(TimmAugmentKernels, SolarizeAddIsTimmsTable) {
  Tensor src = Tensor::empty(Shape{1, 256, 3}, DType::kU8, Layout::kHWC);
  auto* s = static_cast<uint8_t*>(src.view().data);
  for (int i = 0; i < 256; ++i) s[3 * i] = s[3 * i + 1] = s[3 * i + 2] = static_cast<uint8_t>(i);
  Tensor dst = Tensor::empty(src.shape(), DType::kU8, Layout::kHWC);
  ASSERT_TRUE(kernels::solarize_add(src.view(), dst.view(), 110, 128).is_ok());
  const auto* d = static_cast<const uint8_t*>(dst.view().data);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(d[3 * i + 1], i < 128 ? std::min(255, i + 110) : i) << i;
  EXPECT_FALSE(kernels::solarize_add(src.view(), dst.view(), 300, 128).is_ok());
}

// ---- inside pipelines -------------------------------------------------------------------

using TimmAugmentOpTest = testing::OpTest<2, 6>;

const PipelineSpec::Args kRandArgs = {
    {"ops", ArgValue(std::vector<std::string>{"Rotate", "SolarizeAdd", "ContrastIncreasing", "TranslateYRel",
                                              "Equalize", "GaussianBlurRand"})},
    {"probabilities", ArgValue(std::vector<double>{0.5, 0.5, 0.5, 0.5, 0.5, 0.5})},
    {"magnitudes", ArgValue(std::vector<double>{9, 9, 9, 9, 9, 9})},
    {"num_layers", 3},
    {"magnitude_std", 0.5},
    {"interpolation", ArgValue(std::vector<std::string>{"bilinear", "bicubic"})},
    {"fill", ArgValue(std::vector<double>{124, 116, 104})}};

OpRun run_timm(const std::string& root, const PipelineSpec::Args& args,
               PipelineOptions options = {.batch_size = 4, .num_threads = 2, .seed = 11}) {
  return run_op(root, [&](PipelineSpec& s, TensorRef images) {
    return std::vector<TensorRef>{s.add("timm_augment", {images}, args, {}, "ta")[0]};
  }, {90, 70}, options, 2);
}

TEST_F(TimmAugmentOpTest, EverySampleEqualsItsReplayedDraws) {
  const OpRun run = run_timm(root(), kRandArgs);
  ASSERT_TRUE(run.dense_first);
  TimmAugmentParams p = rand_params({O::kRotate, O::kSolarizeAdd, O::kContrastIncreasing, O::kTranslateYRel,
                                     O::kEqualize, O::kGaussianBlurRand},
                                    0.5, 9);
  p.num_layers = 3;
  p.magnitude_std = 0.5;
  p.filters = {F::kBilinear, F::kBicubic};
  const std::vector<uint8_t> fill = {124, 116, 104};
  kernels::PilBlurWorkspace ws;
  int changed = 0;
  for (size_t k = 0; k < run.images().size(); ++k) {
    const Tensor& in = run.images()[k];
    RandomStream rng(RandomStream::key_for(11, "ta"), run.epochs[k], run.positions[k]);
    Tensor cur = Tensor::empty(in.shape(), DType::kU8, Layout::kHWC);
    copy(in.view(), cur.view());
    for (const TimmStep& step : draw_timm_augment(p, in.shape()[0], in.shape()[1], rng)) {
      Tensor next = Tensor::empty(in.shape(), DType::kU8, Layout::kHWC);
      ASSERT_TRUE(apply_timm_step(step, cur.view(), next.view(), fill, ws).is_ok());
      cur = next;
    }
    EXPECT_TRUE(same_tensor(run.outputs[0][k], cur)) << "sample " << k;
    changed += !same_tensor(run.outputs[0][k], in);
  }
  EXPECT_GT(changed, 0);
}

// policy augmix: each sample is its replayed chains, mixed in float32 (numpy's mixed += w * chain),
// clipped and truncated, then Image.blend(image, mix, m) with the blend kernel.
TEST_F(TimmAugmentOpTest, AugMixSampleEqualsItsReplayedChainsMixAndBlend) {
  PipelineSpec::Args args = kRandArgs;
  args.push_back({"policy", ArgValue("augmix")});
  args.push_back({"width", ArgValue(int64_t{3})});
  for (auto& [k, v] : args)
    if (k == "probabilities") v = ArgValue(std::vector<double>(6, 1.0));
  const OpRun run = run_timm(root(), args);
  TimmAugmentParams p = rand_params({O::kRotate, O::kSolarizeAdd, O::kContrastIncreasing, O::kTranslateYRel,
                                     O::kEqualize, O::kGaussianBlurRand},
                                    1.0, 9);
  p.policy = TimmAugmentParams::Policy::kAugMix;
  p.magnitude_std = 0.5;
  p.filters = {F::kBilinear, F::kBicubic};
  const std::vector<uint8_t> fill = {124, 116, 104};
  kernels::PilBlurWorkspace ws;
  for (size_t k = 0; k < run.images().size(); ++k) {
    const Tensor& in = run.images()[k];
    RandomStream rng(RandomStream::key_for(11, "ta"), run.epochs[k], run.positions[k]);
    const TimmAugMixDraw d = draw_timm_augmix(p, in.shape()[0], in.shape()[1], rng);
    std::vector<float> mix(static_cast<size_t>(in.num_elements()), 0.0f);
    for (size_t c = 0; c < d.chains.size(); ++c) {
      Tensor cur = Tensor::empty(in.shape(), DType::kU8, Layout::kHWC);
      copy(in.view(), cur.view());
      for (const TimmStep& step : d.chains[c]) {
        Tensor next = Tensor::empty(in.shape(), DType::kU8, Layout::kHWC);
        ASSERT_TRUE(apply_timm_step(step, cur.view(), next.view(), fill, ws).is_ok());
        cur = next;
      }
      for (size_t j = 0; j < mix.size(); ++j) mix[j] += d.weights[c] * static_cast<float>(cur.typed<uint8_t>()[j]);
    }
    Tensor mixed = Tensor::empty(in.shape(), DType::kU8, Layout::kHWC);
    for (size_t j = 0; j < mix.size(); ++j) mixed.typed<uint8_t>()[j] = static_cast<uint8_t>(std::clamp(mix[j], 0.0f, 255.0f));
    Tensor want = Tensor::empty(in.shape(), DType::kU8, Layout::kHWC);
    ASSERT_TRUE(kernels::blend_images(in.view(), mixed.view(), want.view(), d.blend).is_ok());
    EXPECT_TRUE(same_tensor(run.outputs[0][k], want)) << "sample " << k;
  }
}

TEST_F(TimmAugmentOpTest, SameOutputWithOneOrTwoThreads) {
  const OpRun a = run_timm(root(), kRandArgs, {.batch_size = 3, .num_threads = 1, .seed = 11});
  const OpRun b = run_timm(root(), kRandArgs, {.batch_size = 3, .num_threads = 2, .seed = 11});
  ASSERT_EQ(a.outputs[0].size(), b.outputs[0].size());
  for (size_t k = 0; k < a.outputs[0].size(); ++k) EXPECT_TRUE(same_tensor(a.outputs[0][k], b.outputs[0][k])) << k;
}

// kRandArgs with `key` set to `value`.
PipelineSpec::Args with(const std::string& key, ArgValue value) {
  PipelineSpec::Args args = kRandArgs;
  for (auto& [k, v] : args)
    if (k == key) v = value;
  return args;
}

TEST_F(TimmAugmentOpTest, ArgumentErrorsNameTheArgument) {
  EXPECT_NE(config_error(root(), "timm_augment", with("ops", ArgValue(std::vector<std::string>{"Rotate", "Blur"})))
                .find("unknown timm op \"Blur\""),
            std::string::npos);
  EXPECT_NE(config_error(root(), "timm_augment", with("interpolation", ArgValue(std::vector<std::string>{"lanczos"})))
                .find("\"interpolation\""),
            std::string::npos);
  EXPECT_NE(config_error(root(), "timm_augment", with("magnitudes", ArgValue(std::vector<double>{9})))
                .find("\"magnitudes\""),
            std::string::npos);
}

}  // namespace
}  // namespace hdl
