#include "pipeline/tools/bench_report.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "media/text.h"

namespace hdl::tools {
namespace {

double seconds_of(const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) * 1e-6; }

std::string format(const char* fmt, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), fmt, args...);
  return buf;
}

std::string hms(double s) {
  if (!(s >= 0) || s > 1e7) return "--:--";
  const long t = std::lround(s);
  return t >= 3600 ? format("%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60) : format("%02ld:%02ld", t / 60, t % 60);
}

// The report's stages. Operator time is summed over worker threads; the fused image_decoder's
// time includes its crop and resize (they happen inside the decode).
struct Stages {
  double read = 0, decode = 0, augment = 0, batch = 0, copy = 0;
};

Stages stages_of(const BenchResult& r) {
  Stages s;
  for (const OperatorStats& op : r.stats.operators) {
    if (op.op == "file_reader" || op.op == "webdataset_reader") s.read += op.seconds;
    else if (op.op == "image_decoder" || op.op == "video_reader" || op.op == "video_decoder") s.decode += op.seconds;
    else s.augment += op.seconds;
  }
  // Batching: the consumer's time in next() that was not spent waiting for workers (taking the
  // finished batch, scheduling the next one, allocating its buffers).
  s.batch = std::max(0.0, r.next_s - r.stats.consumer_wait_seconds);
  s.copy = r.copy_s;
  return s;
}

double measured_rate(const BenchResult& r, double amount) { return r.measured_s > 0 ? amount / r.measured_s : 0; }

double steady_rate(const BenchResult& r, double amount) { return r.steady_s > 0 ? amount / r.steady_s : 0; }

// The first epoch's rate, start-up included (its clock starts when the Pipeline is built).
double first_epoch_rate(const BenchResult& r) {
  if (r.epochs.empty() || r.epochs[0].seconds <= 0) return 0;
  return double(r.epochs[0].images) / r.epochs[0].seconds;
}

double cpu_seconds(const ResourceUsage& a, const ResourceUsage& b) {
  return (b.user_s - a.user_s) + (b.system_s - a.system_s);
}

double rss_bound_mb(const BenchResult& r) {
  return double(r.stats.autotune_prefetch_depth + 2) * double(r.batch_bytes) / 1e6 + 150.0;
}

}  // namespace

ResourceUsage ResourceUsage::now() {
  ResourceUsage u;
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  u.user_s = seconds_of(ru.ru_utime);
  u.system_s = seconds_of(ru.ru_stime);
  u.peak_rss_mb = double(ru.ru_maxrss) * 1024.0 / 1e6;  // ru_maxrss is in KiB on Linux; MB = 1e6 bytes
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  if (statm >> pages >> resident) u.rss_mb = double(resident) * double(sysconf(_SC_PAGESIZE)) / 1e6;
  return u;
}

ProgressBar::ProgressBar(bool enabled, int64_t total_images, bool tty)
    : enabled_(enabled), tty_(tty), total_(total_images), start_(Clock::now()), last_draw_(start_) {}

void ProgressBar::update(int64_t images, bool final) {
  if (!enabled_) return;
  const auto now = Clock::now();
  const double since_draw = std::chrono::duration<double>(now - last_draw_).count();
  if (!final && since_draw < (tty_ ? 0.1 : 5.0)) return;
  last_draw_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double rate = elapsed > 0 ? double(images) / elapsed : 0;
  const double frac = total_ > 0 ? std::min(1.0, double(images) / double(total_)) : 0;
  const double eta = rate > 0 ? double(std::max<int64_t>(total_ - images, 0)) / rate : -1;
  constexpr int kWidth = 30;
  std::string bar(size_t(frac * kWidth), '#');
  bar.resize(kWidth, '.');
  std::fprintf(stderr, "%s[%s] %3.0f%% %lld/%lld images  %.0f images/s  elapsed %s  ETA %s%s",
               tty_ ? "\r" : "", bar.c_str(), frac * 100, static_cast<long long>(images),
               static_cast<long long>(total_), rate, hms(elapsed).c_str(), hms(final ? 0 : eta).c_str(),
               tty_ && !final ? "\x1b[K" : "\n");
  std::fflush(stderr);
}

