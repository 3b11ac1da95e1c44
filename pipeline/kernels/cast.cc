// cast(): declared in normalize.h.
#include <cstring>
#include <string>
#include <type_traits>

#include "pipeline/kernels/detail/elements.h"
#include "pipeline/kernels/normalize.h"

namespace hdl::kernels {
namespace {

// One tag per dtype: its storage type and how it converts to / from a wide value.
template <DType D>
struct Elem;
template <> struct Elem<DType::kU8> { using type = uint8_t; };
template <> struct Elem<DType::kI16> { using type = int16_t; };
template <> struct Elem<DType::kI32> { using type = int32_t; };
template <> struct Elem<DType::kI64> { using type = int64_t; };
template <> struct Elem<DType::kF32> { using type = float; };
template <> struct Elem<DType::kF16> { using type = uint16_t; };
template <> struct Elem<DType::kBF16> { using type = uint16_t; };

// Integers widen to int64 (exact), floats to float (exact for f16/bf16/f32).
template <DType S>
auto load(typename Elem<S>::type v) {
  if constexpr (S == DType::kF16) return half_to_float(v);
  else if constexpr (S == DType::kBF16) return bfloat16_to_float(v);
  else if constexpr (S == DType::kF32) return v;
  else return static_cast<int64_t>(v);
}

template <DType D, typename V>
typename Elem<D>::type store(V v) {
  using T = typename Elem<D>::type;
  if constexpr (D == DType::kF16) return float_to_half(static_cast<float>(v));
  else if constexpr (D == DType::kBF16) return float_to_bfloat16(static_cast<float>(v));
  else if constexpr (D == DType::kF32) return static_cast<float>(v);
  else if constexpr (std::is_integral_v<V>) {
    if (v < static_cast<int64_t>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (v > static_cast<int64_t>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  } else {
    return detail::saturate_cast<T>(static_cast<double>(v));
  }
}

template <DType S, DType D>
void cast_row(const void* src, int64_t ss, void* dst, int64_t ds, int64_t n) {
  const auto* s = static_cast<const typename Elem<S>::type*>(src);
  auto* d = static_cast<typename Elem<D>::type*>(dst);
  if (ss == 1 && ds == 1) {
    for (int64_t i = 0; i < n; ++i) d[i] = store<D>(load<S>(s[i]));
  } else {
    for (int64_t i = 0; i < n; ++i) d[i * ds] = store<D>(load<S>(s[i * ss]));
  }
}

using RowFn = void (*)(const void*, int64_t, void*, int64_t, int64_t);

template <DType S>
RowFn row_fn_to(DType d) {
  switch (d) {
    case DType::kU8: return cast_row<S, DType::kU8>;
    case DType::kI16: return cast_row<S, DType::kI16>;
    case DType::kI32: return cast_row<S, DType::kI32>;
    case DType::kI64: return cast_row<S, DType::kI64>;
    case DType::kF16: return cast_row<S, DType::kF16>;
    case DType::kBF16: return cast_row<S, DType::kBF16>;
    case DType::kF32: return cast_row<S, DType::kF32>;
  }
  return nullptr;
}

RowFn row_fn(DType s, DType d) {
  switch (s) {
    case DType::kU8: return row_fn_to<DType::kU8>(d);
    case DType::kI16: return row_fn_to<DType::kI16>(d);
    case DType::kI32: return row_fn_to<DType::kI32>(d);
    case DType::kI64: return row_fn_to<DType::kI64>(d);
    case DType::kF16: return row_fn_to<DType::kF16>(d);
    case DType::kBF16: return row_fn_to<DType::kBF16>(d);
    case DType::kF32: return row_fn_to<DType::kF32>(d);
  }
  return nullptr;
}

}  // namespace

Status cast(const ConstTensorView& src, const TensorView& dst) {
  if (src.shape != dst.shape) {
    return Status::invalid_argument("cast: shapes differ: " + src.shape.to_string() + " -> " +
                                    dst.shape.to_string());
  }
  const RowFn fn = row_fn(src.dtype, dst.dtype);
  const int nd = src.ndim();
  if (nd == 0) {
    fn(src.data, 1, dst.data, 1, 1);
    return Status::ok();
  }
  if (src.num_elements() == 0) return Status::ok();
  const int64_t n = src.shape[nd - 1];
  const size_t se = dtype_size(src.dtype), de = dtype_size(dst.dtype);
  // Odometer over all dims but the last; each step converts one row.
  int64_t idx[Shape::kMaxDims] = {};
  while (true) {
    int64_t so = 0, dof = 0;
    for (int i = 0; i < nd - 1; ++i) {
      so += idx[i] * src.strides[i];
      dof += idx[i] * dst.strides[i];
    }
    fn(static_cast<const char*>(src.data) + so * static_cast<int64_t>(se), src.strides[nd - 1],
       static_cast<char*>(dst.data) + dof * static_cast<int64_t>(de), dst.strides[nd - 1], n);
    int i = nd - 2;
    for (; i >= 0; --i) {
      if (++idx[i] < src.shape[i]) break;
      idx[i] = 0;
    }
    if (i < 0) break;
  }
  return Status::ok();
}

}  // namespace hdl::kernels
