#include "media/tensor.h"

#include <cassert>
#include <cstring>

namespace hdl {

Shape contiguous_strides(const Shape& shape) {
  Shape s = shape;
  int64_t stride = 1;
  for (int i = shape.ndim() - 1; i >= 0; --i) {
    s[i] = stride;
    stride *= shape[i];
  }
  return s;
}

namespace {
template <typename View>
View crop_view(const View& v, int64_t y0, int64_t x0, int64_t h, int64_t w) {
  assert(v.ndim() == 3 && y0 >= 0 && x0 >= 0 && y0 + h <= v.shape[0] && x0 + w <= v.shape[1]);
  View out = v;
  using Byte = std::conditional_t<std::is_const_v<std::remove_pointer_t<decltype(v.data)>>,
                                  const char, char>;
  out.data = static_cast<Byte*>(v.data) +
             (y0 * v.strides[0] + x0 * v.strides[1]) * static_cast<int64_t>(dtype_size(v.dtype));
  out.shape[0] = h;
  out.shape[1] = w;
  return out;
}

template <typename View>
View select_view(const View& v, int dim, int64_t i, Layout layout) {
  assert(dim >= 0 && dim < v.ndim() && i >= 0 && i < v.shape[dim]);
  View out = v;
  using Byte = std::conditional_t<std::is_const_v<std::remove_pointer_t<decltype(v.data)>>,
                                  const char, char>;
  out.data = static_cast<Byte*>(v.data) + i * v.strides[dim] * static_cast<int64_t>(dtype_size(v.dtype));
  out.shape = Shape{};
  out.strides = Shape{};
  for (int d = 0; d < v.ndim(); ++d)
    if (d != dim) out.shape.push_back(v.shape[d]), out.strides.push_back(v.strides[d]);
  out.layout = layout;
  return out;
}
}  // namespace

TensorView TensorView::crop_hw(int64_t y0, int64_t x0, int64_t h, int64_t w) const {
  return crop_view(*this, y0, x0, h, w);
}

ConstTensorView ConstTensorView::crop_hw(int64_t y0, int64_t x0, int64_t h, int64_t w) const {
  return crop_view(*this, y0, x0, h, w);
}

TensorView TensorView::select(int dim, int64_t i, Layout layout) const { return select_view(*this, dim, i, layout); }

ConstTensorView ConstTensorView::select(int dim, int64_t i, Layout layout) const {
  return select_view(*this, dim, i, layout);
}

namespace {
// Copies dims [dim, nd) of src to dst; the innermost dim is one memcpy when both are unit-stride.
void copy_dims(const ConstTensorView& src, const TensorView& dst, int dim, const char* s, char* d) {
  const size_t elem = dtype_size(src.dtype);
  const int nd = src.ndim();
  const int64_t n = src.shape[dim];
  if (dim == nd - 1 && src.strides[dim] == 1 && dst.strides[dim] == 1) {
    std::memcpy(d, s, static_cast<size_t>(n) * elem);
    return;
  }
  const int64_t ss = src.strides[dim] * static_cast<int64_t>(elem);
  const int64_t ds = dst.strides[dim] * static_cast<int64_t>(elem);
  for (int64_t i = 0; i < n; ++i) {
    if (dim == nd - 1) {
      std::memcpy(d + i * ds, s + i * ss, elem);
    } else {
      copy_dims(src, dst, dim + 1, s + i * ss, d + i * ds);
    }
  }
}
}  // namespace

void copy(const ConstTensorView& src, const TensorView& dst) {
  assert(src.shape == dst.shape && src.dtype == dst.dtype);
  if (src.ndim() == 0) {
    std::memcpy(dst.data, src.data, dtype_size(src.dtype));
    return;
  }
  if (src.num_elements() == 0) return;
  if (src.is_contiguous() && dst.is_contiguous()) {
    std::memcpy(dst.data, src.data, src.num_bytes());
    return;
  }
  copy_dims(src, dst, 0, static_cast<const char*>(src.data), static_cast<char*>(dst.data));
}

Tensor::Tensor(StoragePtr storage, size_t offset, Shape shape, DType dtype, Layout layout)
    : storage_(std::move(storage)), offset_(offset), shape_(shape), dtype_(dtype), layout_(layout) {
  assert(!storage_ || offset_ + num_bytes() <= storage_->capacity());
}

Tensor Tensor::empty(Shape shape, DType dtype, Layout layout, Allocator& alloc) {
  const size_t bytes = static_cast<size_t>(shape.num_elements()) * dtype_size(dtype);
  return Tensor(Storage::allocate(alloc, bytes), 0, shape, dtype, layout);
}

Tensor Tensor::empty(Shape shape, DType dtype, Layout layout, BufferPool& pool) {
  const size_t bytes = static_cast<size_t>(shape.num_elements()) * dtype_size(dtype);
  return Tensor(pool.acquire(bytes), 0, shape, dtype, layout);
}

Tensor Tensor::slice(int64_t i) const {
  assert(shape_.ndim() >= 1 && i >= 0 && i < shape_[0]);
  const Shape inner = shape_.drop_front();
  const size_t bytes = static_cast<size_t>(inner.num_elements()) * dtype_size(dtype_);
  return Tensor(storage_, offset_ + static_cast<size_t>(i) * bytes, inner, dtype_, layout_);
}

}  // namespace hdl
