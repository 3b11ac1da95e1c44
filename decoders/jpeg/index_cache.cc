// JpegIndexCache (decoders/jpeg/index_cache.h): 16 shards of key -> (size, fingerprint, index),
// each behind its mutex; the budget and the counters are atomics.
#include "decoders/jpeg/index_cache.h"

#include <algorithm>
#include <cstring>

#include "decoders/jpeg/jpeg_index.h"

namespace hdl {
namespace {

// A cheap identity check of a file's bytes: its size and 16 samples of 64 bytes spread over it
// (the first and the last included), 8 bytes per multiply.
uint64_t fingerprint(std::span<const uint8_t> data) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ data.size();
  const size_t n = data.size();
  for (int k = 0; k < 16; ++k) {
    const size_t from = n <= 64 ? 0 : (n - 64) / 15 * size_t(k) + (k == 15 ? (n - 64) % 15 : 0);
    for (size_t i = from; i < std::min(n, from + 64); i += 8) {
      uint64_t w = 0;
      std::memcpy(&w, data.data() + i, std::min<size_t>(8, n - i));
      h = (h ^ w) * 0xFF51AFD7ED558CCDull;
      h ^= h >> 32;
    }
  }
  return h;
}

}  // namespace

JpegIndexCache::JpegIndexCache(size_t budget_bytes) : budget_(budget_bytes), shards_(new Shard[kShards]) {}
JpegIndexCache::~JpegIndexCache() = default;

std::shared_ptr<const detail::JpegScanIndex> JpegIndexCache::find(uint64_t key, std::span<const uint8_t> data,
                                                                  bool* known_unindexable) const {
  *known_unindexable = false;
  Shard& s = shards_[key % kShards];
  std::lock_guard lock(s.mutex);
  auto it = s.map.find(key);
  if (it == s.map.end()) return nullptr;
  if (it->second.size != data.size() || it->second.fingerprint != fingerprint(data)) return nullptr;
  if (!it->second.index) *known_unindexable = true;
  return it->second.index;
}

void JpegIndexCache::insert(uint64_t key, std::span<const uint8_t> data,
                            std::shared_ptr<const detail::JpegScanIndex> index) {
  if (index) {
    builds_.fetch_add(1, std::memory_order_relaxed);
    const int64_t add = int64_t(detail::jpeg_index_bytes(*index));
    if (bytes_.fetch_add(add, std::memory_order_relaxed) + add > int64_t(budget_)) {
      bytes_.fetch_sub(add, std::memory_order_relaxed);
      over_budget_.fetch_add(1, std::memory_order_relaxed);
      index.reset();  // remembered as unindexable: not rebuilt (and dropped) on every decode
    }
  }
  Entry entry{data.size(), fingerprint(data), std::move(index)};
  Shard& s = shards_[key % kShards];
  std::lock_guard lock(s.mutex);
  auto [it, inserted] = s.map.try_emplace(key, entry);
  if (!inserted) {
    // A replaced file (other bytes) takes the slot; a race on the same bytes keeps the first.
    const bool same = it->second.size == entry.size && it->second.fingerprint == entry.fingerprint;
    if (same) {
      if (entry.index) bytes_.fetch_sub(int64_t(detail::jpeg_index_bytes(*entry.index)), std::memory_order_relaxed);
      return;
    }
    if (it->second.index) {
      bytes_.fetch_sub(int64_t(detail::jpeg_index_bytes(*it->second.index)), std::memory_order_relaxed);
      entries_.fetch_sub(1, std::memory_order_relaxed);
    } else {
      unindexable_.fetch_sub(1, std::memory_order_relaxed);
    }
    it->second = entry;
  }
  (entry.index ? entries_ : unindexable_).fetch_add(1, std::memory_order_relaxed);
}

JpegIndexCache::Stats JpegIndexCache::stats() const {
  Stats s;
  s.entries = entries_.load();
  s.unindexable = unindexable_.load();
  s.bytes = bytes_.load();
  s.hits = hits_.load();
  s.builds = builds_.load();
  s.over_budget = over_budget_.load();
  s.fallbacks = fallbacks_.load();
  return s;
}

}  // namespace hdl
