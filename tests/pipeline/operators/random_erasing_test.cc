// random_erasing vs torchvision 0.14's RandomErasing (torchvision_erasing.py, /usr/bin/python3):
// get_params fed torchvision's own recorded draws returns the same rectangle (or none); the law
// of the rectangle drawn from pipeline streams vs torchvision's from torch's RNG (rate of "no
// attempt fits" within 4 standard errors; two-sample Kolmogorov-Smirnov on top, left, height,
// width and area at alpha = 0.001). Then the operator in pipelines on real photos: the rectangle
// equals the replayed draws, it holds the values and nothing outside changes, the probability,
// standard normal values for random_values, one seed gives the same output whatever the thread
// count, and argument errors name the argument.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

#include "pipeline/decode/crop_geometry.h"
#include "pipeline/kernels/normalize.h"
#include "tests/pipeline/decode/recorded_draws.h"
#include "tests/pipeline/operators/op_test_util.h"

namespace hdl {
namespace {

using testing::OpRun;
using testing::RecordedDraws;
using testing::run_op;
using testing::same_tensor;

const std::vector<std::string>& reference() {
  static const std::vector<std::string> lines = testing::python_lines("tests/pipeline/operators/torchvision_erasing.py");
  return lines;
}

#define REQUIRE_REFERENCE() \
  if (reference().empty()) GTEST_SKIP() << "torchvision (/usr/bin/python3) unavailable"

std::optional<CropWindow> parse_rect(std::istringstream& line) {
  std::string first;
  line >> first;
  if (first == "none") return std::nullopt;
  CropWindow w;
  w.top = std::stoll(first);
  line >> w.left >> w.height >> w.width;
  return w;
}

TEST(RandomErasingWindow, EqualsTorchvisionGivenItsDraws) {
  REQUIRE_REFERENCE();
  int cases = 0, nones = 0, empties = 0;
  for (size_t i = 0; i < reference().size(); ++i) {
    std::istringstream head(reference()[i]);
    std::string tag;
    head >> tag;
    if (tag != "RE") continue;
    SizeHW image;
    int seed;
    RandomErasingParams p;
    head >> image.h >> image.w >> seed >> p.scale_lo >> p.scale_hi >> p.ratio_lo >> p.ratio_hi;
    RecordedDraws draws;
    std::optional<CropWindow> want;
    for (++i; i < reference().size(); ++i) {
      std::istringstream line(reference()[i]);
      line >> tag;
      if (tag == "ERASE") {
        want = parse_rect(line);
        break;
      }
      double v;
      line >> v;
      draws.add(tag[0], v);
    }
    const std::optional<CropWindow> got = random_erasing_window(image, p, draws);
    ASSERT_EQ(got.has_value(), want.has_value()) << image.h << "x" << image.w << " seed " << seed;
    if (got) EXPECT_EQ(*got, *want) << image.h << "x" << image.w << " seed " << seed;
    EXPECT_TRUE(draws.all_used()) << image.h << "x" << image.w << " seed " << seed;
    ++cases;
    nones += !want;
    empties += want && (want->height == 0 || want->width == 0);
  }
  EXPECT_EQ(cases, 7 * 4 * 10);
  EXPECT_GT(nones, 20);   // tiny images and large scales: no attempt fits
  EXPECT_GT(empties, 5);  // scale near 0: an empty rectangle
}

// The two-sample Kolmogorov-Smirnov statistic sup |F_a - F_b|.
double ks_statistic(std::vector<double> a, std::vector<double> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  size_t i = 0, j = 0;
  double d = 0;
  while (i < a.size() && j < b.size()) {
    const double x = std::min(a[i], b[j]);
    while (i < a.size() && a[i] == x) ++i;
    while (j < b.size() && b[j] == x) ++j;
    d = std::max(d, std::fabs(static_cast<double>(i) / a.size() - static_cast<double>(j) / b.size()));
  }
  return d;
}

struct Law {
  SizeHW image;
  RandomErasingParams p;
  std::vector<std::optional<CropWindow>> samples;
};

std::vector<Law> torchvision_laws() {
  std::vector<Law> laws;
  for (size_t i = 0; i < reference().size(); ++i) {
    std::istringstream head(reference()[i]);
    std::string tag;
    head >> tag;
    if (tag != "LAW") continue;
    Law law;
    size_t n;
    head >> law.image.h >> law.image.w >> law.p.scale_lo >> law.p.scale_hi >> law.p.ratio_lo >> law.p.ratio_hi >> n;
    for (size_t k = 0; k < n && i + 1 < reference().size(); ++k) {
      std::istringstream line(reference()[++i]);
      law.samples.push_back(parse_rect(line));
    }
    laws.push_back(std::move(law));
  }
  return laws;
}

TEST(RandomErasingWindow, LawMatchesTorchvision) {
  REQUIRE_REFERENCE();
  const std::vector<Law> laws = torchvision_laws();
  ASSERT_EQ(laws.size(), 3u);
  const int kOurs = 50000;
  for (const Law& law : laws) {
    // Ours: one pipeline-like stream per sample position.
    std::vector<std::optional<CropWindow>> ours;
    for (int k = 0; k < kOurs; ++k) {
      RandomStream rng(RandomStream::key_for(5, "erase"), 0, static_cast<uint64_t>(k));
      StreamDraws draws(rng);
      ours.push_back(random_erasing_window(law.image, law.p, draws));
    }
    auto features = [](const std::vector<std::optional<CropWindow>>& s, int f) {
      std::vector<double> v;
      for (const auto& w : s) {
        if (!w) continue;
        const int64_t x[5] = {w->top, w->left, w->height, w->width, w->height * w->width};
        v.push_back(static_cast<double>(x[f]));
      }
      return v;
    };
    auto none_rate = [](const std::vector<std::optional<CropWindow>>& s) {
      return static_cast<double>(std::count(s.begin(), s.end(), std::nullopt)) / static_cast<double>(s.size());
    };
    const double n = static_cast<double>(law.samples.size()), m = kOurs;
    const double p_tv = none_rate(law.samples), p_ours = none_rate(ours);
    const double pooled = (p_tv * n + p_ours * m) / (n + m);
    const double se = std::sqrt(pooled * (1 - pooled) * (1 / n + 1 / m));
    const std::string what = std::to_string(law.image.h) + "x" + std::to_string(law.image.w) + " scale [" +
                             std::to_string(law.p.scale_lo) + ", " + std::to_string(law.p.scale_hi) + "]";
    EXPECT_LE(std::fabs(p_tv - p_ours), 4 * se + 1e-12) << what << ": none " << p_tv << " vs " << p_ours;
    const char* names[5] = {"top", "left", "height", "width", "area"};
    for (int f = 0; f < 5; ++f) {
      const std::vector<double> a = features(law.samples, f), b = features(ours, f);
      const double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
      const double crit = 1.949 * std::sqrt((na + nb) / (na * nb));  // alpha = 0.001
      const double d = ks_statistic(a, b);
      EXPECT_LE(d, crit) << what << " " << names[f];
      std::cout << "[ erasing law ] " << what << " " << names[f] << ": KS " << d << " (critical " << crit
                << "), none " << p_tv << " vs " << p_ours << "\n";
    }
  }
}

using RandomErasingTest = testing::OpTest<2, 4>;

// decode -> resize -> crop_mirror_normalize (CHW float32) -> random_erasing "erase" (args).
OpRun run_erasing(const std::string& root, PipelineSpec::Args args, PipelineOptions o, int epochs,
                  const std::string& layout = "CHW") {
  return run_op(root, [&](PipelineSpec& s, TensorRef images) {
    auto x = s.add("crop_mirror_normalize", {images},
                   {{"mean", {0.485, 0.456, 0.406}}, {"std", {0.229, 0.224, 0.225}}, {"output_layout", layout}}, {}, "cmn");
    auto e = s.add("random_erasing", {x[0]}, args, {}, "erase");
    return std::vector<TensorRef>{e[0], x[0]};
  }, {40, 56}, o, epochs);
}

// The rectangle where `out` differs from `in` (CHW float32): nullopt when nothing differs;
// fails unless every differing element lies in that one rectangle, in every channel.
std::optional<CropWindow> changed_rect(const Tensor& out, const Tensor& in) {
  const float* a = out.typed<float>();
  const float* b = in.typed<float>();
  const int64_t C = in.shape()[0], H = in.shape()[1], W = in.shape()[2];
  int64_t y0 = H, y1 = -1, x0 = W, x1 = -1, changed = 0;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t y = 0; y < H; ++y)
      for (int64_t x = 0; x < W; ++x)
        if (a[(c * H + y) * W + x] != b[(c * H + y) * W + x]) {
          y0 = std::min(y0, y), y1 = std::max(y1, y), x0 = std::min(x0, x), x1 = std::max(x1, x), ++changed;
        }
  if (!changed) return std::nullopt;
  const CropWindow w{y0, x0, y1 - y0 + 1, x1 - x0 + 1};
  EXPECT_EQ(changed, C * w.height * w.width) << "the changed elements are not one rectangle in every channel";
  return w;
}

TEST_F(RandomErasingTest, RectangleHoldsTheValuesAndEqualsTheReplayedDraws) {
  const std::vector<double> values = {1e4, -2e4, 3e4};  // no normalised pixel is near these
  const OpRun run = run_erasing(root(), {{"probability", 0.7}, {"scale", {0.05, 0.4}}, {"value", ArgValue(values)}},
                                {.batch_size = 3, .num_threads = 2, .seed = 7}, 6);
  ASSERT_TRUE(run.dense_first);
  int erased = 0, skipped = 0, nones = 0;
  for (size_t k = 0; k < run.images().size(); ++k) {
    const Tensor& out = run.outputs[0][k];
    const Tensor& in = run.outputs[1][k];
    ASSERT_EQ(out.shape(), (Shape{3, 40, 56}));
    EXPECT_EQ(out.layout(), Layout::kCHW);
    // Replay: the apply draw, then get_params' draws, from the node's stream.
    RandomStream rng(RandomStream::key_for(7, "erase"), run.epochs[k], run.positions[k]);
    const bool apply = static_cast<double>(rng.uniform()) < 0.7;
    StreamDraws draws(rng);
    const std::optional<CropWindow> want = apply ? random_erasing_window({40, 56}, {0.05, 0.4, 0.3, 3.3}, draws) : std::nullopt;
    const std::optional<CropWindow> got = changed_rect(out, in);
    ASSERT_EQ(got.has_value(), want && want->height > 0 && want->width > 0) << k;
    skipped += !apply;
    nones += apply && !want;
    if (!got) continue;
    ++erased;
    EXPECT_EQ(*got, *want) << k;
    for (int64_t c = 0; c < 3; ++c)
      EXPECT_EQ(out.typed<float>()[(c * 40 + got->top) * 56 + got->left], static_cast<float>(values[c]));
  }
  EXPECT_GT(erased, 15);
  EXPECT_GT(skipped, 3);  // p = 0.7 over 48 samples
  std::cout << "[ random_erasing ] erased " << erased << ", skipped " << skipped << ", no fit " << nones << "\n";
}

TEST_F(RandomErasingTest, RandomValuesAreStandardNormalAndThreadCountIndependent) {
  auto run_with = [&](int threads) {
    return run_erasing(root(), {{"probability", 1.0}, {"scale", {0.3, 0.33}}, {"random_values", true}},
                       {.batch_size = 4, .num_threads = threads, .seed = 9}, 3);
  };
  const OpRun one = run_with(1), two = run_with(2);
  double sum = 0, sum2 = 0;
  int64_t n = 0;
  for (size_t k = 0; k < one.images().size(); ++k) {
    EXPECT_TRUE(same_tensor(one.outputs[0][k], two.outputs[0][k])) << k;
    const std::optional<CropWindow> r = changed_rect(one.outputs[0][k], one.outputs[1][k]);
    if (!r) continue;
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t y = r->top; y < r->top + r->height; ++y)
        for (int64_t x = r->left; x < r->left + r->width; ++x) {
          const double v = one.outputs[0][k].typed<float>()[(c * 40 + y) * 56 + x];
          sum += v, sum2 += v * v, ++n;
        }
  }
  ASSERT_GT(n, 10000);
  const double mean = sum / n, var = sum2 / n - mean * mean;
  EXPECT_NEAR(mean, 0.0, 5 / std::sqrt(static_cast<double>(n)));
  EXPECT_NEAR(var, 1.0, 0.05);
  std::cout << "[ random_erasing ] random values: n " << n << ", mean " << mean << ", variance " << var << "\n";
}

