// auto_augment inside pipelines on real photos: every sample equals replaying its random stream
// through draw_augment and apply_augment (both tested against torchvision in
// auto_augment_policy_test.cc), for each policy, each interpolation and a fill; identical across
// thread counts; argument errors name the argument.
#include <gtest/gtest.h>

#include <vector>

#include "pipeline/operators/auto_augment_policy.h"
#include "tests/pipeline/operators/op_test_util.h"

namespace hdl {
namespace {

using testing::config_error;
using testing::OpRun;
using testing::run_op;
using testing::same_tensor;

using AutoAugmentOpTest = testing::OpTest<2, 6>;

OpRun run_auto_augment(const std::string& root, PipelineSpec::Args args, PipelineOptions options = {.batch_size = 4, .num_threads = 2, .seed = 11}) {
  return run_op(root, [&](PipelineSpec& s, TensorRef images) {
    return std::vector<TensorRef>{s.add("auto_augment", {images}, args, {}, "aa")[0]};
  }, {90, 70}, options, 2);
}

// The output of sample k, recomputed from its stream.
Tensor replay(const OpRun& run, size_t k, const AugmentParams& params, kernels::WarpFilter filter,
              const std::vector<uint8_t>& fill) {
  const Tensor& in = run.images()[k];
  RandomStream rng(RandomStream::key_for(11, "aa"), run.epochs[k], run.positions[k]);
  const auto steps = draw_augment(params, in.shape()[0], in.shape()[1], rng);
  Tensor cur = Tensor::empty(in.shape(), DType::kU8, Layout::kHWC);
  copy(in.view(), cur.view());
  for (const auto& step : steps) {
    Tensor next = Tensor::empty(in.shape(), DType::kU8, Layout::kHWC);
    EXPECT_TRUE(apply_augment(step, cur.view(), next.view(), filter, fill).is_ok());
    cur = next;
  }
  return cur;
}

TEST_F(AutoAugmentOpTest, EverySampleEqualsItsReplayedDraws) {
  struct Case {
    const char* policy;
    AugmentPolicy parsed;
    const char* interp;
    std::vector<double> fill;
  };
  for (const Case& c : {Case{"trivial_augment_wide", AugmentPolicy::kTrivialAugmentWide, "nearest", {}},
                        Case{"rand_augment", AugmentPolicy::kRandAugment, "bilinear", {30, 60, 90}},
                        Case{"auto_augment_imagenet", AugmentPolicy::kAutoAugmentImageNet, "nearest", {128}},
                        Case{"auto_augment_cifar10", AugmentPolicy::kAutoAugmentCifar10, "bicubic", {}},
                        Case{"auto_augment_svhn", AugmentPolicy::kAutoAugmentSvhn, "nearest", {}}}) {
    const OpRun run = run_auto_augment(root(), {{"policy", c.policy}, {"interpolation", c.interp}, {"fill", ArgValue(c.fill)},
                                                {"num_ops", 3}, {"magnitude", 20}});
    ASSERT_TRUE(run.dense_first);
    const AugmentParams params{.policy = c.parsed, .num_ops = 3, .magnitude = 20, .num_magnitude_bins = 31};
    const std::string interp = c.interp;
    const auto filter = interp == "bilinear"  ? kernels::WarpFilter::kBilinear
                        : interp == "bicubic" ? kernels::WarpFilter::kBicubic
                                              : kernels::WarpFilter::kNearest;
    const std::vector<uint8_t> fill(c.fill.begin(), c.fill.end());
    int changed = 0;
    for (size_t k = 0; k < run.images().size(); ++k) {
      EXPECT_TRUE(same_tensor(run.outputs[0][k], replay(run, k, params, filter, fill))) << c.policy << " sample " << k;
      changed += !same_tensor(run.outputs[0][k], run.images()[k]);
    }
    EXPECT_GT(changed, 0) << c.policy;
  }
}

TEST_F(AutoAugmentOpTest, SameOutputWithOneOrTwoThreads) {
  const PipelineSpec::Args args = {{"policy", "rand_augment"}};
  const OpRun a = run_auto_augment(root(), args, {.batch_size = 3, .num_threads = 1, .seed = 11});
  const OpRun b = run_auto_augment(root(), args, {.batch_size = 3, .num_threads = 2, .seed = 11});
  ASSERT_EQ(a.outputs[0].size(), b.outputs[0].size());
  for (size_t k = 0; k < a.outputs[0].size(); ++k) EXPECT_TRUE(same_tensor(a.outputs[0][k], b.outputs[0][k])) << k;
}

TEST_F(AutoAugmentOpTest, ArgumentErrorsNameTheArgument) {
  EXPECT_NE(config_error(root(), "auto_augment", {{"policy", "augmix_v9"}}).find("policy"), std::string::npos);
  EXPECT_NE(config_error(root(), "auto_augment", {{"policy", "rand_augment"}, {"magnitude", 31}}).find("magnitude"),
            std::string::npos);
  EXPECT_NE(config_error(root(), "auto_augment", {{"fill", {1.0, 2.0}}}).find("fill"), std::string::npos);
  EXPECT_NE(config_error(root(), "auto_augment", {{"fill", {300.0}}}).find("fill"), std::string::npos);
  EXPECT_NE(config_error(root(), "auto_augment", {{"interpolation", "lanczos"}}).find("interpolation"), std::string::npos);
  EXPECT_EQ(config_error(root(), "auto_augment", {{"policy", "trivial_augment_wide"}, {"magnitude", 31}}), "");
}

}  // namespace
}  // namespace hdl
