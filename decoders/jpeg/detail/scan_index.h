// JpegScanIndex: one file's entry-point index, as the files of decoders/jpeg/ share it (private;
// the API names it only as the opaque detail::JpegScanIndex).
//
// Made by build_jpeg_index (jpeg_index.cc) and immutable after that; read by the window writer
// (jpeg_window.cc), the window Huffman decoder (window_entropy.cc) and the cache's budget
// (index_cache.cc, through jpeg_index_bytes). It holds the parsed header (markers.h) and, per
// entry (every `step`-th MCU of each MCU row, plus one past the last MCU), the stuffed bit
// position in the scan where that MCU starts and the DC predictors before it. entry_of and
// inside_grid are the index's geometry, inline for the decoders' per-row loops.
//
// Thread safety: immutable once built; shared read-only through shared_ptr<const JpegScanIndex>.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "decoders/jpeg/detail/markers.h"
#include "decoders/jpeg/jpeg_index.h"

namespace hdl::detail {

struct JpegScanIndex {
  jpeg::ParsedHeader head;
  int step = 1;
  int64_t per_row = 0;        // entries per MCU row
  std::vector<uint32_t> pos;  // per entry: (stuffed offset from scan start) << 3 | bit
  std::vector<int16_t> dc;    // per entry and component: the DC predictor before that MCU
  size_t bytes = 0;
};

namespace jpeg {

// True if MCUs [r0, r1) x [c0, c1) are a non-empty part of `g`.
inline bool inside_grid(const JpegMcuGrid& g, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  return 0 <= r0 && r0 < r1 && r1 <= g.mcus_y && 0 <= c0 && c0 < c1 && c1 <= g.mcus_x;
}

// The index entry of MCU (row, col), col on the step grid or mcus_x (then the next row's first).
inline size_t entry_of(const JpegScanIndex& x, int64_t row, int64_t col) {
  return col >= x.head.grid.mcus_x ? size_t((row + 1) * x.per_row) : size_t(row * x.per_row + col / x.step);
}

}  // namespace jpeg
}  // namespace hdl::detail
