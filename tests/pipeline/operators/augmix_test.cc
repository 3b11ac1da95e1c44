// AugMix: its tensor-path ops against torchvision 0.14's _apply_op on uint8 tensors of real
// photos (make_augment_references.py; bounds below), its sampling laws over many draws, and the
// augmix operator in pipelines (every sample equals its replayed draws; argument errors).
//
// Bound: bit-exact, except Contrast (max 1: color.h's adjust_contrast, torchvision's float32
// mean).
#include "pipeline/operators/augmix_policy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <map>
#include <sstream>

#include "tests/pipeline/kernels/reference_data.h"
#include "tests/pipeline/operators/op_test_util.h"

namespace hdl {
namespace {

using testing::DiffStats;
using testing::RefEntry;

const testing::References& refs() { return testing::references_from("make_augment_references.py", "augment_references"); }

std::vector<double> numbers(const std::string& text) {
  std::vector<double> out;
  std::stringstream ss(text);
  for (std::string tok; std::getline(ss, tok, ',');) out.push_back(std::stod(tok));
  return out;
}

AugmentOp op_named(const std::string& name) {
  for (int k = 0; k <= static_cast<int>(AugmentOp::kInvert); ++k) {
    if (name == augment_op_name(static_cast<AugmentOp>(k))) return static_cast<AugmentOp>(k);
  }
  ADD_FAILURE() << "unknown op " << name;
  return AugmentOp::kIdentity;
}

bool geometric(AugmentOp op) {
  return op == AugmentOp::kShearX || op == AugmentOp::kShearY || op == AugmentOp::kTranslateX ||
         op == AugmentOp::kTranslateY || op == AugmentOp::kRotate;
}

TEST(AugMixTest, TensorOpsMatchTorchvision) {
  if (!refs().error.empty()) GTEST_SKIP() << "augment references unavailable: " << refs().error;
  const auto cases = refs().cases("tensor_apply");
  ASSERT_GT(cases.size(), 150u);
  struct Worst {
    int n = 0;
    double max_abs = 0, mean_abs = 0, frac = 0;
  };
  std::map<std::string, Worst> per_op;
  for (const RefEntry* c : cases) {
    const std::vector<double> fill = c->get("fill") == "none" ? std::vector<double>{} : numbers(c->get("fill"));
    const AugmentStep step{op_named(c->get("name")), c->f("magnitude")};
    const auto filter = c->has("interp", "nearest") ? kernels::WarpFilter::kNearest : kernels::WarpFilter::kBilinear;
    Tensor out = Tensor::empty(c->shape(), DType::kU8, Layout::kHWC);
    const Status st = apply_augment_tensor(step, refs().source(c->get("src")), out.view(), filter, fill);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    const DiffStats d = testing::diff(out.view(), c->view());
    const double frac = static_cast<double>(d.mismatches) / static_cast<double>(d.count);
    EXPECT_LE(d.max_abs, step.op == AugmentOp::kContrast ? 1 : 0) << describe(*c) << ": " << d;
    Worst& w = per_op[c->get("name") + (geometric(step.op) ? "/" + c->get("interp") : "")];
    ++w.n;
    w.max_abs = std::max(w.max_abs, d.max_abs);
    w.mean_abs = std::max(w.mean_abs, d.mean_abs);
    w.frac = std::max(w.frac, frac);
  }
  for (const auto& [name, w] : per_op) {
    std::cout << "[ augmix ] " << name << ": " << w.n << " cases, worst max_abs " << w.max_abs << " mean_abs "
              << w.mean_abs << " differing " << w.frac * 100 << "%\n";
  }
}

TEST(AugMixTest, DrawsFollowTorchvisionsLaws) {
  const AugMixParams p{.severity = 4, .mixture_width = 3, .chain_depth = -1, .alpha = 1.0, .all_ops = false};
  const int64_t n = 20000;
  std::map<AugmentOp, int64_t> ops;
  std::map<size_t, int64_t> depths;
  double m0 = 0, total = 0;
  int64_t steps = 0, over_severity = 0;
  for (int64_t i = 0; i < n; ++i) {
    RandomStream rng(91, 0, static_cast<uint64_t>(i));
    const AugMixDraw d = draw_augmix(p, 120, 90, rng);
    ASSERT_EQ(d.chains.size(), 3u);
    double sum = d.original_weight;
    for (float w : d.chain_weights) sum += w;
    EXPECT_NEAR(sum, 1.0, 1e-5);
    m0 += d.original_weight;
    for (const auto& chain : d.chains) {
      ++depths[chain.size()];
      for (const auto& s : chain) {
        ++ops[s.op], ++steps;
        // Bins below severity: |magnitude| is one of the first 4 entries of its table.
        bool found = !augment_has_magnitudes(s.op);
        for (int b = 0; b < 4 && !found; ++b) found = std::fabs(s.magnitude) == augment_magnitude(AugmentPolicy::kAugMix, s.op, b, 10, 120, 90);
        over_severity += !found;
      }
    }
    total += 1;
  }
  // Beta(1, 1): mean 1/2, sd 1/sqrt(12) per draw.
  EXPECT_NEAR(m0 / total, 0.5, 5 * std::sqrt(1.0 / 12 / n));
  EXPECT_EQ(over_severity, 0);
  ASSERT_EQ(depths.size(), 3u);  // 1, 2, 3
  for (const auto& [depth, count] : depths) EXPECT_NEAR(count, 3 * n / 3.0, 5 * std::sqrt(3 * n * (1 / 3.0) * (2 / 3.0)));
  ASSERT_EQ(ops.size(), 9u);  // all_ops=false: no Brightness, Color, Contrast, Sharpness
  for (const auto& [op, count] : ops) EXPECT_NEAR(count, steps / 9.0, 5 * std::sqrt(steps / 9.0)) << augment_op_name(op);
}

using AugMixOpTest = testing::OpTest<2, 4>;

TEST_F(AugMixOpTest, EverySampleEqualsItsReplayedDraws) {
  const testing::OpRun run = testing::run_op(root(), [](PipelineSpec& s, TensorRef images) {
    return std::vector<TensorRef>{s.add("augmix", {images}, {{"severity", 5}, {"chain_depth", 2}, {"fill", {9.0}}}, {}, "mix")[0]};
  }, {70, 60});
  const AugMixParams p{.severity = 5, .chain_depth = 2};
  const std::vector<double> fill = {9.0};
  for (size_t k = 0; k < run.images().size(); ++k) {
    const Tensor& in = run.images()[k];
    RandomStream rng(RandomStream::key_for(11, "mix"), run.epochs[k], run.positions[k]);
    const AugMixDraw d = draw_augmix(p, in.shape()[0], in.shape()[1], rng);
    std::vector<float> mix(static_cast<size_t>(in.view().num_elements()));
    augmix_accumulate(in.view(), d.original_weight, mix, true);
    for (size_t i = 0; i < d.chains.size(); ++i) {
      Tensor cur = Tensor::empty(in.shape(), DType::kU8, Layout::kHWC);
      copy(in.view(), cur.view());
      for (const auto& step : d.chains[i]) {
        Tensor next = Tensor::empty(in.shape(), DType::kU8, Layout::kHWC);
        ASSERT_TRUE(apply_augment_tensor(step, cur.view(), next.view(), kernels::WarpFilter::kBilinear, fill).is_ok());
        cur = next;
      }
      augmix_accumulate(cur.view(), d.chain_weights[i], mix, false);
    }
    Tensor want = Tensor::empty(in.shape(), DType::kU8, Layout::kHWC);
    augmix_store(mix, want.view());
    EXPECT_TRUE(testing::same_tensor(run.outputs[0][k], want)) << k;
    EXPECT_FALSE(testing::same_tensor(run.outputs[0][k], in)) << k;
  }
}

TEST_F(AugMixOpTest, ArgumentErrorsNameTheArgument) {
  EXPECT_NE(testing::config_error(root(), "augmix", {{"severity", 11}}).find("severity"), std::string::npos);
  EXPECT_NE(testing::config_error(root(), "augmix", {{"interpolation", "bicubic"}}).find("interpolation"), std::string::npos);
  EXPECT_NE(testing::config_error(root(), "augmix", {{"alpha", 0.0}}).find("alpha"), std::string::npos);
  EXPECT_NE(testing::config_error(root(), "augmix", {{"fill", {1.0, 2.0}}}).find("fill"), std::string::npos);
}

}  // namespace
}  // namespace hdl
