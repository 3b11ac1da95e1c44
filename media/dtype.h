// Element types of tensors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "media/api.h"

HDL_API_BEGIN
namespace hdl {

enum class DType : uint8_t { kU8, kI16, kI32, kI64, kF16, kBF16, kF32 };

/// Bytes per element.
constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::kU8: return 1;
    case DType::kI16: case DType::kF16: case DType::kBF16: return 2;
    case DType::kI32: case DType::kF32: return 4;
    case DType::kI64: return 8;
  }
  return 0;
}

/// "uint8", "int16", "int32", "int64", "float16", "bfloat16", "float32": the numpy/torch names.
const char* dtype_name(DType t);

/// Parses the names above (and the aliases "u8", "f32", "half", "float", ...).
/// Throws std::invalid_argument naming the accepted values.
DType parse_dtype(std::string_view name);

/// Maps a C++ type to its DType at compile time: dtype_of<float>() == DType::kF32.
template <typename T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<uint8_t>() { return DType::kU8; }
template <> constexpr DType dtype_of<int16_t>() { return DType::kI16; }
template <> constexpr DType dtype_of<int32_t>() { return DType::kI32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::kI64; }
template <> constexpr DType dtype_of<float>() { return DType::kF32; }

/// IEEE half and bfloat16 conversions (round to nearest even), used by the cast kernels.
uint16_t float_to_half(float f);
float half_to_float(uint16_t h);
uint16_t float_to_bfloat16(float f);
float bfloat16_to_float(uint16_t b);

}  // namespace hdl
HDL_API_END