TEST_F(RandomErasingTest, HwcLayoutAndOneValueForAllChannels) {
  const OpRun run = run_erasing(root(), {{"probability", 1.0}, {"scale", {0.2, 0.3}}, {"value", {-5.0}}},
                                {.batch_size = 4, .num_threads = 2, .seed = 3}, 1, "HWC");
  int erased = 0;
  for (size_t k = 0; k < run.images().size(); ++k) {
    const Tensor& out = run.outputs[0][k];
    ASSERT_EQ(out.shape(), (Shape{40, 56, 3}));
    int64_t fives = 0;
    for (int64_t e = 0; e < out.num_elements(); ++e) fives += out.typed<float>()[e] == -5.0f;
    RandomStream rng(RandomStream::key_for(3, "erase"), run.epochs[k], run.positions[k]);
    StreamDraws draws(rng);
    const auto want = random_erasing_window({40, 56}, {0.2, 0.3, 0.3, 3.3}, draws);
    EXPECT_EQ(fives, want ? 3 * want->height * want->width : 0) << k;
    erased += fives > 0;
  }
  EXPECT_GT(erased, 4);
}

// timm's RandomErasing: a count drawn in [1, 3] per erased image, then that many rectangles, each
// with the area fraction divided by the count; the erased elements are exactly their union.
TEST_F(RandomErasingTest, CountRangeErasesTheReplayedRectangles) {
  const OpRun run = run_erasing(root(), {{"probability", 0.8}, {"scale", {0.1, 0.4}}, {"value", {1e4}}, {"count", {1, 3}}},
                                {.batch_size = 4, .num_threads = 2, .seed = 5}, 4);
  int counts[4] = {0, 0, 0, 0};
  for (size_t k = 0; k < run.images().size(); ++k) {
    RandomStream rng(RandomStream::key_for(5, "erase"), run.epochs[k], run.positions[k]);
    std::vector<uint8_t> want(40 * 56, 0);
    if (static_cast<double>(rng.uniform()) < 0.8) {
      const int64_t count = 1 + static_cast<int64_t>(rng.below(3));
      ++counts[count];
      for (int64_t r = 0; r < count; ++r) {
        StreamDraws draws(rng);
        const auto w = random_erasing_window({40, 56}, {0.1 / count, 0.4 / count, 0.3, 3.3}, draws);
        if (!w) continue;
        for (int64_t y = w->top; y < w->top + w->height; ++y)
          for (int64_t x = w->left; x < w->left + w->width; ++x) want[y * 56 + x] = 1;
      }
    } else {
      ++counts[0];
    }
    const float* out = run.outputs[0][k].typed<float>();
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t e = 0; e < 40 * 56; ++e) ASSERT_EQ(out[c * 40 * 56 + e] == 1e4f, want[e] == 1) << k << " " << c << " " << e;
  }
  EXPECT_GT(counts[0], 0);
  EXPECT_GT(counts[1], 0);
  EXPECT_GT(counts[2], 0);
  EXPECT_GT(counts[3], 0);
}

