// JpegIndexCache: the entry-point indexes (decoders/jpeg/jpeg_index.h) of a dataset's files,
// shared by all decoder threads, within a byte budget.
//
// In: the caller's key for a file (its dataset index) with the file's bytes, and indexes built
// by build_jpeg_index (or null: the file cannot be indexed). Out: the index of a key, if it was
// built from the same bytes (same size and fingerprint: 16 samples of 64 bytes spread over the
// file), or that the file is known to be unindexable; counters (Stats). The budget is shared out
// over the files expected (expect_files): each file's share bounds its index (a coarser index
// past it), and past the whole budget indexes are dropped and their files remembered as
// unindexed. Entries are never evicted: the first files indexed keep their memory (no LRU). No
// failure modes: a mismatch or a spent budget reads as "no index", and the file is decoded
// without one.
//
// Thread safety: every method is thread-safe (16 mutex-guarded shards; atomic counters).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>

#include "media/api.h"

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


}  // namespace hdl
HDL_API_END