std::string text_report(const BenchResult& r) {
  const Stages s = stages_of(r);
  const double ips = measured_rate(r, double(r.measured_images));
  const double cpu = cpu_seconds(r.usage_measure, r.usage_end);
  const double util = r.measured_s > 0 ? cpu / r.measured_s : 0;
  std::string t;
  t += format("hdl-bench %s over %s: %lld images, %lld classes\n", r.args.pipeline.c_str(), printable(r.args.data).c_str(),
              static_cast<long long>(r.dataset_images), static_cast<long long>(r.classes));
  const bool auto_threads = r.args.threads == PipelineOptions::kAuto;
  const bool auto_prefetch = r.args.prefetch == PipelineOptions::kAuto;
  t += format("  batch %lld, %d threads%s (%d cores), prefetch %d%s, device %s%s, seed %llu\n",
              static_cast<long long>(r.args.batch_size), r.threads, auto_threads ? " (autotuned)" : "", r.cores,
              r.stats.autotune_prefetch_depth, auto_prefetch ? " (autotuned)" : "", r.args.device.c_str(),
              r.args.device != "cpu" && r.args.decoder == "hardware" ? " (JPEGs on its hardware engines)" : "",
              static_cast<unsigned long long>(r.args.seed));
  for (const std::string& o : r.output_desc) t += "  output " + o + "\n";
  if (r.video)
    t += format("video:             %.2f clips/s, %.1f frames/s (%lld clips of %lld videos per epoch)\n", ips,
                measured_rate(r, double(r.measured_frames)), static_cast<long long>(r.dataset_images),
                static_cast<long long>(r.dataset_files));
  t += format("throughput:        %.1f images/s, %.1f MB/s of input (%lld images in %.2f s after %lld warm-up batches)\n",
              ips, measured_rate(r, double(r.measured_input_bytes)) / 1e6, static_cast<long long>(r.measured_images),
              r.measured_s, static_cast<long long>(r.batches - r.measured_batches));
  t += format("time to first batch: %.3f s (building the pipeline: %.3f s)\n", r.first_batch_s, r.build_s);
  const char* unit = r.video ? "clips" : "images";
  if (r.steady_batches > 0)
    t += format("steady state:      %.1f %s/s after the first epoch (%lld %s in %.2f s)%s; first epoch %.1f %s/s "
                "from building the pipeline\n",
                steady_rate(r, double(r.steady_images)), unit, static_cast<long long>(r.steady_images), unit,
                r.steady_s, r.video ? format(", %.1f frames/s", steady_rate(r, double(r.steady_frames))).c_str() : "",
                first_epoch_rate(r), unit);
  else
    t += "steady state:      not measured (no batch after the first epoch: run --epochs 2 or more)\n";
  t += format("CPU utilization:   %.2f of %d cores (%.0f%%), user %.1f s, system %.1f s\n", util, r.cores,
              r.cores ? 100 * util / r.cores : 0, r.usage_end.user_s - r.usage_measure.user_s,
              r.usage_end.system_s - r.usage_measure.system_s);
  t += format("peak RSS:          %.1f MB (bound (prefetch + 2) x %.1f MB batch + 150 MB = %.1f MB)\n",
              r.usage_end.peak_rss_mb, double(r.batch_bytes) / 1e6, rss_bound_mb(r));
  const double work = s.read + s.decode + s.augment;
  // Per image: over every sample the workers processed (prefetched ones included).
  const uint64_t processed = r.stats.operators.empty() ? 0 : r.stats.operators[0].samples;
  const double per_image = processed > 0 ? 1e6 / double(processed) : 0;
  t += "stages (worker time summed over threads; consumer time for batch and copy):\n";
  auto line = [&](const char* name, double sec, bool worker) {
    t += format("  %-8s %8.2f s  %7.1f us/image%s\n", name, sec, sec * per_image,
                worker && work > 0 ? format("  %4.1f%%", 100 * sec / work).c_str() : "");
  };
  line("read", s.read, true);
  line("decode", s.decode, true);
  line("augment", s.augment, true);
  line("batch", s.batch, false);
  line("copy", s.copy, false);
  t += format("  consumer waited %.2f s of %.2f s\n", r.stats.consumer_wait_seconds, r.total_s);
  if (r.stats.device_pool.bytes_allocated > 0)
    t += format("  memory: %.1f MB pinned host, %.1f MB device (pools; the copy line is the wait for device batches)\n",
                double(r.stats.pool.bytes_allocated) / 1e6, double(r.stats.device_pool.bytes_allocated) / 1e6);
  for (const OperatorStats& op : r.stats.operators) {
    t += format("    %-12s %-22s %8llu samples %8.1f us/sample\n", op.name.c_str(), op.op.c_str(),
                static_cast<unsigned long long>(op.samples), op.samples ? op.seconds * 1e6 / double(op.samples) : 0.0);
    if (!op.counters.empty()) {
      t += "      ";
      for (const auto& [name, value] : op.counters) t += format(" %s %lld", name.c_str(), static_cast<long long>(value));
      t += "\n";
    }
  }
  t += format("failures:          %llu (replaced %llu)\n", static_cast<unsigned long long>(r.stats.failures),
              static_cast<unsigned long long>(r.stats.replaced));
  for (const std::string& e : r.stats.recent_errors) t += "  error: " + e + "\n";
  if (r.epochs.size() > 1) {
    t += "epochs:";
    for (const EpochRecord& e : r.epochs)
      t += format(" [%lld: %.0f images/s, RSS %.0f MB]", static_cast<long long>(e.epoch),
                  e.seconds > 0 ? double(e.images) / e.seconds : 0.0, e.rss_mb);
    t += "\n";
  }
  return t;
}

