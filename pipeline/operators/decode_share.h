// DecodeShare: for a JPEG the device's hardware decoder could take, which engine decodes it —
// the hardware (in the batch's one batched call) or a CPU thread (libjpeg-turbo, where ROI
// decode and the JPEG index make a random crop cheap) — so that both finish a batch together.
// Used by image_decoder in the mixed stage (its only user; internal to pipeline/operators,
// not installed).
//
// The share of eligible images sent to the CPU follows the measured rates of both engines:
//
//   cpu_share = r_cpu / (r_cpu + r_hw),  r_cpu = cpu_threads / (CPU seconds per image),
//                                        r_hw  = images / (hardware seconds per batch)
//
// which makes the CPU's part of a batch (cpu_share * n images over cpu_threads threads) take
// as long as the hardware's ((1 - cpu_share) * n images). Each per-image cost is a moving
// average over batches (`smoothing`: the newest batch's weight); the share moves by at most
// `max_step` per batch (one slow batch, a page-cache miss, does not swing it), and stays in
// [min_cpu_share, max_cpu_share]: above zero so the CPU's cost keeps being measured. Until
// both engines have been measured the share is `initial_cpu_share`. DALI fixes this split by
// hand (hw_decoder_load, default 0.65 to the hardware); `fixed_cpu_share` does the same here
// (fixed_cpu_share = 1 - hw_decoder_load) and turns adaptation off.
//
// to_cpu(key) is a pure function of (key, share): a sample goes to the CPU when a hash of its
// key (the caller's seed, epoch and position) falls below the share. A fixed share therefore
// routes every sample the same way every run, and so gives the same pixels (nvJPEG's differ
// from libjpeg-turbo's by a level or two); an adaptive share depends on timing, and so do the
// routes (docs/CUDA.md).
//
// Thread safety: to_cpu(), cpu_share(), record_cpu() and stats() from any thread;
// end_batch() from one thread at a time (the device stage).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include "media/api.h"

HDL_API_BEGIN
namespace hdl {

struct DecodeShareOptions {
  double fixed_cpu_share = -1;    ///< in [0, 1]: this share, always; < 0: adaptive
  double initial_cpu_share = 0.25;
  double min_cpu_share = 1.0 / 64;
  double max_cpu_share = 1.0;
  double max_step = 0.1;          ///< the most the share moves per batch
  double smoothing = 0.3;         ///< weight of the newest batch in the per-image costs
  int cpu_threads = 1;            ///< threads that decode the CPU's part
};

class DecodeShare {
 public:
  /// Throws std::invalid_argument for options out of range (a share outside [0, 1], min above
  /// max, a step or smoothing outside (0, 1], fewer than one thread).
  explicit DecodeShare(const DecodeShareOptions& options);

  /// Whether the sample with this key goes to a CPU thread.
  bool to_cpu(uint64_t key) const;
  double cpu_share() const { return share_.load(std::memory_order_relaxed); }

  /// The threads that decode the CPU's part (the pipeline's, known once it runs); >= 1.
  void set_cpu_threads(int threads);
  /// A CPU thread decoded `images` eligible images in `cpu_seconds` of its time.
  void record_cpu(int64_t images, double cpu_seconds);
  /// The hardware decoded a batch's `images` in `seconds`; the CPU measurements recorded since
  /// the last call belong to the same batch. Updates the share (adaptive mode).
  void end_batch(int64_t images, double seconds);

  struct Stats {
    double cpu_share = 0;
    double cpu_seconds_per_image = 0;       ///< moving average (0: not measured yet)
    double hardware_seconds_per_image = 0;  ///< moving average (0: not measured yet)
    uint64_t batches = 0;                   ///< end_batch() calls
  };
  Stats stats() const;

 private:
  DecodeShareOptions options_;
  std::atomic<double> share_;
  mutable std::mutex mu_;  // guards what follows
  int64_t cpu_images_ = 0;
  double cpu_seconds_ = 0;
  double cpu_cost_ = 0, hw_cost_ = 0;  // seconds per image, moving averages
  uint64_t batches_ = 0;
};

}  // namespace hdl
HDL_API_END
