// The auto-augment policies against torchvision 0.14 (make_augment_references.py): every
// _apply_op on PIL images (real photos, 1 and 3 channels, nearest and bilinear, fills) pixel for
// pixel, the magnitude tables entry for entry; and the sampling laws of draw_augment over many
// draws (op, bin and sign frequencies, AutoAugment's sub-policy probabilities) within 5 standard
// deviations, deterministic per stream.
#include "pipeline/operators/auto_augment_policy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <map>
#include <sstream>

#include "tests/pipeline/kernels/reference_data.h"

namespace hdl {
namespace {

using testing::DiffStats;
using testing::RefEntry;
using testing::References;

const References& refs() { return testing::references_from("make_augment_references.py", "augment_references"); }

#define REQUIRE_AUGMENT_REFERENCES()                                                  \
  do {                                                                                \
    if (!refs().error.empty()) GTEST_SKIP() << "augment references unavailable: " << refs().error; \
  } while (0)

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

TEST(AutoAugmentPolicyTest, ApplyOpEqualsTorchvisionOnPilImages) {
  REQUIRE_AUGMENT_REFERENCES();
  const auto cases = refs().cases("apply");
  ASSERT_GT(cases.size(), 300u);
  std::map<std::string, std::pair<int, double>> per_op;  // name -> (cases, worst max_abs)
  for (const RefEntry* c : cases) {
    std::vector<uint8_t> fill;
    if (c->get("fill") != "none") {
      for (double v : numbers(c->get("fill"))) fill.push_back(static_cast<uint8_t>(v));
    }
    const AugmentStep step{op_named(c->get("name")), c->f("magnitude")};
    const auto filter = c->has("interp", "bilinear")  ? kernels::WarpFilter::kBilinear
                        : c->has("interp", "bicubic") ? kernels::WarpFilter::kBicubic
                                                      : kernels::WarpFilter::kNearest;
    Tensor out = Tensor::empty(c->shape(), DType::kU8, Layout::kHWC);
    const Status st = apply_augment(step, refs().source(c->get("src")), out.view(), filter, fill);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    const DiffStats d = testing::diff(out.view(), c->view());
    EXPECT_EQ(d.max_abs, 0) << describe(*c) << ": " << d;
    auto& [n, worst] = per_op[c->get("name")];
    ++n;
    worst = std::max(worst, d.max_abs);
  }
  for (const auto& [name, s] : per_op) std::cout << "[ auto_augment ] " << name << ": " << s.first << " cases, worst max_abs " << s.second << "\n";
}

TEST(AutoAugmentPolicyTest, MagnitudeTablesEqualTorchvision) {
  REQUIRE_AUGMENT_REFERENCES();
  int tables = 0;
  for (const RefEntry& e : refs().entries) {
    if (e.kind != "table") continue;
    ++tables;
    const AugmentPolicy policy = e.has("policy", "augmix") ? AugmentPolicy::kAugMix : parse_augment_policy(e.get("policy"));
    const AugmentOp op = op_named(e.get("op"));
    const std::vector<double> values = numbers(e.get("values"));
    const int64_t bins = e.i("bins");
    ASSERT_EQ(static_cast<int64_t>(values.size()), bins);
    EXPECT_TRUE(augment_has_magnitudes(op));
    EXPECT_EQ(augment_signed(op), e.i("signed") == 1) << e.get("op");
    for (int64_t k = 0; k < bins; ++k) {
      EXPECT_EQ(augment_magnitude(policy, op, k, bins, e.i("h"), e.i("w")), values[k])
          << e.get("policy") << " " << e.get("op") << " bins=" << bins << " h=" << e.get("h") << " w=" << e.get("w") << " bin " << k;
    }
  }
  EXPECT_GT(tables, 100);
}

// |count - expected| within 5 standard deviations of a binomial count.
void expect_count(int64_t count, int64_t n, double p, const std::string& what) {
  const double mean = n * p, sd = std::sqrt(n * p * (1 - p));
  EXPECT_LE(std::fabs(count - mean), 5 * sd + 1e-9) << what << ": " << count << " vs " << mean;
}

TEST(AutoAugmentPolicyTest, TrivialAugmentWideDrawsOpBinAndSignUniformly) {
  const AugmentParams p{.policy = AugmentPolicy::kTrivialAugmentWide};
  const int64_t n = 60000;
  std::map<AugmentOp, int64_t> ops;
  std::map<double, int64_t> rotate_abs;
  int64_t signed_total = 0, negative = 0;
  for (int64_t i = 0; i < n; ++i) {
    RandomStream rng(77, 0, static_cast<uint64_t>(i));
    const auto steps = draw_augment(p, 200, 300, rng);
    ASSERT_EQ(steps.size(), 1u);
    ++ops[steps[0].op];
    if (steps[0].op == AugmentOp::kRotate) ++rotate_abs[std::fabs(steps[0].magnitude)];
    if (augment_signed(steps[0].op) && steps[0].magnitude != 0) ++signed_total, negative += steps[0].magnitude < 0;
  }
  ASSERT_EQ(ops.size(), 14u);  // never Invert
  for (const auto& [op, count] : ops) expect_count(count, n, 1.0 / 14, augment_op_name(op));
  ASSERT_EQ(rotate_abs.size(), 31u);  // 0, 4.5, ..., 135
  for (const auto& [m, count] : rotate_abs) expect_count(count, ops[AugmentOp::kRotate], 1.0 / 31, "rotate bin");
  expect_count(negative, signed_total, 0.5, "negative sign");
}

TEST(AutoAugmentPolicyTest, RandAugmentDrawsNumOpsAtTheFixedBin) {
  const AugmentParams p{.policy = AugmentPolicy::kRandAugment, .num_ops = 3, .magnitude = 5, .num_magnitude_bins = 11};
  const int64_t n = 30000;
  std::map<AugmentOp, int64_t> ops;
  int64_t negative = 0, signed_total = 0;
  for (int64_t i = 0; i < n; ++i) {
    RandomStream rng(78, 1, static_cast<uint64_t>(i));
    const auto steps = draw_augment(p, 224, 250, rng);
    ASSERT_EQ(steps.size(), 3u);
    for (const auto& s : steps) {
      ++ops[s.op];
      const double want = augment_magnitude(p.policy, s.op, 5, 11, 224, 250);
      EXPECT_EQ(std::fabs(s.magnitude), want) << augment_op_name(s.op);
      if (augment_signed(s.op)) ++signed_total, negative += s.magnitude < 0;
    }
  }
  ASSERT_EQ(ops.size(), 14u);
  for (const auto& [op, count] : ops) expect_count(count, 3 * n, 1.0 / 14, augment_op_name(op));
  expect_count(negative, signed_total, 0.5, "negative sign");
}

TEST(AutoAugmentPolicyTest, AutoAugmentAppliesSubPolicyOpsWithTheirProbabilities) {
  for (AugmentPolicy policy : {AugmentPolicy::kAutoAugmentImageNet, AugmentPolicy::kAutoAugmentCifar10,
                               AugmentPolicy::kAutoAugmentSvhn}) {
    const auto subs = auto_augment_sub_policies(policy);
    ASSERT_EQ(subs.size(), 25u);
    // Expected applications per op, and of samples left unchanged, under the law.
    std::map<AugmentOp, double> want;
    double p_none = 0;
    for (const auto& sub : subs) {
      for (const auto& o : sub) want[o.op] += o.probability / 25;
      p_none += (1 - sub[0].probability) * (1 - sub[1].probability) / 25;
    }
    const int64_t n = 40000;
    std::map<AugmentOp, int64_t> got;
    int64_t none = 0;
    for (int64_t i = 0; i < n; ++i) {
      RandomStream rng(79, 0, static_cast<uint64_t>(i));
      const auto steps = draw_augment({.policy = policy}, 32, 32, rng);
      none += steps.empty();
      for (const auto& s : steps) ++got[s.op];
    }
    for (const auto& [op, rate] : want) {
      // A count of Bernoulli(<= 1) trials per sample, at most 2 per sample: sd <= sqrt(2 n rate).
      EXPECT_LE(std::fabs(got[op] - n * rate), 5 * std::sqrt(2 * n * rate) + 1) << augment_op_name(op);
    }
    expect_count(none, n, p_none, "no op applied");
  }
}

TEST(AutoAugmentPolicyTest, DrawsAreAFunctionOfTheStream) {
  for (AugmentPolicy policy : {AugmentPolicy::kTrivialAugmentWide, AugmentPolicy::kRandAugment, AugmentPolicy::kAutoAugmentSvhn}) {
    int differ = 0;
    for (uint64_t pos = 0; pos < 50; ++pos) {
      RandomStream a(5, 2, pos), b(5, 2, pos), c(5, 3, pos);
      const auto da = draw_augment({.policy = policy}, 64, 64, a), db = draw_augment({.policy = policy}, 64, 64, b),
                 dc = draw_augment({.policy = policy}, 64, 64, c);
      ASSERT_EQ(da.size(), db.size());
      for (size_t k = 0; k < da.size(); ++k) EXPECT_TRUE(da[k].op == db[k].op && da[k].magnitude == db[k].magnitude);
      bool same = da.size() == dc.size();
      for (size_t k = 0; same && k < da.size(); ++k) same = da[k].op == dc[k].op && da[k].magnitude == dc[k].magnitude;
      differ += !same;
    }
    EXPECT_GT(differ, 25);  // another epoch draws other ops
  }
}

}  // namespace
}  // namespace hdl
