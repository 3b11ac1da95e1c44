// Tensors: owning Tensor, non-owning TensorView / ConstTensorView.
//
// Views carry element strides so a crop window of an image is a view, not a copy. Kernels take
// views and never allocate; Tensors own (share) a Storage block.
//
// Thread safety: values. Concurrent writes through views of the same bytes are the caller's
// business.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "media/api.h"
#include "media/device.h"
#include "media/dtype.h"
#include "media/shape.h"
#include "media/storage.h"

HDL_API_BEGIN
namespace hdl {

/// Row-major (C-order) element strides for `shape`.
Shape contiguous_strides(const Shape& shape);

namespace detail {
template <typename Ptr>
struct ViewBase {
  Ptr data = nullptr;  ///< first element; non-owning
  Shape shape;
  Shape strides;       ///< in elements, one per dim
  DType dtype = DType::kU8;
  Layout layout = Layout::kNone;
  Device device;

  int ndim() const { return shape.ndim(); }
  int64_t num_elements() const { return shape.num_elements(); }
  size_t num_bytes() const { return static_cast<size_t>(num_elements()) * dtype_size(dtype); }
  bool is_contiguous() const { return strides == contiguous_strides(shape); }
  /// Points the view at a contiguous tensor of `s` at `d`.
  void assign(Ptr d, const Shape& s, DType t, Layout l, Device dev) {
    data = d, shape = s, strides = contiguous_strides(s), dtype = t, layout = l, device = dev;
  }
  /// Typed pointer to the first element. Precondition: dtype_of<T>() == dtype (checked in debug).
  template <typename T>
  auto typed() const {
    using Elem = std::conditional_t<std::is_const_v<std::remove_pointer_t<Ptr>>, const T, T>;
    return static_cast<Elem*>(data);
  }
};
}  // namespace detail

/// A non-owning, writable window on elements somewhere else.
struct TensorView : detail::ViewBase<void*> {
  TensorView() = default;
  /// A contiguous view of `shape` at `data`.
  TensorView(void* data, Shape shape, DType dtype, Layout layout = Layout::kNone,
             Device device = Device::cpu()) {
    assign(data, shape, dtype, layout, device);
  }
  /// The window [y0, y0+h) x [x0, x0+w) of an HWC view (same strides, no copy).
  TensorView crop_hw(int64_t y0, int64_t x0, int64_t h, int64_t w) const;
  /// Index i of dimension `dim`, that dimension dropped (same strides, no copy), with `layout`:
  /// frame t of an FHWC clip is select(0, t, Layout::kHWC).
  TensorView select(int dim, int64_t i, Layout layout) const;
};

/// A non-owning, read-only window on elements somewhere else.
struct ConstTensorView : detail::ViewBase<const void*> {
  ConstTensorView() = default;
  ConstTensorView(const TensorView& v)  // NOLINT: a writable view is readable
      : detail::ViewBase<const void*>{v.data, v.shape, v.strides, v.dtype, v.layout, v.device} {}
  ConstTensorView(const void* data, Shape shape, DType dtype, Layout layout = Layout::kNone,
                  Device device = Device::cpu()) {
    assign(data, shape, dtype, layout, device);
  }
  ConstTensorView crop_hw(int64_t y0, int64_t x0, int64_t h, int64_t w) const;
  ConstTensorView select(int dim, int64_t i, Layout layout) const;
};

/// Copies the elements of `src` into `dst` (same shape and dtype; any strides). Host only.
void copy(const ConstTensorView& src, const TensorView& dst);

/// A contiguous tensor that shares ownership of its Storage.
class Tensor {
 public:
  Tensor() = default;
  /// A new contiguous tensor from `alloc` (contents undefined).
  static Tensor empty(Shape shape, DType dtype, Layout layout = Layout::kNone,
                      Allocator& alloc = host_allocator());
  /// A new contiguous tensor from `pool` (contents undefined).
  static Tensor empty(Shape shape, DType dtype, Layout layout, BufferPool& pool);
  /// A tensor over `bytes` bytes of `storage` starting at `offset`.
  Tensor(StoragePtr storage, size_t offset, Shape shape, DType dtype, Layout layout);

  bool defined() const { return storage_ != nullptr; }
  void* data() const { return static_cast<char*>(storage_->data()) + offset_; }
  template <typename T> T* typed() const { return static_cast<T*>(data()); }
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  Layout layout() const { return layout_; }
  Device device() const { return storage_ ? storage_->device() : Device::cpu(); }
  bool pinned() const { return storage_ && storage_->pinned(); }
  int64_t num_elements() const { return shape_.num_elements(); }
  size_t num_bytes() const { return static_cast<size_t>(num_elements()) * dtype_size(dtype_); }
  const StoragePtr& storage() const { return storage_; }

  TensorView view() const { return TensorView(data(), shape_, dtype_, layout_, device()); }
  /// Sample i of a batch tensor ([N, ...] -> [...]) without a copy.
  Tensor slice(int64_t i) const;

 private:
  StoragePtr storage_;
  size_t offset_ = 0;
  Shape shape_;
  DType dtype_ = DType::kU8;
  Layout layout_ = Layout::kNone;
};

}  // namespace hdl
HDL_API_END
