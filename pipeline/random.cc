#include "pipeline/random.h"

#include <algorithm>
#include <numbers>
#include <vector>

namespace hdl {

std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kM0) * c[0];
    const uint64_t p1 = static_cast<uint64_t>(kM1) * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<uint32_t>(p0)};
    k[0] += kW0;
    k[1] += kW1;
  }
  return c;
}

uint64_t RandomStream::below(uint64_t n) {
  if (n <= 0xffffffffull) {
    const uint32_t n32 = static_cast<uint32_t>(n);
    uint64_t m = static_cast<uint64_t>(next_u32()) * n32;
    uint32_t low = static_cast<uint32_t>(m);
    if (low < n32) {
      const uint32_t threshold = static_cast<uint32_t>(-n32) % n32;
      while (low < threshold) {
        m = static_cast<uint64_t>(next_u32()) * n32;
        low = static_cast<uint32_t>(m);
      }
    }
    return m >> 32;
  }
  // Rare (n >= 2^32): rejection on 64 bits.
  const uint64_t limit = ~uint64_t(0) - (~uint64_t(0) % n);
  uint64_t x;
  do x = next_u64(); while (x >= limit);
  return x % n;
}

double RandomStream::normal() {
  double u1 = uniform_double();
  while (u1 <= 0.0) u1 = uniform_double();
  const double u2 = uniform_double();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

namespace {

// A uniform in (0, 1).
double open_uniform(RandomStream& rng) {
  double u = rng.uniform_double();
  while (u <= 0.0) u = rng.uniform_double();
  return u;
}

// log Gamma(a, 1): below a = 1 the boost U^(1/a) underflows double for small a (a = 1e-3: half
// the draws), so it is kept as a logarithm.
double log_gamma_variate(RandomStream& rng, double a) {
  if (a >= 1.0) return std::log(rng.gamma(a));
  return log_gamma_variate(rng, a + 1.0) + std::log(open_uniform(rng)) / a;
}

}  // namespace

double RandomStream::gamma(double a) {
  if (a < 1.0) return std::exp(log_gamma_variate(*this, a));
  const double d = a - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = normal();
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = open_uniform(*this);
    if (u < 1.0 - 0.0331 * x * x * x * x || std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

double RandomStream::beta(double a, double b) {
  if (a >= 1.0 && b >= 1.0) {
    const double x = gamma(a), y = gamma(b);
    return x / (x + y);
  }
  // Small shapes: the ratio of the variates from their logarithms (no underflow to 0 / 0).
  const double lx = log_gamma_variate(*this, a), ly = log_gamma_variate(*this, b), m = std::max(lx, ly);
  const double x = std::exp(lx - m), y = std::exp(ly - m);
  return x / (x + y);
}

void RandomStream::dirichlet(double alpha, std::span<float> out) {
  double g[64], sum = 0;
  const size_t n = out.size();
  std::vector<double> big(n > 64 ? n : 0);
  double* v = n > 64 ? big.data() : g;
  if (alpha >= 1.0) {
    for (size_t i = 0; i < n; ++i) sum += (v[i] = gamma(alpha));
  } else {  // normalised from the logarithms, as beta()
    double m = -HUGE_VAL;
    for (size_t i = 0; i < n; ++i) m = std::max(m, v[i] = log_gamma_variate(*this, alpha));
    for (size_t i = 0; i < n; ++i) sum += (v[i] = std::exp(v[i] - m));
  }
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(v[i] / sum);
}

void RandomStream::normal_fill(float* out, size_t n) {
  constexpr float kTwoPi = static_cast<float>(2.0 * std::numbers::pi);
  size_t i = 0;
  for (; i + 1 < n; i += 2) {
    const float u1 = 1.0f - uniform(), u2 = uniform();
    const float r = std::sqrt(-2.0f * std::log(u1)), t = kTwoPi * u2;
    out[i] = r * std::cos(t);
    out[i + 1] = r * std::sin(t);
  }
  if (i < n) out[i] = static_cast<float>(normal());
}

}  // namespace hdl
