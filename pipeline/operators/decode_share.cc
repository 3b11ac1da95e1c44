#include "pipeline/operators/decode_share.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "pipeline/random.h"

namespace hdl {
namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("DecodeShare: " + what);
}

double blend(double average, double sample, double weight) {
  return average > 0 ? average + weight * (sample - average) : sample;
}

}  // namespace

DecodeShare::DecodeShare(const DecodeShareOptions& o) : options_(o) {
  const bool fixed = o.fixed_cpu_share >= 0;
  require(!fixed || o.fixed_cpu_share <= 1, "fixed_cpu_share must be in [0, 1], got " + std::to_string(o.fixed_cpu_share));
  require(o.min_cpu_share >= 0 && o.min_cpu_share <= o.max_cpu_share && o.max_cpu_share <= 1,
          "need 0 <= min_cpu_share <= max_cpu_share <= 1");
  require(o.initial_cpu_share >= 0 && o.initial_cpu_share <= 1, "initial_cpu_share must be in [0, 1]");
  require(o.max_step > 0 && o.max_step <= 1, "max_step must be in (0, 1]");
  require(o.smoothing > 0 && o.smoothing <= 1, "smoothing must be in (0, 1]");
  require(o.cpu_threads >= 1, "cpu_threads must be >= 1");
  share_.store(fixed ? o.fixed_cpu_share : std::clamp(o.initial_cpu_share, o.min_cpu_share, o.max_cpu_share));
}

bool DecodeShare::to_cpu(uint64_t key) const {
  // The top 53 bits of SplitMix64's mix as a uniform double in [0, 1): neighbouring keys
  // (positions) give unrelated values.
  const double u = static_cast<double>(mix64(key) >> 11) * 0x1.0p-53;
  return u < cpu_share();
}

void DecodeShare::set_cpu_threads(int threads) {
  std::lock_guard lock(mu_);
  options_.cpu_threads = std::max(1, threads);
}

void DecodeShare::record_cpu(int64_t images, double cpu_seconds) {
  if (images <= 0 || !(cpu_seconds >= 0)) return;
  std::lock_guard lock(mu_);
  cpu_images_ += images;
  cpu_seconds_ += cpu_seconds;
}

void DecodeShare::end_batch(int64_t images, double seconds) {
  std::lock_guard lock(mu_);
  ++batches_;
  const double w = options_.smoothing;
  if (cpu_images_ > 0) cpu_cost_ = blend(cpu_cost_, cpu_seconds_ / static_cast<double>(cpu_images_), w);
  cpu_images_ = 0;
  cpu_seconds_ = 0;
  if (images > 0 && seconds > 0) hw_cost_ = blend(hw_cost_, seconds / static_cast<double>(images), w);
  if (options_.fixed_cpu_share >= 0 || cpu_cost_ <= 0 || hw_cost_ <= 0) return;
  const double cpu_rate = options_.cpu_threads / cpu_cost_, hw_rate = 1 / hw_cost_;
  const double target = std::clamp(cpu_rate / (cpu_rate + hw_rate), options_.min_cpu_share, options_.max_cpu_share);
  const double now = share_.load(std::memory_order_relaxed);
  share_.store(std::clamp(target, now - options_.max_step, now + options_.max_step), std::memory_order_relaxed);
}

DecodeShare::Stats DecodeShare::stats() const {
  std::lock_guard lock(mu_);
  return {cpu_share(), cpu_cost_, hw_cost_, batches_};
}

}  // namespace hdl
