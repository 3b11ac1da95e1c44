// JPEG entry-point index: where each MCU of a baseline JPEG's entropy-coded data starts, so that
// a region decode skips the Huffman decoding of everything outside the region.
//
// Huffman decoding is most of the cost of a JPEG decode (about 58% of resnet-train's time on
// the ImageNet-like corpus), and a baseline JPEG is one entropy-coded stream: libjpeg must decode
// every MCU before the last row of a window, including the columns left and right of it. Once a
// file has been parsed, its index records for every MCU (every `column_step`-th MCU of a row) the
// bit position where it starts and the DC predictors before it. A later region decode then
// reads only the MCUs covering the window (plus the pixel of context chroma upsampling needs),
// one of two ways:
//  - JpegWindowEntropy decodes their Huffman codes straight from the file, starting each MCU
//    row at its entry point, inside libjpeg-turbo (in place of its entropy decoder; libjpeg
//    does the rest), faster than libjpeg's own Huffman decoding;
//  - write_jpeg_window assembles a small JPEG of those MCUs for libjpeg-turbo to decode: the
//    entropy-coded segments of the window's MCU rows copied bit for bit, the first DC
//    difference of each segment re-encoded against its new predecessor (the DC tables extended
//    with codes for any missing magnitude categories; existing codes are unchanged).
// Either way the window's pixels are bit for bit those of a full decode (tested on every
// corpus photo).
//
// The index is built the first time a file is decoded with a region (one extra Huffman pass,
// about half a decode) and kept in a JpegIndexCache shared by all decoder threads, so the gain
// comes from the second epoch on. Files it cannot index (progressive, arithmetic-coded, restart
// intervals, multi-scan, 12-bit, corrupt) are remembered as such and decoded as before.
//
// The files of decoders/jpeg/ that make it, one job each (each with its contract at its top):
//   jpeg_index.h      this overview; build_jpeg_index: the index pass over a file
//   jpeg_window.h     plan_jpeg_window (the MCUs a window reads), write_jpeg_window (the window
//                     as a small JPEG) and write_jpeg_window_header
//   window_entropy.h  JpegWindowEntropy: a window's Huffman decoding straight from the file
//   index_cache.h     JpegIndexCache: the indexes of a dataset's files, within a byte budget
//   detail/markers.*  the file's markers up to its scan, checked; the window JPEGs' header
//   detail/huffman.*  Huffman tables: canonical codes, lookup tables
//   detail/bit_io.h   reading and writing entropy-coded bits (stuffing, markers, positions)
//   detail/scan_index.h  the index itself (JpegScanIndex), shared by the files above
//
// In: a whole file's bytes. Out: an index (opaque: detail::JpegScanIndex) and its MCU grid.
// Failures: kUnsupported for files of another kind (progressive, arithmetic-coded, restart
// intervals, multi-scan, 12-bit, DC tables that cannot be extended, files of 512 MB or more),
// kInvalidData for damaged markers or entropy-coded data (including a scan that runs to the end
// of the file with no marker after it, which libjpeg would decode partially).
//
// Thread safety: build_jpeg_index and the accessors are pure functions; an index is immutable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "media/api.h"
#include "media/status.h"

HDL_API_BEGIN
namespace hdl::detail {

struct JpegScanIndex;

/// The MCU grid of an indexed JPEG, in pixels and MCUs.
struct JpegMcuGrid {
  int64_t width = 0, height = 0;  ///< image size
  int mcu_w = 8, mcu_h = 8;       ///< MCU size in pixels
  int64_t mcus_x = 0, mcus_y = 0; ///< MCUs per row, MCU rows
};

/// Builds the index of a baseline, single-scan, 8-bit Huffman JPEG with 1 or 3 components and no
/// restart interval. It records every MCU of each row, or every k-th with the smallest k that
/// keeps the index within `max_bytes` (at most one per row: the row starts, which still skip
/// the rows above a window). kUnsupported for files of another kind (or whose DC tables cannot
/// be extended), kInvalidData for corrupt entropy data.
Result<std::shared_ptr<const JpegScanIndex>> build_jpeg_index(std::span<const uint8_t> data,
                                                             size_t max_bytes = SIZE_MAX);

const JpegMcuGrid& jpeg_index_grid(const JpegScanIndex& index);
size_t jpeg_index_bytes(const JpegScanIndex& index);
/// k: the index records every k-th MCU of a row.
int jpeg_index_column_step(const JpegScanIndex& index);

}  // namespace hdl::detail
HDL_API_END
