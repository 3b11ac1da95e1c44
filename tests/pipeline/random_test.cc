#include "pipeline/random.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

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

}  // namespace
}  // namespace hdl
