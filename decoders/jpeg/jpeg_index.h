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
// Thread safety: JpegIndexCache is thread-safe; the rest are pure functions.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "media/api.h"
#include "media/status.h"

HDL_API_BEGIN
namespace hdl {

namespace detail {
struct JpegScanIndex;
}

/// Indexes of JPEG files keyed by the caller's file key (the dataset index), with a byte budget.
/// An entry also records the file's size and a fingerprint of its bytes, and is ignored when
/// the bytes handed in for that key differ (a file replaced between epochs).
class JpegIndexCache {
 public:
  struct Stats {
    int64_t entries = 0;       ///< indexed files
    int64_t unindexable = 0;   ///< files remembered as not indexable
    int64_t bytes = 0;         ///< memory held by the indexes
    int64_t hits = 0;          ///< decodes that used an index
    int64_t builds = 0;        ///< indexes built
    int64_t over_budget = 0;   ///< indexes dropped because the budget was spent
    int64_t fallbacks = 0;     ///< decodes the index applied to that failed (the file then
                               ///< decoded without it): a file that does not match its index
  };

  /// `budget_bytes`: at most this much memory for indexes; later files are not indexed.
  explicit JpegIndexCache(size_t budget_bytes);
  ~JpegIndexCache();
  JpegIndexCache(const JpegIndexCache&) = delete;
  JpegIndexCache& operator=(const JpegIndexCache&) = delete;

  /// The index of `key` if it was built from these bytes; nullptr if there is none (or it was
  /// built from other bytes). `*known_unindexable` is set when the file was found unindexable.
  std::shared_ptr<const detail::JpegScanIndex> find(uint64_t key, std::span<const uint8_t> data,
                                                    bool* known_unindexable) const;
  /// Stores `index` (or, when null, that the file cannot be indexed). Keeps the first entry
  /// when two threads race on one key. Past the budget, an index is dropped (counted) and the
  /// file remembered as unindexed.
  void insert(uint64_t key, std::span<const uint8_t> data,
              std::shared_ptr<const detail::JpegScanIndex> index);
  /// True while there is budget left for another index.
  bool has_room() const { return bytes_.load(std::memory_order_relaxed) < int64_t(budget_); }
  /// How many files will share the budget (e.g. the dataset's size; 0: unknown). Each file's
  /// index is then kept within budget / files by recording fewer MCUs per row (a coarser index
  /// decodes a few more MCUs beside each window), down to one entry per MCU row; past the
  /// budget, files are not indexed.
  /// Cheap to call per decode: the shared counter is written only when the number changes.
  void expect_files(int64_t files) {
    if (files_.load(std::memory_order_relaxed) != files) files_.store(files, std::memory_order_relaxed);
  }
  /// The most memory one file's index may take.
  size_t file_share() const {
    const int64_t n = files_.load(std::memory_order_relaxed);
    return n > 0 ? budget_ / size_t(n) : budget_;
  }

  void count_hit() const { hits_.fetch_add(1, std::memory_order_relaxed); }
  void count_fallback() const { fallbacks_.fetch_add(1, std::memory_order_relaxed); }
  Stats stats() const;

 private:
  struct Entry {
    uint64_t size = 0;
    uint64_t fingerprint = 0;
    std::shared_ptr<const detail::JpegScanIndex> index;  // null: unindexable
  };
  static constexpr int kShards = 16;
  struct Shard {
    mutable std::mutex mutex;
    std::unordered_map<uint64_t, Entry> map;
  };

  size_t budget_;
  std::unique_ptr<Shard[]> shards_;
  std::atomic<int64_t> bytes_{0}, entries_{0}, unindexable_{0}, builds_{0}, over_budget_{0}, files_{0};
  mutable std::atomic<int64_t> hits_{0}, fallbacks_{0};
};

namespace detail {

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

/// Writes to `out` a JPEG of the MCUs [r0, r1) x [c0', c1') of the indexed image, where c0' and
/// c1' are c0 and c1 widened to the index's column step (and to at least two MCU columns when
/// the image has two), and returns its origin in the image
/// (pixels). Its pixels equal the full decode's, except within 1 pixel of an edge that is not
/// an edge of the image (chroma upsampling context). kInvalidData if `data` does not match.
struct JpegWindow {
  int64_t x = 0, y = 0;           ///< origin of the written image in the indexed image
  int64_t width = 0, height = 0;  ///< its size
};
Result<JpegWindow> write_jpeg_window(std::span<const uint8_t> data, const JpegScanIndex& index,
                                     int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                                     std::vector<uint8_t>& out);

/// The MCUs a window decode reads: [r0, r1) x [c0, c1) widened as write_jpeg_window widens
/// them, and the pixels they cover.
struct JpegWindowPlan {
  JpegWindow window;
  int64_t r0 = 0, r1 = 0, c0 = 0, c1 = 0;
};
/// kInvalidArgument if the MCUs are not inside the image's grid.
Result<JpegWindowPlan> plan_jpeg_window(const JpegScanIndex& index, int64_t r0, int64_t r1, int64_t c0, int64_t c1);

/// Writes to `out` the markers of the window JPEG of `plan` up to its scan header, then EOI:
/// what libjpeg needs to set up a decode of the window when JpegWindowEntropy, not libjpeg,
/// decodes the entropy-coded data. (A decoder reading past the scan header meets EOI.)
void write_jpeg_window_header(const JpegScanIndex& index, const JpegWindowPlan& plan, std::vector<uint8_t>& out);

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

  struct Tables;  // (jpeg_index.cc)

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

}  // namespace detail
}  // namespace hdl
HDL_API_END