// timm's mode 'rand': one standard normal value per channel for the whole rectangle.
TEST_F(RandomErasingTest, RandomColorIsOneNormalValuePerChannel) {
  const OpRun run = run_erasing(root(), {{"probability", 1.0}, {"scale", {0.2, 0.3}}, {"random_color", true}},
                                {.batch_size = 4, .num_threads = 2, .seed = 4}, 6);
  std::vector<double> colours;
  for (size_t k = 0; k < run.images().size(); ++k) {
    const std::optional<CropWindow> r = changed_rect(run.outputs[0][k], run.outputs[1][k]);
    if (!r) continue;
    const float* out = run.outputs[0][k].typed<float>();
    for (int64_t c = 0; c < 3; ++c) {
      const float v = out[(c * 40 + r->top) * 56 + r->left];
      for (int64_t y = r->top; y < r->top + r->height; ++y)
        for (int64_t x = r->left; x < r->left + r->width; ++x) ASSERT_EQ(out[(c * 40 + y) * 56 + x], v) << k;
      colours.push_back(v);
    }
  }
  ASSERT_GT(colours.size(), 100u);
  double sum = 0, sum2 = 0;
  for (double v : colours) sum += v, sum2 += v * v;
  const double n = static_cast<double>(colours.size()), mean = sum / n, var = sum2 / n - mean * mean;
  EXPECT_NEAR(mean, 0.0, 5 / std::sqrt(n));
  EXPECT_NEAR(var, 1.0, 5 * std::sqrt(2.0 / n));
}

