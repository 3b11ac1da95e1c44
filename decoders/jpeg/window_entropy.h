// JpegWindowEntropy: the Huffman decoding of an indexed JPEG window's MCUs straight from the
// file, swapped into libjpeg-turbo in place of its own entropy decoder (decoders/jpeg/
// jpeg_decoder.cc).
//
// In: the file's bytes, its index (decoders/jpeg/jpeg_index.h) and a window plan
// (jpeg_window.h). Out: each MCU's blocks of coefficients, in raster order, exactly as
// libjpeg's decoder would give them. The window's rows are decoded two at a time, each from its
// own entry point with its recorded DC predictors. Failures: start() says kInvalidArgument for
// a plan outside the grid, kInvalidData for tables that do not build; decode_mcu() returns false
// when the data does not match the index (an invalid code, a row ending elsewhere than its index
// says, a marker inside a row, a DC out of range, no MCU left); the caller then decodes the file
// another way.
//
// Thread safety: one instance per thread; it keeps a few files' tables between starts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "decoders/jpeg/jpeg_index.h"
#include "decoders/jpeg/jpeg_window.h"
#include "media/api.h"
#include "media/status.h"

HDL_API_BEGIN
namespace hdl::detail {

/// Huffman decoding of a window's MCUs straight from the file, at the index's entry points:
/// the coefficients of every block, as libjpeg's own decoder would produce them from the file
/// (the same symbols, run-length rules, overflow past the 64th coefficient and DC predictors),
/// for libjpeg's coefficient controller to transform. It spares the window JPEG's bit copy
/// and, with 11-bit tables that resolve a code and its value in one lookup, is faster than
/// libjpeg-turbo 2.1's decoder (8-bit lookahead, the value read separately).
///
/// One instance per thread; the tables built for a file's Huffman tables are kept (a few) and
/// reused for later files with the same tables.
class JpegWindowEntropy {
 public:
  JpegWindowEntropy();
  ~JpegWindowEntropy();
  JpegWindowEntropy(const JpegWindowEntropy&) = delete;
  JpegWindowEntropy& operator=(const JpegWindowEntropy&) = delete;

  /// Starts at the first MCU of `plan`. `data` and `index` must outlive the decode.
  /// kInvalidData if `data` does not match the index.
  Status start(std::span<const uint8_t> data, const JpegScanIndex& index, const JpegWindowPlan& plan);
  /// Blocks per MCU, in the scan's order (each component's blocks, component by component).
  int blocks_per_mcu() const { return blocks_; }
  /// MCUs per row of the window started.
  int64_t mcus_per_row() const { return cols_; }
  /// Decodes the next MCU of the window (raster order) into `blocks[0..blocks_per_mcu())`,
  /// each 64 coefficients in natural order, zeroed by the caller; `blocks` == nullptr decodes
  /// and drops it. False if the data does not match the index (an invalid code, a row that
  /// ends elsewhere than its index says, or no MCU left): the caller then decodes otherwise.
  bool decode_mcu(int16_t* const* blocks);

  struct Tables;  // (window_entropy.cc)

 private:
  bool decode_rows(int64_t row_a, int64_t row_b);
  bool unstuff_row(int64_t row, std::vector<uint8_t>& out, uint64_t* want_bits, int* skip) const;

  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  const JpegScanIndex* index_ = nullptr;
  JpegWindowPlan plan_;
  int blocks_ = 0;
  int comp_of_block_[10] = {};
  const Tables* dc_[3] = {};
  const Tables* ac_[3] = {};
  int64_t row_ = 0, col_ = 0, cols_ = 0;
  // The window's rows are decoded two at a time (two bit streams side by side) into two slots
  // of cols_ x blocks_ x 64 coefficients, then handed out an MCU at a time.
  std::vector<int16_t> rows_;
  int64_t slot_row_[2] = {-1, -1};
  int slot_ = 0;
  std::vector<uint8_t> unstuffed_[2];  // each slot's row, the 0x00 after each 0xFF removed
  std::vector<std::unique_ptr<Tables>> cache_;  // most recently used first
};

}  // namespace hdl::detail
HDL_API_END
