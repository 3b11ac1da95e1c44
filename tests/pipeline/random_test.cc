#include "pipeline/random.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

namespace hdl {
namespace {

// Known-answer vectors of the Random123 reference implementation (kat_vectors, philox4x32_10).
TEST(Philox, KnownAnswers) {
  EXPECT_EQ(philox4x32({0, 0, 0, 0}, {0, 0}),
            (std::array<uint32_t, 4>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (std::array<uint32_t, 4>{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (std::array<uint32_t, 4>{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(RandomStream, SameCoordinatesSameNumbers) {
  RandomStream a(RandomStream::key_for(42, "crop"), 3, 1000), b(RandomStream::key_for(42, "crop"), 3, 1000);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(a.next_u32(), b.next_u32());
  RandomStream other_op(RandomStream::key_for(42, "flip"), 3, 1000);
  RandomStream other_epoch(RandomStream::key_for(42, "crop"), 4, 1000);
  RandomStream other_attempt(RandomStream::key_for(42, "crop"), 3, 1000, 1);
  RandomStream ref(RandomStream::key_for(42, "crop"), 3, 1000);
  const uint32_t x = ref.next_u32();
  EXPECT_NE(other_op.next_u32(), x);
  EXPECT_NE(other_epoch.next_u32(), x);
  EXPECT_NE(other_attempt.next_u32(), x);
}

TEST(RandomStream, DistributionsLookRight) {
  RandomStream r(7, 0, 0);
  const int n = 200000;
  double sum = 0, sum2 = 0, usum = 0;
  int heads = 0;
  std::vector<int> buckets(10);
  for (int i = 0; i < n; ++i) {
    const double z = r.normal();
    sum += z, sum2 += z * z;
    const double u = r.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    usum += u;
    heads += r.bernoulli(0.3);
    ++buckets[r.below(10)];
  }
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(sum2 / n, 1.0, 0.01);
  EXPECT_NEAR(usum / n, 0.5, 0.005);
  EXPECT_NEAR(heads / double(n), 0.3, 0.005);
  for (int b : buckets) EXPECT_NEAR(b / double(n), 0.1, 0.005);
}

// gamma / beta / dirichlet: the moments of Gamma(a) (mean a, variance a), Beta(a, b) and
// Dirichlet; and for tiny shapes (where a U^(1/a) boost underflows double) values near 0 or 1 with
// the right mean, never a 0/0 fallback.
TEST(RandomStream, GammaBetaDirichletMoments) {
  const int n = 40000;
  for (double a : {0.3, 1.0, 2.5}) {
    double s = 0, s2 = 0;
    for (int i = 0; i < n; ++i) {
      RandomStream r(5, 0, static_cast<uint64_t>(i));
      const double g = r.gamma(a);
      s += g, s2 += g * g;
    }
    const double mean = s / n, var = s2 / n - mean * mean;
    EXPECT_NEAR(mean, a, 5 * std::sqrt(a / n)) << a;
    EXPECT_NEAR(var, a, 0.1 * a + 0.02) << a;
  }
  for (auto [a, b] : {std::pair{1.0, 1.0}, {0.5, 2.0}, {1e-3, 1e-3}}) {
    double s = 0;
    int middle = 0;
    for (int i = 0; i < n; ++i) {
      RandomStream r(6, 0, static_cast<uint64_t>(i));
      const double x = r.beta(a, b);
      ASSERT_TRUE(x >= 0 && x <= 1) << x;
      s += x;
      middle += x > 0.01 && x < 0.99;
    }
    EXPECT_NEAR(s / n, a / (a + b), 5 * std::sqrt(a * b / ((a + b) * (a + b) * (a + b + 1)) / n)) << a << " " << b;
    if (a < 0.01) EXPECT_LT(middle, n / 100) << "Beta(1e-3, 1e-3) piles up at 0 and 1";
  }
  float w[4];
  double first = 0;
  int one_hot = 0;
  for (int i = 0; i < n; ++i) {
    RandomStream r(7, 0, static_cast<uint64_t>(i));
    r.dirichlet(1e-3, w);
    first += w[0];
    one_hot += *std::max_element(w, w + 4) > 0.99f;
  }
  EXPECT_NEAR(first / n, 0.25, 5 * std::sqrt(0.25 * 0.75 / n));
  EXPECT_GT(one_hot, n * 95 / 100);
}

}  // namespace
}  // namespace hdl
