#include "pipeline/tools/bench_pipelines.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "pipeline/errors.h"
#include "pipeline/readers/tar/tar_stream.h"
#include "pipeline/spec_json.h"

namespace hdl::tools {
namespace {

// True when DATA names WebDataset tar shards (a .tar or a compressed .tar.gz, .tgz, ... shard,
// read in streaming mode; a brace-expanded or "::"-joined spec).
bool is_shard_spec(const std::string& data) {
  return (data.find(".tar") != std::string::npos || data.find(".tgz") != std::string::npos) &&
         (data.ends_with(".tar") || shard_compression(data) != ShardCompression::kNone ||
          data.find('{') != std::string::npos || data.find("::") != std::string::npos);
}

// The image reader for args.data: file_reader over an ImageFolder root or a file list, or
// webdataset_reader over tar shards.
const char* reader_op(const BenchArgs& a) { return is_shard_spec(a.data) ? "webdataset_reader" : "file_reader"; }

// The reader's arguments reading args.data.
PipelineSpec::Args reader_args(const BenchArgs& a) {
  if (is_shard_spec(a.data)) {
    PipelineSpec::Args args = {{"urls", std::vector<std::string>{a.data}}, {"file_root", a.file_root}};
    // Only when given, so that a .json spec's own mode and buffer stand otherwise.
    if (a.shard_mode != "auto") args.emplace_back("mode", a.shard_mode);
    if (a.shuffle_buffer > 0) args.emplace_back("shuffle_buffer", a.shuffle_buffer);
    return args;
  }
  if (a.shard_mode != "auto" || a.shuffle_buffer > 0)
    throw ConfigError("--shard-mode and --shuffle-buffer are for tar shards, but DATA " + a.data + " is not a shard spec");
  std::error_code ec;
  if (std::filesystem::is_directory(a.data, ec)) {
    if (!a.file_root.empty()) throw ConfigError("--file-root is for a file list, but " + a.data + " is a folder");
    return {{"file_root", a.data}, {"file_list", ""}};
  }
  if (!std::filesystem::is_regular_file(a.data, ec))
    throw ConfigError("DATA " + a.data + " is neither a folder nor a file list (nor tar shards: a .tar or a \"{000..099}\" spec)");
  return {{"file_list", a.data}, {"file_root", a.file_root}};
}

PipelineSpec::Args normalize_args(const BenchArgs& a) {
  return {{"mean", std::vector<double>(std::begin(kImagenetMean), std::end(kImagenetMean))},
          {"std", std::vector<double>(std::begin(kImagenetStd), std::end(kImagenetStd))},
          {"dtype", a.dtype},
          {"output_layout", a.layout}};
}

// The video pipelines: video_reader reads and decodes clips (no file_reader).
PipelineSpec video_spec(const BenchArgs& a) {
  PipelineSpec spec;
  PipelineSpec::Args rargs = reader_args(a);
  rargs.emplace_back("shuffle", a.shuffle);
  rargs.emplace_back("metadata_cache", a.metadata_cache);
  // --device cuda: clips to the device; --decoder hardware (auto resolved by the caller): decoded
  // by NVDEC on the mixed stage (CPU threads take what it cannot), the normalise on the gpu stage.
  const bool gpu = a.device != "cpu";
  const Stage reader_stage = gpu && a.decoder == "hardware" ? Stage::kMixed : Stage::kCpu;
  if (a.pipeline == "video-decode") {
    // Every frame of every video, one video per sample, decoded without pixel conversion: what
    // `ffmpeg -i F -f null -` measures.
    for (auto& kv : std::initializer_list<std::pair<std::string, ArgValue>>{
             {"frames_per_clip", int64_t{0}}, {"sampler", "contiguous"}, {"output", "count"}})
      rargs.emplace_back(kv.first, kv.second);
    auto clips = spec.add("video_reader", {}, rargs, {}, "reader", reader_stage);
    spec.set_outputs({clips[0], clips[1]});
    return spec;
  }
  // torchvision's video_classification reference, train preset, fused: one RandomResizedCrop
  // window per clip, decoded frames cropped and resized straight into the batch.
  const int64_t s = a.size;
  for (auto& kv : std::initializer_list<std::pair<std::string, ArgValue>>{
           {"frames_per_clip", a.frames}, {"step", a.step}, {"sampler", a.sampler}, {"random_crop", "resized"},
           {"resize", std::vector<int64_t>{s, s}}})
    rargs.emplace_back(kv.first, kv.second);
  auto clips = spec.add("video_reader", {}, rargs, {}, "reader", reader_stage);
  auto coin = spec.add("coin_flip", {}, {{"probability", 0.5}}, {}, "flip_coin");
  PipelineSpec::Args nargs = {{"mean", std::vector<double>(std::begin(kKineticsMean), std::end(kKineticsMean))},
                              {"std", std::vector<double>(std::begin(kKineticsStd), std::end(kKineticsStd))},
                              {"dtype", a.dtype},
                              {"output_layout", a.dtype_given ? a.layout : std::string("CFHW")}};
  auto out = spec.add("crop_mirror_normalize", {clips[0]}, nargs, {{"mirror", coin[0]}}, "normalize",
                      gpu ? Stage::kDevice : Stage::kCpu);
  spec.set_outputs({out[0], clips[1]});
  return spec;
}

PipelineSpec named_spec(const BenchArgs& a) {
  if (a.pipeline == "video-decode" || a.pipeline == "video-train") return video_spec(a);
  PipelineSpec spec;
  PipelineSpec::Args rargs = reader_args(a);
  rargs.emplace_back("shuffle", a.shuffle);
  auto files = spec.add(reader_op(a), {}, rargs, {}, "reader");
  const int64_t s = a.size;
  if (a.pipeline == "decode") {
    if (a.dtype_given && (a.dtype != "uint8" || a.layout != "HWC"))
      throw ConfigError("the decode pipeline outputs HWC uint8 (use a JSON spec for more)");
    auto images = spec.add("image_decoder", {files[0]}, {{"output_type", "rgb"}}, {}, "decode");
    spec.set_outputs({images[0], files[1]});
    return spec;
  }
  // --device cuda: normalise (flip, layout, dtype) on the gpu stage; in exact mode
  // (--no-dct-scaling) RandomResizedCrop's resize too, so CPU threads only decode the window.
  const bool gpu = a.device != "cpu";
  const Stage tail = gpu ? Stage::kDevice : Stage::kCpu;
  // --decoder hardware (auto resolved by the caller): whole images decoded on the mixed stage
  // (hardware engines and CPU threads), the crop and resize as gpu kernels.
  if (gpu && a.decoder == "hardware" && (a.pipeline == "resnet-train" || a.pipeline == "resnet-eval")) {
    auto images = spec.add("image_decoder", {files[0]}, {{"output_type", "rgb"}}, {}, "decode", Stage::kMixed);
    PipelineSpec::ArgInputs mirror;
    if (a.pipeline == "resnet-train") {
      images = spec.add("random_resized_crop", {images[0]}, {{"size", std::vector<int64_t>{s, s}}}, {}, "crop", tail);
      auto coin = spec.add("coin_flip", {}, {{"probability", 0.5}}, {}, "flip_coin");
      mirror = {{"mirror", coin[0]}};
    } else {
      images = spec.add("resize", {images[0]}, {{"size", std::vector<int64_t>{a.resize}}}, {}, "resize", tail);
      images = spec.add("crop", {images[0]}, {{"crop", std::vector<int64_t>{s, s}}}, {}, "crop", tail);
    }
    auto out = spec.add("crop_mirror_normalize", {images[0]}, normalize_args(a), mirror, "normalize", tail);
    spec.set_outputs({out[0], files[1]});
    return spec;
  }
  if (a.pipeline == "resnet-train") {
    // torchvision RandomResizedCrop(size) fused into the decode: only the window is decoded.
    const bool gpu_resize = gpu && !a.dct_scaling;
    PipelineSpec::Args dargs = {{"output_type", "rgb"}, {"random_crop", "resized"}, {"dct_scaling", a.dct_scaling},
                                {"index_cache_mb", a.jpeg_index_mb}};
    if (!gpu_resize) dargs.emplace_back("resize", std::vector<int64_t>{s, s});
    auto images = spec.add("image_decoder", {files[0]}, dargs, {}, "decode");
    if (gpu_resize) images = spec.add("resize", {images[0]}, {{"size", std::vector<int64_t>{s, s}}}, {}, "resize", tail);
    auto coin = spec.add("coin_flip", {}, {{"probability", 0.5}}, {}, "flip_coin");
    auto out = spec.add("crop_mirror_normalize", {images[0]}, normalize_args(a), {{"mirror", coin[0]}}, "normalize", tail);
    spec.set_outputs({out[0], files[1]});
    return spec;
  }
  if (a.pipeline == "resnet-eval") {
    // torchvision Resize(resize) + CenterCrop(size), fused: only the centre region is decoded.
    auto images = spec.add("image_decoder", {files[0]},
                           {{"output_type", "rgb"}, {"resize", std::vector<int64_t>{a.resize}}, {"center_crop", std::vector<int64_t>{s, s}},
                            {"dct_scaling", a.dct_scaling}, {"index_cache_mb", a.jpeg_index_mb}},
                           {}, "decode");
    auto out = spec.add("crop_mirror_normalize", {images[0]}, normalize_args(a), {}, "normalize", tail);
    spec.set_outputs({out[0], files[1]});
    return spec;
  }
  throw ConfigError("unknown pipeline \"" + a.pipeline +
                    "\": resnet-train, resnet-eval, decode, video-decode, video-train, or a .json spec file");
}

PipelineSpec json_spec(const BenchArgs& a) {
  std::ifstream f(a.pipeline);
  if (!f) throw ConfigError("cannot read the pipeline spec " + a.pipeline);
  std::stringstream text;
  text << f.rdbuf();
  PipelineSpec spec = spec_from_json(text.str());
  int readers = 0;
  for (NodeSpec& n : spec.nodes()) {
    if (n.op == "file_reader" || n.op == "video_reader" || n.op == "webdataset_reader") {
      ++readers;
      if (n.op != "video_reader") n.op = reader_op(a);  // the image readers take either kind of DATA
      if (n.op == "webdataset_reader")
        for (const char* arg : {"file_list", "file_list_format", "extensions", "allow_empty_classes"}) n.args.erase(arg);
      for (auto& [k, v] : reader_args(a)) n.args[k] = v;
    } else if (n.op == "crop_mirror_normalize" && a.dtype_given) {
      n.args["dtype"] = a.dtype;
      n.args["output_layout"] = a.layout;
    }
  }
  if (readers == 0) throw ConfigError(a.pipeline + " has no file_reader or video_reader node to point at " + a.data);
  return spec;
}

}  // namespace

PipelineSpec bench_spec(const BenchArgs& args) {
  const std::string& p = args.pipeline;
  if (p.size() > 5 && p.compare(p.size() - 5, 5, ".json") == 0) return json_spec(args);
  return named_spec(args);
}

}  // namespace hdl::tools
