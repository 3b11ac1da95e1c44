#include "pipeline/tools/bench_args.h"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "media/cache_file_system.h"

#include "pipeline/pipeline.h"

namespace hdl::tools {
namespace {

constexpr const char* kUsage = R"(usage: hdl-bench PIPELINE DATA [options]

Runs a pipeline over a dataset and reports throughput, a per-stage time breakdown, CPU use,
peak memory, time to first batch and failures.

PIPELINE  resnet-train  decode + RandomResizedCrop 224 + random flip + normalize (float32 NCHW)
          resnet-eval   decode + resize 256 + center crop 224 + normalize
          decode        decode only (ragged HWC uint8)
          video-decode  every frame of every video, decoded (no pixel conversion); reports frames/s
          video-train   clips of --frames frames --step apart at random + RandomResizedCrop --size
                        (112) + random flip + normalize (float32 [C, T, H, W]); clips/s and frames/s
          FILE.json     a pipeline spec (pipeline/spec_json.h); DATA replaces its reader's source
DATA      an ImageFolder root (root/<class>/<file>; videos for the video pipelines), a file
          list ("relative/path label" lines), or WebDataset tar shards for the image pipelines
          ("train-{000000..000099}.tar", "::"-joined lists; --file-root is their folder; compressed
          shards, "train-{000000..000099}.tar.gz", are read in streaming mode); a file list's
          paths may name members of plain tar shards ("v-00.tar/a/clip.mp4 3"), read in place

options:
  --batch-size N     samples per batch (256; video-decode 1, video-train 8)
  --threads N        worker threads, 0 = one per core (0); auto: tuned while it runs (the
                     report says what it chose)
  --prefetch N       batches prepared ahead of the consumer (2); auto: tuned within 1 GiB
  --autotune         --threads auto --prefetch auto (tf.data's AUTOTUNE; pipeline/pipeline.h)
  --epochs N         epochs to run (1)
  --iterations N     run N batches instead (crossing epoch boundaries)
  --warmup N         first N batches are left out of the throughput (1)
  --device D         cpu, or cuda[:N]: the named pipelines normalise on the gpu stage (and, with
                     --no-dct-scaling, resize there too), a JSON spec's gpu nodes run on cuda:N;
                     each batch is waited for on the host (the consumer here has no model)
  --decoder D        with --device cuda: auto or cpu (CPU threads: measured the faster path on
                     an H200, docs/CUDA.md), or hardware (the GPU's JPEG engines or NVDEC, CPU
                     threads sharing the load: the mixed stage; crops and resizes then run on
                     the gpu stage; required)
  --dtype T          image output dtype: float32, float16, bfloat16, uint8 (float32)
  --layout L         image output layout: CHW or HWC (CHW)
  --seed N           shuffling and augmentation seed (0)
  --size N           output side (224; video-train 112); --resize N: resnet-eval's shorter side (256)
  --frames N, --step N   video-train: frames per clip (16) and frame step (2)
  --sampler S        video-train's clip sampler: random (default), uniform or contiguous
  --metadata-cache F video pipelines: video_reader's metadata cache file (read, completed and
                     saved when the pipeline is built; a second run probes no video)
  --no-dct-scaling   decode at full scale (exact torchvision pixels; slower on large images)
  --jpeg-index-mb N  memory for JPEG entry-point indexes, which let later epochs skip the
                     Huffman decoding outside each crop (512; 0: off)
  --no-shuffle       read in dataset order
  --file-root DIR    root of a file list's relative paths (default: the list's folder)
  --skip-errors      replace unreadable samples (counted) instead of stopping
  --max-failures N   with --skip-errors: failed samples tolerated in all, then stop (100)
  --shard-mode MODE  tar shards: auto (streaming when a shard is compressed, else indexed),
                     indexed (every sample read where it lies) or streaming (each shard read
                     front to back through a shuffle buffer: for stores where a read costs a
                     request, such as an object store that reads the whole object per range)
  --shuffle-buffer N tar shards: a shuffle buffer of N samples (streaming: 0 is the reader's
                     1000; indexed: a bounded shuffle instead of the global permutation)
  --cache-dir DIR    cache remote (http(s)://, s3://) shards and files in DIR, shared by every
                     process naming it (default: $HDL_CACHE_DIR, else no cache); its hits,
                     misses, bytes and evictions appear in the reader's counters
  --cache-limit N    the most the cache holds: bytes, or 500M, 10G (10G)
  --json             print one JSON report on stdout
  --progress, --no-progress   force the live progress bar on stderr on / off (default: a TTY)
)";

[[noreturn]] void fail(const std::string& why) {
  std::fprintf(stderr, "hdl-bench: %s\n%s", why.c_str(), kUsage);
  std::exit(2);
}

}  // namespace

