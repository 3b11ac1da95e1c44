// Shape: a small fixed-capacity list of dimensions (no heap allocation), and Layout.
#pragma once

#include <algorithm>
#include <array>
#include <cassert>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "media/api.h"

HDL_API_BEGIN
namespace hdl {

/// Dimensions of a tensor, outermost first. Holds up to kMaxDims dims inline so that per-sample
/// shape bookkeeping never touches the heap. A dim of -1 means "not known yet" (static shape
/// inference before data is seen).
class Shape {
 public:
  static constexpr int kMaxDims = 8;

  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) {
    assert(dims.size() <= kMaxDims);
    for (int64_t d : dims) d_[n_++] = d;
  }
  template <typename It>
  Shape(It first, It last) {
    for (; first != last; ++first) push_back(*first);
  }

  int ndim() const { return n_; }
  bool empty() const { return n_ == 0; }
  int64_t operator[](int i) const { return d_[i]; }
  int64_t& operator[](int i) { return d_[i]; }
  const int64_t* begin() const { return d_.data(); }
  const int64_t* end() const { return d_.data() + n_; }
  int64_t back() const { return d_[n_ - 1]; }

  void push_back(int64_t d) {
    assert(n_ < kMaxDims);
    d_[n_++] = d;
  }
  /// A shape with `outer` put in front: [outer, d0, d1, ...]. Used for batching.
  Shape prepend(int64_t outer) const;
  /// The shape without its first dim.
  Shape drop_front() const;

  /// Product of the dims (1 for a scalar). Precondition: fully_known().
  int64_t num_elements() const {
    int64_t n = 1;
    for (int i = 0; i < n_; ++i) n *= d_[i];
    return n;
  }
  bool fully_known() const { return std::all_of(begin(), end(), [](int64_t d) { return d >= 0; }); }

  /// "[224, 224, 3]", with "?" for unknown dims.
  std::string to_string() const;

  friend bool operator==(const Shape& a, const Shape& b) {
    return a.n_ == b.n_ && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }

 private:
  std::array<int64_t, kMaxDims> d_{};
  int n_ = 0;
};

/// How the dims of an image or video tensor are to be read. Per-sample layouts; a batch adds
/// a leading N. kNone is for tensors without image semantics (labels, encoded bytes).
enum class Layout : uint8_t {
  kNone,
  kHWC,   ///< height, width, channels (interleaved): what decoders produce
  kCHW,   ///< planar: what torch models consume
  kFHWC,  ///< frames, height, width, channels: frame-major video
  kFCHW,  ///< frames, channels, height, width
  kCFHW,  ///< channels, frames, height, width: what 3-D CNNs (torchvision r3d_18, ...) consume
};

const char* layout_name(Layout l);
/// Number of dims a layout implies (0 for kNone, which has any number).
int layout_ndim(Layout l);

}  // namespace hdl
HDL_API_END
