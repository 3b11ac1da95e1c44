#include "pipeline/detail/autotune.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#if defined(__linux__)
#include <sched.h>
#endif

namespace hdl::detail {
namespace {

// The cgroup CPU quota in CPUs (rounded up), or 0 when none is set or readable.
int cgroup_cpu_limit() {
  // cgroup v2: "max 100000" or "200000 100000" (quota period) in the process's cgroup.
  std::ifstream self("/proc/self/cgroup");
  std::string line, v2_path;
  while (std::getline(self, line))
    if (line.rfind("0::", 0) == 0) v2_path = line.substr(3);
  auto quota_cpus = [](double quota, double period) {
    return quota > 0 && period > 0 ? static_cast<int>(std::ceil(quota / period)) : 0;
  };
  for (const std::string& dir : {std::string("/sys/fs/cgroup") + v2_path, std::string("/sys/fs/cgroup")}) {
    std::ifstream f(dir + "/cpu.max");
    std::string quota;
    double period = 0;
    if (f >> quota >> period) return quota == "max" ? 0 : quota_cpus(std::atof(quota.c_str()), period);
  }
  // cgroup v1 (cfs): quota -1 means none.
  std::ifstream q("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"), p("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
  double quota = 0, period = 0;
  if (q >> quota && p >> period) return quota_cpus(quota, period);
  return 0;
}

}  // namespace
}  // namespace hdl::detail

namespace hdl {

int available_cpus() {
  int cpus = 0;
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cpus = CPU_COUNT(&set);
#endif
  if (cpus <= 0) cpus = static_cast<int>(std::thread::hardware_concurrency());
  if (const int quota = detail::cgroup_cpu_limit(); quota > 0) cpus = std::min(cpus > 0 ? cpus : quota, quota);
  return std::max(1, cpus);
}

}  // namespace hdl

namespace hdl::detail {

ThreadTuner::ThreadTuner(int start, int max, Clock::time_point now)
    : threads_(std::clamp(start, 1, std::max(1, max))), max_(std::max(1, max)), ceiling_(max_) {
  begin_window(now, 0, 0);
}

void ThreadTuner::begin_window(Clock::time_point now, uint64_t samples_done, uint64_t wait_nanos) {
  t0_ = now;
  samples0_ = samples_done;
  wait0_ = wait_nanos;
}

int ThreadTuner::observe(Clock::time_point now, uint64_t samples_done, uint64_t wait_nanos) {
  const double seconds = std::chrono::duration<double>(now - t0_).count();
  const uint64_t samples = samples_done - samples0_;
  // A window needs time and a few samples per thread, so one slow sample does not decide.
  if (seconds < std::chrono::duration<double>(kWindow).count() || samples < 4u * static_cast<uint64_t>(threads_))
    return threads_;
  const double rate = static_cast<double>(samples) / seconds;
  const double wait_share = static_cast<double>(wait_nanos - wait0_) * 1e-9 / seconds;
  const bool waiting = wait_share >= kWaitShare;
  bool grow = waiting;
  if (probing_) {
    probing_ = false;
    // One more thread ideally adds 1/(n-1) of the rate; a tenth of that (at least 2%) counts
    // as a rise, less is noise or contention. Low, because the costs are lopsided: threads are
    // capped at the CPUs there are, so keeping one that does not help costs little, while
    // dropping one that does (a noisy window on a busy machine) costs up to 1/n of the rate
    // until the retry. A consumer that stopped waiting is served.
    const double wanted = std::max(0.02, 0.10 / std::max(1, threads_ - 1));
    if (waiting && rate < rate_before_ * (1.0 + wanted)) {
      --threads_;
      if (failed_at_ == threads_) retry_after_ = std::min(2 * retry_after_, kMaxRetryWindows);  // again
      ceiling_ = failed_at_ = threads_;
      windows_since_fail_ = 0;
      grow = false;
    } else if (waiting) {
      retry_after_ = kRetryWindows;
    }
  }
  if (grow && threads_ < max_) {  // an accepted step may be followed by the next at once
    if (threads_ >= ceiling_ && ++windows_since_fail_ >= retry_after_) ceiling_ = max_;
    if (threads_ < ceiling_) {
      rate_before_ = rate;
      ++threads_;
      probing_ = true;
    }
  }
  begin_window(now, samples_done, wait_nanos);
  return threads_;
}

PrefetchTuner::PrefetchTuner(int start, size_t budget) : depth_(std::max(1, start)), budget_(budget) {}

int PrefetchTuner::max_depth(size_t batch_bytes) const {
  if (batch_bytes == 0) return kMaxDepth;
  return static_cast<int>(std::clamp<size_t>(budget_ / batch_bytes, 1, kMaxDepth));
}

int PrefetchTuner::observe(int ready_on_arrival, size_t batch_bytes) {
  const int limit = max_depth(batch_bytes);
  if (depth_ > limit) depth_ = limit;  // batches turned out bigger than first thought
  if (upswing_) {
    if (ready_on_arrival >= depth_) upswing_ = false;  // the buffer filled: the producer kept up
  } else if (ready_on_arrival == 0 && depth_ < limit) {
    ++depth_;  // it kept up, then fell behind: variable batch times; a deeper buffer absorbs them
    upswing_ = true;
  }
  return depth_;
}

}  // namespace hdl::detail
