// hdl-bench's command line: what to run, over what, and how.
//
// Internal to pipeline/tools (not installed). Thread safety: plain values.
#pragma once

#include <cstdint>
#include <string>

#include "media/api.h"

HDL_API_BEGIN
namespace hdl::tools {

struct BenchArgs {
  std::string pipeline;          ///< resnet-train, resnet-eval, decode, video-decode, video-train, or a .json spec
  std::string data;              ///< ImageFolder root (or a folder tree of videos), or a file list
  std::string file_root;         ///< --file-root: root of a file list's paths (default: its folder)
  int64_t batch_size = 256;      ///< --batch-size (video-decode: 1, video-train: 8 unless given)
  bool batch_size_given = false;
  int threads = 0;               ///< --threads; 0 = one per hardware thread; PipelineOptions::kAuto: auto
  int prefetch = 2;              ///< --prefetch: batches prepared ahead of the consumer; kAuto: auto
  int epochs = 1;                ///< --epochs (ignored when iterations > 0)
  int64_t iterations = 0;        ///< --iterations: batches in all (crossing epochs); 0 = epochs
  int64_t warmup = 1;            ///< --warmup: first batches left out of the throughput
  std::string device = "cpu";    ///< --device: where batches go (cpu; others need a backend)
  std::string decoder = "auto";  ///< --decoder: auto, hardware or cpu (JPEG decode with --device cuda)
  std::string dtype = "float32"; ///< --dtype of the image output (float32, float16, bfloat16, uint8)
  std::string layout = "CHW";    ///< --layout of the image output (CHW or HWC)
  bool dtype_given = false;      ///< --dtype or --layout was given (JSON specs keep theirs otherwise)
  uint64_t seed = 0;             ///< --seed
  int size = 224;                ///< --size: output side (video-train: 112 unless given)
  bool size_given = false;
  int64_t frames = 16;           ///< --frames: video-train frames per clip
  int64_t step = 2;              ///< --step: video-train frame step
  std::string sampler = "random";///< --sampler: video-train's clip sampler (random, uniform, contiguous)
  std::string metadata_cache;    ///< --metadata-cache: video_reader's metadata_cache file ("": none)
  int resize = 256;              ///< --resize: resnet-eval's shorter side before the center crop
  bool dct_scaling = true;       ///< --no-dct-scaling turns DCT-domain reduction off (exact pixels)
  int64_t jpeg_index_mb = 512;   ///< --jpeg-index-mb: image_decoder's index_cache_mb (0: off)
  bool shuffle = true;           ///< --no-shuffle
  bool skip_errors = false;      ///< --skip-errors: error policy skip instead of raise
  int64_t max_failures = 100;    ///< --max-failures: the skip policy's failure budget
  bool max_failures_given = false;
  std::string shard_mode = "auto";  ///< --shard-mode: webdataset_reader's mode (auto, indexed, streaming)
  int64_t shuffle_buffer = 0;    ///< --shuffle-buffer: streaming mode's buffer in samples (0: the reader's 1000)
  std::string cache_dir;         ///< --cache-dir: local cache of remote shards/files ("": $HDL_CACHE_DIR, else none)
  int64_t cache_limit = 0;       ///< --cache-limit in bytes; 0: CacheOptions' default (10 GiB)
  bool json = false;             ///< --json: one JSON document on stdout instead of the text report
  int progress = -1;             ///< --progress / --no-progress; -1: a bar when stderr is a TTY
};

/// Parses argv. Prints usage and exits with status 2 on a mistake, 0 on --help.
BenchArgs parse_bench_args(int argc, char** argv);

}  // namespace hdl::tools
HDL_API_END
