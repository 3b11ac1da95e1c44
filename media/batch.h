// Batch: the samples of one pipeline output for one iteration.
//
// Dense when every sample has the same shape: one contiguous [N, ...] Tensor, which is what
// reaches torch. Ragged otherwise: one Tensor per sample (decoded images of different sizes,
// encoded bytes).
//
// Thread safety: a value; filling it from several threads is done through disjoint sample
// slots (see pipeline/executor), reading it needs no locking.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "media/api.h"
#include "media/cuda/stream.h"
#include "media/tensor.h"

HDL_API_BEGIN
namespace hdl {

class Batch {
 public:
  Batch() = default;
  /// A dense batch over `tensor`, whose first dim is the batch size.
  static Batch dense(Tensor tensor);
  /// A ragged batch: one tensor per sample, same dtype and layout.
  static Batch ragged(std::vector<Tensor> samples);

  bool is_dense() const { return dense_.defined() || samples_.empty(); }
  int64_t size() const { return dense_.defined() ? dense_.shape()[0] : static_cast<int64_t>(samples_.size()); }
  DType dtype() const;
  Layout layout() const;  ///< per-sample layout
  Shape sample_shape(int64_t i) const;
  /// Sample i without a copy.
  Tensor sample(int64_t i) const;
  /// The [N, ...] tensor. Precondition: is_dense() and size() > 0.
  const Tensor& as_tensor() const { return dense_; }

  /// Device batches (written by a gpu stage): when the data is ready, and how to hand the
  /// memory back (media/cuda/stream.h DeviceSync). Null for host batches, which are ready.
  const std::shared_ptr<const cuda::DeviceSync>& device_sync() const { return sync_; }
  Batch& set_device_sync(std::shared_ptr<const cuda::DeviceSync> sync) {
    sync_ = std::move(sync);
    return *this;
  }

 private:
  Tensor dense_;
  std::vector<Tensor> samples_;
  std::shared_ptr<const cuda::DeviceSync> sync_;
};

}  // namespace hdl
HDL_API_END