TEST_F(RandomErasingTest, BadArgumentsNameTheArgument) {
  auto error = [&](PipelineSpec::Args args) {
    try {
      run_erasing(root(), args, {.batch_size = 2, .num_threads = 1, .seed = 1}, 1);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  auto has = [](const std::string& msg, const std::string& part) {
    return msg.find(part) != std::string::npos ? ::testing::AssertionSuccess() : ::testing::AssertionFailure() << msg;
  };
  EXPECT_TRUE(has(error({{"scale", {0.5, 0.1}}}), "argument \"scale\" must be [low, high]"));
  EXPECT_TRUE(has(error({{"scale", {0.5, 1.5}}}), "argument \"scale\""));
  EXPECT_TRUE(has(error({{"ratio", {0.0, 2.0}}}), "argument \"ratio\" must be [low, high] with 0 < low"));
  EXPECT_TRUE(has(error({{"value", {1.0, 2.0}}}), "argument \"value\" has 2 values for 3 channels"));
  EXPECT_TRUE(has(error({{"probability", 1.5}}), "argument \"probability\""));
  EXPECT_TRUE(has(error({{"count", {2, 1}}}), "argument \"count\" must be [low, high] with 0 <= low <= high"));
  EXPECT_TRUE(has(error({{"random_values", true}, {"random_color", true}}), "exclude each other"));
  EXPECT_TRUE(has(testing::config_error(root(), "random_erasing", {}), "input must be CHW or HWC float32 images"));
}

}  // namespace
}  // namespace hdl