BenchArgs parse_bench_args(int argc, char** argv) {
  BenchArgs a;
  int positional = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto text = [&]() -> std::string {
      if (i + 1 >= argc) fail("missing value after " + arg);
      return argv[++i];
    };
    auto number = [&](long long lo) -> long long {
      const std::string v = text();
      char* end = nullptr;
      const long long n = std::strtoll(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n < lo) fail("bad value for " + arg + ": " + v);
      return n;
    };
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (arg == "--batch-size") a.batch_size = number(1), a.batch_size_given = true;
    else if (arg == "--frames") a.frames = number(1);
    else if (arg == "--step") a.step = number(1);
    else if (arg == "--sampler") {
      a.sampler = text();
      if (a.sampler != "random" && a.sampler != "uniform" && a.sampler != "contiguous")
        fail("--sampler must be random, uniform or contiguous, got \"" + a.sampler + "\"");
    }
    else if (arg == "--metadata-cache") a.metadata_cache = text();
    else if (arg == "--threads" || arg == "--prefetch") {
      const bool threads = arg == "--threads";
      if (i + 1 < argc && std::string(argv[i + 1]) == "auto") {
        ++i;
        (threads ? a.threads : a.prefetch) = PipelineOptions::kAuto;
      } else {
        (threads ? a.threads : a.prefetch) = static_cast<int>(number(threads ? 0 : 1));
      }
    }
    else if (arg == "--autotune") a.threads = a.prefetch = PipelineOptions::kAuto;
    else if (arg == "--epochs") a.epochs = static_cast<int>(number(1));
    else if (arg == "--iterations") a.iterations = number(1);
    else if (arg == "--warmup") a.warmup = number(0);
    else if (arg == "--device") {
      a.device = text();
      if (a.device != "cpu" && a.device != "cuda" && a.device.rfind("cuda:", 0) != 0)
        fail("--device must be cpu, cuda or cuda:N, got \"" + a.device + "\"");
    }
    else if (arg == "--dtype") a.dtype = text(), a.dtype_given = true;
    else if (arg == "--layout") a.layout = text(), a.dtype_given = true;
    else if (arg == "--seed") a.seed = static_cast<uint64_t>(number(0));
    else if (arg == "--size") a.size = static_cast<int>(number(1)), a.size_given = true;
    else if (arg == "--resize") a.resize = static_cast<int>(number(1));
    else if (arg == "--no-dct-scaling") a.dct_scaling = false;
    else if (arg == "--decoder") {
      a.decoder = text();
      if (a.decoder != "auto" && a.decoder != "hardware" && a.decoder != "cpu")
        fail("--decoder must be auto, hardware or cpu, got \"" + a.decoder + "\"");
    }
    else if (arg == "--jpeg-index-mb") a.jpeg_index_mb = number(0);
    else if (arg == "--no-shuffle") a.shuffle = false;
    else if (arg == "--file-root") a.file_root = text();
    else if (arg == "--skip-errors") a.skip_errors = true;
    else if (arg == "--max-failures") a.max_failures = number(0), a.max_failures_given = true;
    else if (arg == "--shard-mode") {
      a.shard_mode = text();
      if (a.shard_mode != "auto" && a.shard_mode != "indexed" && a.shard_mode != "streaming")
        fail("--shard-mode must be auto, indexed or streaming, got \"" + a.shard_mode + "\"");
    }
    else if (arg == "--shuffle-buffer") a.shuffle_buffer = number(0);
    else if (arg == "--cache-dir") a.cache_dir = text();
    else if (arg == "--cache-limit") {
      const std::string v = text();
      try {
        a.cache_limit = parse_byte_size(v, "--cache-limit");
      } catch (const std::invalid_argument& e) {
        fail(e.what());
      }
    }
    else if (arg == "--json") a.json = true;
    else if (arg == "--progress") a.progress = 1;
    else if (arg == "--no-progress") a.progress = 0;
    else if (arg.size() > 1 && arg[0] == '-') fail("unknown option " + arg);
    else if (positional == 0) a.pipeline = arg, ++positional;
    else if (positional == 1) a.data = arg, ++positional;
    else fail("unexpected argument " + arg);
  }
  if (a.pipeline.empty()) fail("PIPELINE is required");
  if (a.data.empty()) fail("DATA is required");
  if (a.max_failures_given && !a.skip_errors)
    fail("--max-failures needs --skip-errors (without it the first failure stops the run)");
  if (a.cache_limit > 0 && a.cache_dir.empty()) fail("--cache-limit needs --cache-dir");
  if (a.layout != "CHW" && a.layout != "HWC") fail("--layout must be CHW or HWC, got " + a.layout);
  const bool video = a.pipeline == "video-decode" || a.pipeline == "video-train";
  if (!a.metadata_cache.empty() && !video) fail("--metadata-cache is for video-decode and video-train");
  if (a.sampler != "random" && a.pipeline != "video-train") fail("--sampler is for video-train");
  if (video) {  // clips are larger than images
    if (!a.batch_size_given) a.batch_size = a.pipeline == "video-decode" ? 1 : 8;
    if (!a.size_given) a.size = 112;
  }
  return a;
}

}  // namespace hdl::tools
