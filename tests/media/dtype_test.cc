#include "media/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "media/device.h"
#include "media/status.h"

namespace hdl {
namespace {

TEST(DType, NamesRoundTrip) {
  for (DType t : {DType::kU8, DType::kI16, DType::kI32, DType::kI64, DType::kF16, DType::kBF16, DType::kF32})
    EXPECT_EQ(parse_dtype(dtype_name(t)), t);
  EXPECT_THROW(parse_dtype("float64"), std::invalid_argument);
  EXPECT_EQ(dtype_size(DType::kBF16), 2u);
}

// Reference bit patterns from IEEE 754 binary16 (as numpy.float16 gives them).
TEST(DType, HalfConversionRoundsToNearestEven) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);            // rounds up to inf
  EXPECT_EQ(float_to_half(5.960464477539063e-08f), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half(1.0009765625f), 0x3c01);
  EXPECT_EQ(float_to_half(1.00048828125f), 0x3c00);      // tie -> even
  EXPECT_EQ(float_to_half(0.1f), 0x2e66);
  EXPECT_EQ(half_to_float(0x3555), 0.333251953125f);
  EXPECT_EQ(half_to_float(0x0001), 5.960464477539063e-08f);
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::numeric_limits<float>::quiet_NaN()))));
  for (uint32_t h = 0; h < 0x7c00; ++h)  // every finite half survives a round trip
    ASSERT_EQ(float_to_half(half_to_float(static_cast<uint16_t>(h))), h);
}

TEST(DType, BFloat16) {
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bfloat16(0.1f), 0x3dcd);  // torch.tensor(0.1).bfloat16() == 0.10009765625
  EXPECT_EQ(bfloat16_to_float(0x3dcd), 0.10009765625f);
}

TEST(Device, Parse) {
  EXPECT_EQ(Device::parse("cpu"), Device::cpu());
  EXPECT_EQ(Device::parse("cuda"), Device::cuda(0));
  EXPECT_EQ(Device::parse("cuda:3").to_string(), "cuda:3");
  EXPECT_THROW(Device::parse("cuda:x"), std::invalid_argument);
  EXPECT_THROW(Device::parse("tpu"), std::invalid_argument);
}

TEST(Status, ContextAndResult) {
  Status s = Status::invalid_data("premature end of data segment").with_context("sample 3");
  EXPECT_EQ(s.message(), "sample 3: premature end of data segment");
  EXPECT_EQ(s.to_string(), "invalid data: sample 3: premature end of data segment");
  Result<int> r = Status::not_found("x");
  EXPECT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  Result<int> ok = 7;
  EXPECT_EQ(*ok, 7);
}

}  // namespace
}  // namespace hdl
