// Shared helpers of the fuzz targets (tests/fuzz/README.md).
//
// Targets that need parameters take them from a fixed-size block at the END of the input, so the
// image bytes stay at the front and a seed is a real file with kParamBytes appended (.ci/fuzz.sh
// appends them). Inputs shorter than the block are all parameters and an empty image.
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <vector>

#include "media/shape.h"
#include "media/tensor.h"

namespace hdl::fuzz {

constexpr size_t kParamBytes = 32;

/// Splits an input into the payload (front) and a provider over its last kParamBytes.
struct Input {
  std::span<const uint8_t> payload;
  FuzzedDataProvider params;
  Input(const uint8_t* data, size_t size)
      : payload(data, size > kParamBytes ? size - kParamBytes : 0),
        params(data + payload.size(), size - payload.size()) {}
};

/// A check failed: print and abort, so libFuzzer (and the replay main) report the input.
[[noreturn]] inline void fail(const char* what) {
  std::fprintf(stderr, "FUZZ CHECK FAILED: %s\n", what);
  std::abort();
}
#define HDL_FUZZ_CHECK(cond, what) \
  do {                             \
    if (!(cond)) ::hdl::fuzz::fail(what); \
  } while (0)

/// An HWC uint8 buffer with `slack` spare columns either side of each row (DecodeRequest::
/// slack_columns), filled with a known byte so that reads of unwritten pixels are deterministic.
struct Image {
  std::vector<uint8_t> bytes;
  TensorView view;
  Image(const Shape& shape, int64_t slack = 0, uint8_t fill = 0x5A) {
    const int64_t h = shape[0], w = shape[1], c = shape[2];
    const int64_t row = (w + 2 * slack) * c;
    bytes.assign(size_t(h * row + 2 * slack * c + 1), fill);
    view = TensorView(bytes.data() + slack * c, shape, DType::kU8, Layout::kHWC);
    view.strides[0] = row;
  }
  const uint8_t* px(int64_t y, int64_t x) const {
    return static_cast<const uint8_t*>(view.data) + y * view.strides[0] + x * view.strides[1];
  }
};

}  // namespace hdl::fuzz
