#include "pipeline/operators/decode_share.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

namespace hdl {
namespace {

double fraction_to_cpu(const DecodeShare& s, uint64_t first, int n) {
  int cpu = 0;
  for (int i = 0; i < n; ++i) cpu += s.to_cpu(first + uint64_t(i));
  return double(cpu) / n;
}

TEST(DecodeShare, FixedShareRoutesTheSameSamplesEveryRun) {
  const DecodeShare a({.fixed_cpu_share = 0.35}), b({.fixed_cpu_share = 0.35});
  for (uint64_t k = 0; k < 10000; ++k) ASSERT_EQ(a.to_cpu(k), b.to_cpu(k)) << k;
  // Consecutive keys (positions of an epoch) spread like independent draws: 100,000 keys,
  // standard deviation 0.0015.
  EXPECT_NEAR(fraction_to_cpu(a, 0, 100000), 0.35, 0.006);
  EXPECT_NEAR(fraction_to_cpu(a, uint64_t(1) << 40, 100000), 0.35, 0.006);
  // Measurements change nothing.
  DecodeShare fixed({.fixed_cpu_share = 0.35, .cpu_threads = 8});
  for (int i = 0; i < 50; ++i) {
    fixed.record_cpu(10, 0.5);
    fixed.end_batch(100, 0.001);
  }
  EXPECT_EQ(fixed.cpu_share(), 0.35);
  EXPECT_EQ(fraction_to_cpu(DecodeShare({.fixed_cpu_share = 0}), 0, 5000), 0.0);
  EXPECT_EQ(fraction_to_cpu(DecodeShare({.fixed_cpu_share = 1}), 0, 5000), 1.0);
}

// Simulated engines: the hardware takes `hw` seconds per image, a CPU thread `cpu`; each batch
// of `n` is split by the share. Returns the share after `batches` batches.
double simulate(DecodeShare& s, int batches, double hw, double cpu, int n = 256) {
  for (int b = 0; b < batches; ++b) {
    const int64_t to_cpu = std::lround(s.cpu_share() * n);
    for (int64_t i = 0; i < to_cpu; ++i) s.record_cpu(1, cpu);
    s.end_batch(n - to_cpu, double(n - to_cpu) * hw);
  }
  return s.cpu_share();
}

TEST(DecodeShare, AdaptiveShareMakesBothEnginesFinishTogether) {
  // 16 threads at 2 ms per image (8,000 images/s) beside hardware at 11,000 images/s: the
  // CPU's part is 8 / 19 of each batch, and both parts take the same time.
  DecodeShare s({.cpu_threads = 16});
  const double hw = 1.0 / 11000, cpu = 0.002;
  const double share = simulate(s, 40, hw, cpu);
  EXPECT_NEAR(share, 8000.0 / 19000, 0.002);
  const double n = 256, cpu_wall = share * n * cpu / 16, hw_wall = (1 - share) * n * hw;
  EXPECT_NEAR(cpu_wall / hw_wall, 1.0, 0.01);
  const DecodeShare::Stats st = s.stats();
  EXPECT_NEAR(st.cpu_seconds_per_image, cpu, 1e-12);
  EXPECT_NEAR(st.hardware_seconds_per_image, hw, 1e-12);
  EXPECT_EQ(st.batches, 40u);

  // Two threads beside the same hardware: the CPU takes little, but never nothing (its cost
  // stays measured), and follows when the hardware slows down (another process shares it).
  DecodeShare few({.cpu_threads = 2});
  EXPECT_NEAR(simulate(few, 40, hw, cpu), 1000.0 / 12000, 0.002);
  EXPECT_NEAR(simulate(few, 60, 1.0 / 1000, cpu), 0.5, 0.002);
  DecodeShare floor({.min_cpu_share = 0.02, .cpu_threads = 1});
  EXPECT_EQ(simulate(floor, 60, 1.0 / 100000, 0.01), 0.02);
}

TEST(DecodeShare, OneSlowBatchMovesTheShareAtMostOneStep) {
  DecodeShare s({.max_step = 0.05, .cpu_threads = 8});
  const double settled = simulate(s, 60, 1.0 / 8000, 0.002);  // 4,000 vs 8,000 images/s: 1/3
  EXPECT_NEAR(settled, 1.0 / 3, 0.002);
  // A batch whose CPU part hit cold files (50x slower).
  for (int i = 0; i < 85; ++i) s.record_cpu(1, 0.1);
  s.end_batch(171, 171.0 / 8000);
  EXPECT_GE(s.cpu_share(), settled - 0.05 - 1e-12);
  EXPECT_LT(s.cpu_share(), settled);
  EXPECT_NEAR(simulate(s, 60, 1.0 / 8000, 0.002), 1.0 / 3, 0.002);  // and back
}

TEST(DecodeShare, UnmeasuredEnginesKeepTheInitialShare) {
  DecodeShare s({.initial_cpu_share = 0.4, .cpu_threads = 4});
  s.end_batch(100, 0.01);  // no CPU measurement yet
  EXPECT_EQ(s.cpu_share(), 0.4);
  s.record_cpu(0, 1.0);  // nothing decoded: ignored
  s.end_batch(0, 0);     // nothing on the hardware: ignored
  EXPECT_EQ(s.cpu_share(), 0.4);
  EXPECT_EQ(s.stats().cpu_seconds_per_image, 0);
}

TEST(DecodeShare, BadOptionsAreRefused) {
  EXPECT_THROW(DecodeShare({.fixed_cpu_share = 1.5}), std::invalid_argument);
  EXPECT_THROW(DecodeShare({.min_cpu_share = 0.5, .max_cpu_share = 0.4}), std::invalid_argument);
  EXPECT_THROW(DecodeShare({.max_step = 0}), std::invalid_argument);
  EXPECT_THROW(DecodeShare({.smoothing = 2}), std::invalid_argument);
  EXPECT_THROW(DecodeShare({.cpu_threads = 0}), std::invalid_argument);
}

}  // namespace
}  // namespace hdl
