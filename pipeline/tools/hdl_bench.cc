// hdl-bench: runs a named pipeline (resnet-train, resnet-eval, decode) or a JSON pipeline spec
// over an ImageFolder or a file list, with a live progress bar on stderr, and reports images/s,
// MB/s of input, a per-stage time breakdown, CPU utilization, peak RSS, time to first batch and
// failures (text, or --json for scripts). `hdl-bench --help` lists the options.
//
//   hdl-bench resnet-train data/train --batch-size 256 --threads 8 --epochs 3
//   hdl-bench my_pipeline.json files.txt --iterations 100 --json
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <thread>

#include "decoders/nvjpeg/nvjpeg_hardware.h"
#include "decoders/video_decoder.h"
#include "media/cuda/allocator.h"
#include "media/cuda/runtime.h"
#include "media/cuda/stream.h"
#include "media/text.h"
#include "media/url_file_system.h"
#include "pipeline/pipeline.h"
#include "pipeline/tools/bench_args.h"
#include "pipeline/tools/bench_pipelines.h"
#include "pipeline/tools/bench_report.h"

namespace hdl::tools {
namespace {

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Sizes of the dataset's files, looked up the first time a sample is consumed.
class InputBytes {
 public:
  explicit InputBytes(const Dataset& d) : dataset_(d), sizes_(size_t(d.size()), -1) {}
  int64_t of(const PipelineOutput& out) {
    int64_t total = 0;
    for (int64_t i : out.dataset_indices) {
      if (i < 0) continue;
      int64_t& s = sizes_[size_t(i)];
      if (s < 0) s = size_of(i);
      total += s;
    }
    return total;
  }

 private:
  // Sample i's file size; a sample inside a tar shard ("shard.tar/key") counts its share of
  // the shard (the shard's size over its samples).
  int64_t size_of(int64_t i) {
    const std::string path = dataset_.path(i);
    std::error_code ec;
    const auto n = std::filesystem::file_size(path, ec);
    if (!ec) return static_cast<int64_t>(n);
    const size_t tar = path.find(".tar/");
    if (tar == std::string::npos) return 0;
    if (shard_share_.empty()) {  // once: every shard's size and sample count
      std::map<std::string, std::pair<int64_t, int64_t>> shards;  // shard -> (bytes, samples)
      for (int64_t j = 0; j < dataset_.size(); ++j) {
        const std::string p = dataset_.path(j);
        const size_t t = p.find(".tar/");
        if (t == std::string::npos) continue;
        auto [it, added] = shards.try_emplace(p.substr(0, t + 4), 0, 0);
        if (added) {
          if (is_remote_url(it->first)) {  // a shard in an object store: its HEAD's size
            auto f = default_file_system()->open(it->first);
            it->second.first = f.is_ok() ? (*f)->size() : 0;
          } else {
            std::error_code e;
            const auto bytes = std::filesystem::file_size(it->first, e);
            it->second.first = e ? 0 : static_cast<int64_t>(bytes);
          }
        }
        it->second.second += 1;
      }
      for (const auto& [shard, bs] : shards) shard_share_[shard] = bs.first / std::max<int64_t>(bs.second, 1);
    }
    auto it = shard_share_.find(path.substr(0, tar + 4));
    return it == shard_share_.end() ? 0 : it->second;
  }

