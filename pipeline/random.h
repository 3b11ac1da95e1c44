// Counter-based random numbers (Philox-4x32-10).
//
// Every random choice in a pipeline is a pure function of (seed, operator, epoch, sample
// position, attempt): no generator state is carried from sample to sample, so outputs are
// bit-identical whatever the thread count or scheduling order, and resuming mid-epoch costs
// nothing (no stream to fast-forward).
//
// Thread safety: RandomStream is a small value owned by one thread; philox() is pure.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "media/api.h"

HDL_API_BEGIN
namespace hdl {

/// Philox-4x32 with 10 rounds (Salmon et al., SC'11): 4 random words for a 4-word counter.
std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);

/// SplitMix64 finaliser: a good 64-bit mix, used to derive keys.
constexpr uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// FNV-1a of a name, for stable per-operator keys (node names are stable across runs).
constexpr uint64_t hash_name(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return h;
}

/// A stream of random numbers for one (key, epoch, position, attempt). Draws are consumed in
/// order; the n-th draw of a stream is always the same number.
class RandomStream {
 public:
  /// `key`: the seed mixed with the operator's identity (see key_for); `epoch`, `position`
  /// (sample position in the epoch) and `attempt` (retry after a skipped sample) select the stream.
  RandomStream(uint64_t key, uint64_t epoch, uint64_t position, uint32_t attempt = 0)
      : key_{static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)},
        ctr_{static_cast<uint32_t>(position), static_cast<uint32_t>(position >> 32),
             static_cast<uint32_t>(epoch), attempt << 16} {}

  /// The key of operator `name` in a pipeline seeded with `seed`.
  static uint64_t key_for(uint64_t seed, std::string_view name) {
    return mix64(seed ^ mix64(hash_name(name)));
  }
  /// The key of the per-item streams (SampleIO::item_rng) of the operator whose key is `key`.
  static uint64_t item_key(uint64_t key) { return mix64(key ^ 0x4954454d53545245ull); }  // "ITEMSTRE"

  uint32_t next_u32() {
    if (used_ == 4) refill();
    return block_[used_++];
  }
  uint64_t next_u64() { return (static_cast<uint64_t>(next_u32()) << 32) | next_u32(); }
  /// Uniform in [0, 1) with 24 bits of precision (exactly representable floats).
  float uniform() { return static_cast<float>(next_u32() >> 8) * (1.0f / 16777216.0f); }
  /// Uniform in [0, 1) with 53 bits.
  double uniform_double() { return static_cast<double>(next_u64() >> 11) * (1.0 / 9007199254740992.0); }
  /// Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform_double(); }
  /// Uniform integer in [0, n) without modulo bias (Lemire's method). Precondition: n > 0.
  uint64_t below(uint64_t n);
  /// Standard normal (Box-Muller).
  double normal();
  /// Fills out[0, n) with standard normal float32 values as torch's normal_ does on a float
  /// tensor: Box-Muller on float32 uniforms, u1 in (0, 1], each pair giving r cos t and r sin t.
  void normal_fill(float* out, size_t n);
  /// True with probability p.
  bool bernoulli(double p) { return uniform_double() < p; }
  /// Gamma(a, 1) (Marsaglia and Tsang; below a = 1 boosted with U^(1/a)). Precondition: a > 0.
  double gamma(double a);
  /// Beta(a, b) as G_a / (G_a + G_b). Precondition: a, b > 0.
  double beta(double a, double b);
  /// A Dirichlet(alpha, ..., alpha) draw of out.size() weights (normalised gamma variates in
  /// double, stored as float32 as torch's and numpy's float32 casts give them).
  void dirichlet(double alpha, std::span<float> out);

 private:
  void refill() {
    block_ = philox4x32(ctr_, key_);
    ++ctr_[3];  // the low 16 bits of word 3 count blocks; the high 16 bits hold the attempt
    used_ = 0;
  }

  std::array<uint32_t, 2> key_;
  std::array<uint32_t, 4> ctr_;
  std::array<uint32_t, 4> block_{};
  int used_ = 4;
};

}  // namespace hdl
HDL_API_END
