#include "media/batch.h"

#include <cassert>

namespace hdl {

Batch Batch::dense(Tensor tensor) {
  assert(tensor.shape().ndim() >= 1);
  Batch b;
  b.dense_ = std::move(tensor);
  return b;
}

Batch Batch::ragged(std::vector<Tensor> samples) {
  Batch b;
  b.samples_ = std::move(samples);
  return b;
}

DType Batch::dtype() const {
  if (dense_.defined()) return dense_.dtype();
  return samples_.empty() ? DType::kU8 : samples_[0].dtype();
}

Layout Batch::layout() const {
  if (dense_.defined()) return dense_.layout();
  return samples_.empty() ? Layout::kNone : samples_[0].layout();
}

Shape Batch::sample_shape(int64_t i) const {
  if (dense_.defined()) return dense_.shape().drop_front();
  return samples_[static_cast<size_t>(i)].shape();
}

Tensor Batch::sample(int64_t i) const {
  if (dense_.defined()) return dense_.slice(i);
  return samples_[static_cast<size_t>(i)];
}

}  // namespace hdl