  const Dataset& dataset_;
  std::vector<int64_t> sizes_;
  std::map<std::string, int64_t> shard_share_;  // tar shard -> bytes per sample
};

std::string describe(const std::string& name, const Batch& b) {
  std::string s = name;
  s += ": ";
  s += b.is_dense() ? b.as_tensor().shape().to_string() : "ragged x" + std::to_string(b.size());
  s += " ";
  s += dtype_name(b.dtype());
  if (b.is_dense()) {
    s += " ";
    s += layout_name(b.layout());
  }
  return s;
}

size_t batch_bytes(const PipelineOutput& out) {
  size_t bytes = 0;
  for (const Batch& b : out.outputs)
    if (b.is_dense()) bytes += b.as_tensor().num_bytes();
  return bytes;
}

// Video frames in a batch: the frames dim of the first output (a clip), or, for a decode-only
// pipeline, the sum of its frame counts (int64 scalars; a device batch's copied to the host:
// a pipeline with a mixed stage hands out device batches only). 0 for images.
int64_t frames_of(const PipelineOutput& out) {
  if (out.outputs.empty()) return 0;
  const Batch& b = out.outputs[0];
  const bool counts = b.dtype() == DType::kI64 && b.size() > 0 && b.sample_shape(0).ndim() == 0;
  if (counts && b.device_sync()) {
    static Result<cuda::Stream> stream = cuda::Stream::create(b.as_tensor().device());
    if (!stream.is_ok() || !b.device_sync()->wait_ready(*stream).is_ok()) return 0;
    const Tensor dev = b.as_tensor();
    Tensor host = Tensor::empty(dev.shape(), dev.dtype(), dev.layout(), cuda::pinned_host_allocator());
    Result<cuda::Event> done = cuda::copy_async(dev.view(), host.view(), *stream);
    if (!done.is_ok() || !done->synchronize().is_ok()) return 0;
    int64_t frames = 0;
    for (int64_t k = 0; k < host.num_elements(); ++k) frames += host.typed<int64_t>()[k];
    return frames;
  }
  int64_t frames = 0;
  for (int64_t i = 0; i < b.size(); ++i) {
    const Shape s = b.sample_shape(i);
    switch (b.layout()) {
      case Layout::kFHWC: case Layout::kFCHW: frames += s[0]; break;
      case Layout::kCFHW: frames += s[1]; break;
      default:
        if (counts) frames += *b.sample(i).typed<int64_t>();
    }
  }
  return frames;
}

int run(BenchArgs args) {
  PipelineOptions options;
  options.batch_size = args.batch_size;
  options.num_threads = args.threads;
  options.prefetch_depth = args.prefetch;
  options.seed = args.seed;
  // The run's length, so prefetch stops at its end (--iterations crosses epochs: no hint).
  if (args.iterations <= 0) options.epochs = args.epochs;
  options.on_error = args.skip_errors ? ErrorPolicy::kSkip : ErrorPolicy::kRaise;
  options.max_failures = args.max_failures;
  options.cache.dir = args.cache_dir;
  if (args.cache_limit > 0) options.cache.limit_bytes = args.cache_limit;
  if (args.device.rfind("cuda:", 0) == 0) {
    try {
      options.device_id = std::stoi(args.device.substr(5));
    } catch (const std::exception&) {
      throw ConfigError("--device " + args.device + ": expected cuda:N");
    }
  }
  if (args.device != "cpu") {
    if (Status st = cuda::require_device(Device::cuda(options.device_id)); !st.is_ok())
      throw ConfigError("--device " + args.device + ": " + st.message());
  }
  // --decoder auto: CPU threads (as HabanaDataLoader's decoder="auto": on an H200 the mixed
  // stage was the slower path, docs/CUDA.md); hardware: the JPEG engines (video: NVDEC), required.
  if (args.device == "cpu" && args.decoder == "hardware") throw ConfigError("--decoder hardware needs --device cuda");
  if (args.decoder == "hardware") {
    const bool video = args.pipeline == "video-decode" || args.pipeline == "video-train";
    const Status hw = video ? video_hardware_status(options.device_id) : NvjpegHardwareDecoder(options.device_id).status();
    if (!hw.is_ok()) throw ConfigError("--decoder hardware: " + hw.message());
  } else {
    args.decoder = "cpu";
  }
  const PipelineSpec spec = bench_spec(args);

  BenchResult r;
  r.args = args;
  r.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  r.usage_start = ResourceUsage::now();
  const auto t_build = Clock::now();
  Pipeline pipe(spec, options);
  r.build_s = since(t_build);
  r.threads = args.threads > 0 ? args.threads : r.cores;
  r.dataset_images = pipe.num_samples();  // clips for a video reader
  r.dataset_files = pipe.dataset().size();
  // A streaming webdataset_reader's dataset is its shards: its samples are not clips.
  bool shards = false;
  for (const NodeSpec& n : spec.nodes()) shards |= n.op == "webdataset_reader";
  r.video = (pipe.num_samples() != pipe.dataset().size() && !shards) || args.pipeline.rfind("video", 0) == 0;
  r.classes = static_cast<int64_t>(pipe.dataset().classes().size());
  const int64_t per_epoch = pipe.batches_per_epoch();
  const int64_t total_batches = args.iterations > 0 ? args.iterations : per_epoch * args.epochs;
  const int64_t expected_images =
      args.iterations > 0 ? args.iterations * args.batch_size : r.dataset_images * args.epochs;
  // File sizes stand for the input read when a sample is a file.
  const bool count_input = pipe.num_samples() == pipe.dataset().size();
  const bool tty = isatty(STDERR_FILENO) != 0;
  ProgressBar bar(args.progress == 1 || (args.progress == -1 && tty), expected_images, tty);
  InputBytes input(pipe.dataset());
  const std::vector<std::string> names = pipe.output_names();

  Clock::time_point t_measure = t_build, t_epoch = t_build, t_steady = t_build;
  int64_t epoch_images = 0, warmup = std::min(args.warmup, total_batches - 1);
  r.usage_measure = r.usage_start;
  while (r.batches < total_batches) {
    const auto t_next = Clock::now();
    std::optional<PipelineOutput> out = pipe.next();
    r.next_s += since(t_next);
    if (!out) {  // end of an epoch
      const ResourceUsage u = ResourceUsage::now();
      r.epochs.push_back({pipe.epoch() - 1, epoch_images, since(t_epoch), u.rss_mb, u.peak_rss_mb});
      t_epoch = Clock::now();
      if (r.epochs.size() == 1) t_steady = t_epoch;
      epoch_images = 0;
      if (per_epoch == 0) break;
      continue;
    }
    if (r.batches == 0) {
      r.first_batch_s = since(t_build);
      r.batch_bytes = batch_bytes(*out);
      for (size_t k = 0; k < out->outputs.size(); ++k) r.output_desc.push_back(describe(names[k], out->outputs[k]));
    }
    // Device batches: the bench is their consumer, so it waits for them on the host.
    const auto t_copy = Clock::now();
    for (const Batch& b : out->outputs) {
      if (!b.device_sync()) continue;
      if (Status st = b.device_sync()->ready().synchronize(); !st.is_ok())
        throw DataError(Status(st.code(), "gpu stage: " + st.message()));
    }
    r.copy_s += since(t_copy);
    const int64_t n = out->outputs.empty() ? 0 : out->outputs[0].size();
    ++r.batches;
    r.images += n;
    epoch_images += n;
    const bool steady = !r.epochs.empty(), measured = r.batches > warmup;
    const int64_t frames = r.video && (steady || measured) ? frames_of(*out) : 0;
    if (steady) {  // after the first epoch's end
      ++r.steady_batches;
      r.steady_images += n;
      r.steady_frames += frames;
      r.steady_s = since(t_steady);
    }
    if (measured) {
      ++r.measured_batches;
      r.measured_images += n;
      if (count_input) r.measured_input_bytes += input.of(*out);
      r.measured_frames += frames;
    }
    if (r.batches == warmup) {
      t_measure = Clock::now();
      r.usage_measure = ResourceUsage::now();
    }
    bar.update(r.images);
  }
  if (epoch_images > 0)  // stopped mid-epoch (--iterations)
    r.epochs.push_back({pipe.epoch(), epoch_images, since(t_epoch), ResourceUsage::now().rss_mb, ResourceUsage::now().peak_rss_mb});
  r.total_s = since(t_build);
  r.measured_s = since(t_measure);
  r.usage_end = ResourceUsage::now();
  r.stats = pipe.stats();
  r.threads = r.stats.autotune_threads;  // in use at the end: the tuner's choice with auto
  bar.update(r.images, /*final=*/true);
  const std::string report = args.json ? json_report(r) : text_report(r);
  std::fputs(report.c_str(), stdout);
  return 0;
}

}  // namespace
}  // namespace hdl::tools

int main(int argc, char** argv) {
  const hdl::tools::BenchArgs args = hdl::tools::parse_bench_args(argc, argv);
  try {
    return hdl::tools::run(args);
  } catch (const hdl::ConfigError& e) {
    std::fprintf(stderr, "hdl-bench: configuration error: %s\n", hdl::printable(e.what()).c_str());
    return 2;
  } catch (const hdl::DataError& e) {
    std::fprintf(stderr, "hdl-bench: %s\n(--skip-errors replaces unreadable samples; --max-failures N raises its budget)\n",
                 hdl::printable(e.what()).c_str());
    return 1;
  }
}