std::string json_report(const BenchResult& r) {
  using nlohmann::json;
  const Stages s = stages_of(r);
  const double cpu = cpu_seconds(r.usage_measure, r.usage_end);
  json j;
  j["tool"] = "hdl-bench";
  j["pipeline"] = r.args.pipeline;
  j["data"] = printable(r.args.data);
  j["dataset_images"] = r.dataset_images;
  j["classes"] = r.classes;
  j["options"] = {{"batch_size", r.args.batch_size}, {"threads", r.threads}, {"cores", r.cores},
                  {"prefetch", r.stats.autotune_prefetch_depth}, {"epochs", r.args.epochs}, {"iterations", r.args.iterations},
                  {"warmup", r.args.warmup}, {"device", r.args.device}, {"decoder", r.args.decoder}, {"dtype", r.args.dtype},
                  {"layout", r.args.layout}, {"seed", r.args.seed}, {"dct_scaling", r.args.dct_scaling},
                  {"jpeg_index_mb", r.args.jpeg_index_mb}};
  // With --autotune (or --threads / --prefetch auto): what the tuner chose, in use at the end.
  j["autotune"] = {{"threads", r.args.threads == PipelineOptions::kAuto},
                   {"prefetch", r.args.prefetch == PipelineOptions::kAuto},
                   {"autotune_threads", r.stats.autotune_threads},
                   {"autotune_prefetch_depth", r.stats.autotune_prefetch_depth}};
  j["outputs"] = r.output_desc;
  j["batches"] = r.batches;
  j["images"] = r.images;
  j["measured_images"] = r.measured_images;
  j["measured_seconds"] = r.measured_s;
  j["images_per_s"] = measured_rate(r, double(r.measured_images));
  if (r.video) {
    j["dataset_videos"] = r.dataset_files;
    j["clips_per_s"] = measured_rate(r, double(r.measured_images));
    j["measured_frames"] = r.measured_frames;
    j["frames_per_s"] = measured_rate(r, double(r.measured_frames));
  }
  j["input_mb_per_s"] = measured_rate(r, double(r.measured_input_bytes)) / 1e6;
  j["build_seconds"] = r.build_s;
  j["time_to_first_batch_s"] = r.first_batch_s;
  // Steady state: the batches after the first epoch's end (null in a one-epoch run).
  j["first_epoch_images_per_s"] = first_epoch_rate(r);
  if (r.steady_batches > 0) {
    j["steady_images_per_s"] = steady_rate(r, double(r.steady_images));
    j["steady_images"] = r.steady_images;
    j["steady_seconds"] = r.steady_s;
    if (r.video) j["steady_frames_per_s"] = steady_rate(r, double(r.steady_frames));
  } else {
    j["steady_images_per_s"] = nullptr;
  }
  j["total_seconds"] = r.total_s;
  j["stages_seconds"] = {{"read", s.read}, {"decode", s.decode}, {"augment", s.augment},
                         {"batch", s.batch}, {"copy", s.copy}};
  j["consumer_wait_seconds"] = r.stats.consumer_wait_seconds;
  json ops = json::array();
  for (const OperatorStats& op : r.stats.operators) {
    json counters = json::object();
    for (const auto& [name, value] : op.counters) counters[name] = value;
    ops.push_back({{"name", op.name}, {"op", op.op}, {"samples", op.samples}, {"failures", op.failures},
                   {"seconds", op.seconds}, {"counters", counters}});
  }
  j["operators"] = ops;
  j["cpu"] = {{"user_seconds", r.usage_end.user_s - r.usage_measure.user_s},
              {"system_seconds", r.usage_end.system_s - r.usage_measure.system_s},
              {"cores_used", r.measured_s > 0 ? cpu / r.measured_s : 0.0},
              {"utilization", r.measured_s > 0 && r.cores ? cpu / r.measured_s / r.cores : 0.0}};
  j["memory"] = {{"peak_rss_mb", r.usage_end.peak_rss_mb}, {"rss_mb", r.usage_end.rss_mb},
                 {"batch_mb", double(r.batch_bytes) / 1e6}, {"rss_bound_mb", rss_bound_mb(r)},
                 {"within_bound", r.usage_end.peak_rss_mb <= rss_bound_mb(r)}};
  json epochs = json::array();
  for (const EpochRecord& e : r.epochs)
    epochs.push_back({{"epoch", e.epoch}, {"images", e.images}, {"seconds", e.seconds},
                      {"images_per_s", e.seconds > 0 ? double(e.images) / e.seconds : 0.0},
                      {"rss_mb", e.rss_mb}, {"peak_rss_mb", e.peak_rss_mb}});
  j["epochs"] = epochs;
  j["failures"] = r.stats.failures;
  j["replaced"] = r.stats.replaced;
  j["recent_errors"] = r.stats.recent_errors;
  j["pool"] = {{"acquires", r.stats.pool.acquires}, {"allocations", r.stats.pool.allocations},
               {"bytes_allocated", r.stats.pool.bytes_allocated}};
  j["device_pool"] = {{"acquires", r.stats.device_pool.acquires}, {"allocations", r.stats.device_pool.allocations},
                      {"bytes_allocated", r.stats.device_pool.bytes_allocated}};
  return j.dump(2) + "\n";
}

}  // namespace hdl::tools
