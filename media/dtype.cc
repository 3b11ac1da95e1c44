#include "media/dtype.h"

#include <cstring>
#include <stdexcept>

namespace hdl {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kU8: return "uint8";
    case DType::kI16: return "int16";
    case DType::kI32: return "int32";
    case DType::kI64: return "int64";
    case DType::kF16: return "float16";
    case DType::kBF16: return "bfloat16";
    case DType::kF32: return "float32";
  }
  return "?";
}

DType parse_dtype(std::string_view n) {
  if (n == "uint8" || n == "u8") return DType::kU8;
  if (n == "int16" || n == "i16") return DType::kI16;
  if (n == "int32" || n == "i32") return DType::kI32;
  if (n == "int64" || n == "i64") return DType::kI64;
  if (n == "float16" || n == "f16" || n == "half") return DType::kF16;
  if (n == "bfloat16" || n == "bf16") return DType::kBF16;
  if (n == "float32" || n == "f32" || n == "float") return DType::kF32;
  throw std::invalid_argument("unknown dtype \"" + std::string(n) +
                              "\" (expected one of uint8, int16, int32, int64, float16, "
                              "bfloat16, float32)");
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow to inf
  if (abs < 0x38800000u) {                                               // subnormal or zero
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const int shift = 126 - static_cast<int>(abs >> 23);  // value = mant * 2^(exp - 150), half ulp 2^-24
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = ((abs - 0x38000000u) >> 13);
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {  // normalise a subnormal
      int e = -1;
      do { ++e; mant <<= 1; } while ((mant & 0x400u) == 0);
      x = sign | ((112u - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    x = sign | 0x7f800000u | (mant << 13);
  } else {
    x = sign | ((exp + 112u) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t float_to_bfloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

float bfloat16_to_float(uint16_t b) {
  const uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

}  // namespace hdl
