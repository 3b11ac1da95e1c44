// hdl-bench's measurements: process resource use, the live progress bar, and the final report
// (text or JSON).
//
// Internal to pipeline/tools (not installed). Thread safety: used by the consumer thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "media/api.h"
#include "pipeline/pipeline.h"
#include "pipeline/tools/bench_args.h"

HDL_API_BEGIN
namespace hdl::tools {

using Clock = std::chrono::steady_clock;

/// CPU time and memory of this process, now.
struct ResourceUsage {
  double user_s = 0;          ///< user CPU seconds, all threads
  double system_s = 0;        ///< system CPU seconds, all threads
  double rss_mb = 0;          ///< resident set size now (/proc/self/statm)
  double peak_rss_mb = 0;     ///< peak resident set size (getrusage ru_maxrss)
  static ResourceUsage now();
};

/// A progress bar on stderr: images, images/s, elapsed, ETA. Redrawn in place on a TTY (at most
/// 10 times a second); one line every 5 seconds otherwise.
class ProgressBar {
 public:
  ProgressBar(bool enabled, int64_t total_images, bool tty);
  void update(int64_t images, bool final = false);

 private:
  bool enabled_, tty_;
  int64_t total_;
  Clock::time_point start_, last_draw_;
};

/// One epoch as the consumer saw it.
struct EpochRecord {
  int64_t epoch = 0;
  int64_t images = 0;
  double seconds = 0;
  double rss_mb = 0;        ///< resident memory at the end of the epoch
  double peak_rss_mb = 0;   ///< peak so far
};

/// Everything the final report says.
struct BenchResult {
  BenchArgs args;
  int threads = 0;                 ///< resolved
  int cores = 0;                   ///< hardware threads of the machine
  int64_t dataset_images = 0;      ///< samples per epoch: images, or clips of a video reader
  int64_t dataset_files = 0;       ///< files (videos) the reader walks
  bool video = false;              ///< a video pipeline: clips and frames are reported
  int64_t measured_frames = 0;     ///< video frames in the measured batches
  int64_t classes = 0;
  int64_t batches = 0;             ///< batches received
  int64_t images = 0;              ///< images received
  int64_t measured_batches = 0;    ///< after the warm-up
  int64_t measured_images = 0;
  int64_t measured_input_bytes = 0;
  double build_s = 0;              ///< constructing the Pipeline
  double first_batch_s = 0;        ///< constructing the Pipeline -> first batch in hand
  // Steady state: the batches received after the first epoch's end (next() returning nullopt
  // for epoch 0) up to the last batch. By then every file has been seen once: JPEG indexes
  // built, batch buffers touched, per-thread caches filled. None in a run of one epoch.
  int64_t steady_batches = 0;
  int64_t steady_images = 0;       ///< images (clips) in those batches
  int64_t steady_frames = 0;       ///< video frames in those batches
  double steady_s = 0;             ///< the first epoch's end -> last batch in hand
  double total_s = 0;              ///< constructing the Pipeline -> last batch in hand
  double measured_s = 0;           ///< end of the warm-up -> last batch in hand
  double next_s = 0;               ///< consumer time in next(), waiting included
  double copy_s = 0;               ///< copying batches to the device (0 on cpu)
  ResourceUsage usage_start, usage_measure, usage_end;
  size_t batch_bytes = 0;          ///< bytes of one full batch (all dense outputs)
  std::vector<EpochRecord> epochs;
  PipelineStats stats;
  std::vector<std::string> output_desc;  ///< "name: [shape] dtype" of the first batch
};

/// The text report (stdout) and the --json document.
std::string text_report(const BenchResult& r);
std::string json_report(const BenchResult& r);

}  // namespace hdl::tools
HDL_API_END
