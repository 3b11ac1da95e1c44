// image_decoder: encoded bytes -> HWC uint8 pixels, through the decoder registry; optionally
// fused with RandomResizedCrop / Resize / CenterCrop so that only the needed region is decoded
// (JPEG region-of-interest decode, DCT-domain downscaling) and resized straight into the slot.
#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

#include "decoders/decoder_set.h"
#include "decoders/jpeg/index_cache.h"
#include "decoders/nvjpeg/nvjpeg_decoder.h"
#include "decoders/nvjpeg/nvjpeg_hardware.h"
#include "media/cuda/allocator.h"
#include "media/cuda/stream.h"
#include "pipeline/dataset.h"
#include "pipeline/decode/fused_decode_region.h"
#include "pipeline/errors.h"
#include "pipeline/operator.h"
#include "pipeline/operators/decode_share.h"
#include "pipeline/operators/op_util.h"
#include "pipeline/registry.h"
#include "pipeline/spec.h"

namespace hdl {
namespace {

// Spare pixels either side of each row of the decoded region: room for libjpeg's crop, which
// starts at an iMCU boundary one iMCU (progressive: two) left of the window and ends as far
// right of it (4:2:0: up to 31, progressive 47 pixels; wider layouts fall back to a copy).
constexpr int64_t kSlack = 64;

struct DecoderState final : OpState {
  DecoderSet decoders;
  kernels::ResizeWorkspace resize;
  std::vector<uint8_t> pixels;  // the decoded region before it is resized
};

// Sets every element of an HWC uint8 view to 0 (the padding of a crop larger than the image).
void zero_fill(const TensorView& v) {
  for (int64_t y = 0; y < v.shape[0]; ++y)
    for (int64_t x = 0; x < v.shape[1]; ++x)
      for (int64_t c = 0; c < v.shape[2]; ++c)
        v.typed<uint8_t>()[y * v.strides[0] + x * v.strides[1] + c * v.strides[2]] = 0;
}

// The request both stages' decoders make, from the node's arguments.
DecodeRequest decode_request(const NodeSpec& n) {
  DecodeRequest r;
  r.color = parse_color_format(n.get_string("output_type"));
  r.apply_orientation = n.get_bool("apply_orientation");
  r.max_pixels = n.get_int("max_pixels");
  r.max_scans = static_cast<int>(n.get_int("max_scans"));
  r.allow_partial = n.get_bool("allow_partial");
  return r;
}

class ImageDecoderOp final : public Operator {
 public:
  explicit ImageDecoderOp(const NodeSpec& n) : rrc_(ops::parse_random_resized_crop(n)), fused_(ops::parse_fused_geometry(n)) {
    fused_.dct_scaling = n.get_bool("dct_scaling");
    request_ = decode_request(n);
    random_crop_ = n.get_string("random_crop") == "resized";
    fused_on_ = random_crop_ || !fused_.resize.empty() || fused_.center_crop.has_value();
    // Only region decodes use the index: the random crop, or a center crop of the resize.
    if (const int64_t mb = n.get_int("index_cache_mb"); mb > 0 && (random_crop_ || fused_.center_crop))
      index_ = std::make_unique<JpegIndexCache>(size_t(mb) << 20);
  }

  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec> in) const override {
    if (in[0].dtype != DType::kU8 || in[0].shape.ndim() != 1)
      throw ConfigError("input must be encoded bytes (uint8, 1-D), got " + std::string(dtype_name(in[0].dtype)) +
                        " " + in[0].shape.to_string());
    const int64_t c = color_channels(request_.color);
    if (fused_.center_crop) return {TensorSpec{DType::kU8, Shape{fused_.center_crop->h, fused_.center_crop->w, c}, Layout::kHWC}};
    if (fused_.resize.size() == 2) return {TensorSpec{DType::kU8, Shape{fused_.resize[0], fused_.resize[1], c}, Layout::kHWC}};
    return {TensorSpec{DType::kU8, Shape{-1, -1, c}, Layout::kHWC}};
  }

  Status run(SampleIO& io) const override {
    const ConstTensorView& in = io.input(0);
    const std::span<const uint8_t> bytes(in.typed<uint8_t>(), static_cast<size_t>(in.num_elements()));
    auto& state = *static_cast<DecoderState*>(io.state());
    if (fused_on_) return run_fused(io, bytes, state);
    HDL_ASSIGN_OR_RETURN(Shape shape, state.decoders.output_shape(bytes, request_));
    HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, shape, DType::kU8, Layout::kHWC));
    return state.decoders.decode(bytes, request_, out).status();
  }

  std::unique_ptr<OpState> make_state() const override { return std::make_unique<DecoderState>(); }

  std::vector<std::pair<std::string, int64_t>> counters() const override {
    if (!index_) return {};
    const JpegIndexCache::Stats s = index_->stats();
    return {{"jpeg_index_files", s.entries},      {"jpeg_index_bytes", s.bytes},
            {"jpeg_index_hits", s.hits},          {"jpeg_index_unindexable", s.unindexable},
            {"jpeg_index_over_budget", s.over_budget},
            {"jpeg_index_fallbacks", s.fallbacks}};
  }

 private:
  Status run_fused(SampleIO& io, std::span<const uint8_t> bytes, DecoderState& st) const {
    HDL_ASSIGN_OR_RETURN(ImageInfo info, st.decoders.read_info(bytes));
    const SizeHW image{info.oriented_height(request_.apply_orientation),
                       info.oriented_width(request_.apply_orientation)};
    CropWindow window{0, 0, image.h, image.w};
    if (random_crop_) {
      StreamDraws draws(io.rng());
      window = random_resized_crop_window(image, rrc_, draws);
    }
    FusedDecodeArgs scratch;
    const FusedDecodeArgs& args = sample_fused_args(fused_, io.rng(), scratch);
    DecodeRequest req;
    HDL_ASSIGN_OR_RETURN(FusedDecodeRegion region,
                         region_for(bytes, image, window, info.format == "jpeg" ? 8 : 1, args, st, req));
    // Keyed by the sample's content key: its dataset index, or what a streaming reader names it by.
    const std::optional<uint64_t> key = io.content_key();
    req.index_cache = key ? index_.get() : nullptr;
    if (index_) index_->expect_files(io.sample().distinct_samples);
    req.index_key = key.value_or(0);
    req.index_every_file = random_crop_;
    const int64_t c = color_channels(request_.color);
    HDL_ASSIGN_OR_RETURN(TensorView out,
                         io.output(0, Shape{region.out_size.h, region.out_size.w, c}, DType::kU8, Layout::kHWC));
    if (!(region.dst_size == region.out_size)) zero_fill(out);
    const TensorView target =
        out.crop_hw(region.dst_in_output.y, region.dst_in_output.x, region.dst_size.h, region.dst_size.w);
    if (!region.resample) return st.decoders.decode(bytes, req, target).status();
    // The decoded region goes to a buffer with kSlack spare pixels either side of each row, so
    // that the JPEG decoder writes its block-aligned rows in place (DecodeRequest::slack_columns).
    const int64_t row = (region.decoded.w + 2 * kSlack) * c;
    const size_t need = static_cast<size_t>(region.decoded.h * row);
    if (st.pixels.size() < need) st.pixels.resize(need);  // grows only (no zero-fill per image)
    TensorView decoded(st.pixels.data() + kSlack * c, Shape{region.decoded.h, region.decoded.w, c}, DType::kU8,
                       Layout::kHWC);
    decoded.strides[0] = row;
    req.slack_columns = kSlack;
    HDL_RETURN_IF_ERROR(st.decoders.decode(bytes, req, decoded).status());
    return kernels::resize_window(decoded, region.src_origin, region.full_in, target, region.dst_origin,
                                  region.full_out, args.options, st.resize);
  }

  // Chooses the region to decode and fills `req`. A decoder that does not scale as asked (a JPEG
  // taken by a fallback decoder, a tiny region) gets a full-resolution region instead.
  Result<FusedDecodeRegion> region_for(std::span<const uint8_t> bytes, SizeHW image, const CropWindow& window,
                              int max_denom, const FusedDecodeArgs& args, DecoderState& st, DecodeRequest& req) const {
    HDL_ASSIGN_OR_RETURN(FusedDecodeRegion region, fused_decode_region(image, window, args, max_denom, st.resize));
    req = request_;
    req.roi = region.roi;
    req.min_width = region.denom > 1 ? region.decoded.w : 0;
    req.min_height = region.denom > 1 ? region.decoded.h : 0;
    HDL_ASSIGN_OR_RETURN(Shape shape, st.decoders.output_shape(bytes, req));
    if (shape[0] == region.decoded.h && shape[1] == region.decoded.w) return region;
    if (max_denom > 1) return region_for(bytes, image, window, 1, args, st, req);
    return Status::internal("decoder output " + shape.to_string() + " differs from the region asked for " +
                            std::to_string(region.decoded.h) + "x" + std::to_string(region.decoded.w));
  }

  DecodeRequest request_;
  RandomResizedCropParams rrc_;
  FusedDecodeArgs fused_;
  bool random_crop_ = false;
  bool fused_on_ = false;
  std::unique_ptr<JpegIndexCache> index_;  // shared by the worker threads; thread-safe
};

// The mixed-stage image decoder (docs/CUDA.md, "The mixed stage"): whole images, host bytes in,
// device pixels out, decoded by the GPU's hardware JPEG engines and by CPU threads together.
//
// Host half (run, per sample on the cpu stage): a JPEG the engines could take (our header
// checks) goes to the hardware unless DecodeShare sends it to the CPU (a key drawn from the
// node's random stream, so a fixed share routes the same samples every run); it stages an
// empty [0, 0, C] image. Every other sample is decoded here by the CPU operator into its staged
// pinned output, under the pipeline's error policy, as on the cpu stage.
// Device half (run_batch, per batch in the device stage): the staged CPU pixels are copied into
// their device outputs; the hardware's images go to one NvjpegHardwareDecoder call. What the
// engines refuse after all (nvJPEG's own header check), or a failed call, is decoded on the CPU
// here, in this thread (rare: counted). A file both decoders refuse fails its batch, naming it.
// The call's time (the stream drained after it) and the host half's CPU times set the share.
class MixedImageDecoderOp final : public Operator {
 public:
  explicit MixedImageDecoderOp(const NodeSpec& n)
      : cpu_(n), share_(share_options(n)) {
    request_ = decode_request(n);
    // No library or no device: every image is the CPU's from the start (the device stage then
    // refuses to start anyway, naming CUDA's reason).
    hardware_usable_.store(nvjpeg_status().is_ok(), std::memory_order_relaxed);
  }

  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec> in) const override { return cpu_.infer_outputs(in); }
  std::unique_ptr<OpState> make_state() const override { return cpu_.make_state(); }

  Status run(SampleIO& io) const override {
    const ConstTensorView& in = io.input(0);
    const std::span<const uint8_t> bytes(in.typed<uint8_t>(), static_cast<size_t>(in.num_elements()));
    const uint64_t key = io.rng().next_u64();
    const bool eligible = hardware_usable_.load(std::memory_order_relaxed) && hardware_may_take(bytes, request_).is_ok();
    if (eligible && !share_.to_cpu(key)) {
      HDL_ASSIGN_OR_RETURN(TensorView none, io.output(0, Shape{0, 0, color_channels(request_.color)}, DType::kU8, Layout::kHWC));
      (void)none;
      return Status::ok();
    }
    const auto t0 = std::chrono::steady_clock::now();
    Status st = cpu_.run(io);
    if (st.is_ok() && eligible)
      share_.record_cpu(1, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (st.is_ok()) cpu_images_.fetch_add(1, std::memory_order_relaxed);
    return st;
  }

  Status run_batch(BatchIO& io) const override {
    cuda::Stream& stream = io.stream();
    share_.set_cpu_threads(io.cpu_threads());
    if (!hw_) hw_ = std::make_unique<NvjpegHardwareDecoder>(stream.device().index);
    if (!hw_->status().is_ok()) hardware_usable_.store(false, std::memory_order_relaxed);
    std::vector<HardwareDecodeItem> items;
    std::vector<int64_t> item_sample;
    for (int64_t s = 0; s < io.size(); ++s) {
      const ConstTensorView& staged = io.staged(0, s);
      if (staged.shape.ndim() == 3 && staged.shape[0] > 0) {  // decoded by the host half
        HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, s, staged.shape, DType::kU8, Layout::kHWC));
        HDL_RETURN_IF_ERROR(copy_to_device(staged, out, stream));
        continue;
      }
      const ConstTensorView& in = io.input(0, s);
      const std::span<const uint8_t> bytes(in.typed<uint8_t>(), static_cast<size_t>(in.num_elements()));
      Result<ImageInfo> info = hw_->status().is_ok() ? hw_->supports(bytes, request_) : Result<ImageInfo>(hw_->status());
      if (!info.is_ok()) {
        HDL_RETURN_IF_ERROR(decode_here(io, s, bytes, nullptr));
        continue;
      }
      HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, s, Shape{info->height, info->width, 3}, DType::kU8, Layout::kHWC));
      items.push_back({bytes, out});
      item_sample.push_back(s);
    }
    if (items.empty()) return Status::ok();
    // The engines' time, for the share: from a drained stream (the uploads queued above are
    // not theirs) to the end of their work. The device stage runs in a worker thread; the cpu
    // stage goes on meanwhile.
    HDL_RETURN_IF_ERROR(stream.synchronize());
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<Status> done = hw_->decode(items, request_.color, stream);
    HDL_RETURN_IF_ERROR(stream.synchronize());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    int64_t decoded = 0;
    for (size_t i = 0; i < done.size(); ++i) {
      if (done[i].is_ok()) {
        ++decoded;
        continue;
      }
      if (done[i].code() != StatusCode::kUnsupported) return done[i];
      const std::span<const uint8_t> bytes = items[i].data;
      HDL_RETURN_IF_ERROR(decode_here(io, item_sample[i], bytes, &items[i].out));
    }
    // Engines that fail every call (a GPU slice without them, a driver fault): after a few
    // batches in a row, every image is the CPU's.
    failed_batches_in_a_row_ = decoded > 0 ? 0 : failed_batches_in_a_row_ + 1;
    if (failed_batches_in_a_row_ >= kFailedBatchesBeforeGivingUp) hardware_usable_.store(false, std::memory_order_relaxed);
    share_.end_batch(decoded, seconds);
    hardware_images_.fetch_add(static_cast<uint64_t>(decoded), std::memory_order_relaxed);
    return Status::ok();
  }

  std::vector<std::pair<std::string, int64_t>> counters() const override {
    return {{"hardware_images", static_cast<int64_t>(hardware_images_.load())},
            {"cpu_images", static_cast<int64_t>(cpu_images_.load())},
            {"device_stage_cpu_images", static_cast<int64_t>(fallback_images_.load())},
            {"cpu_share_permille", static_cast<int64_t>(share_.cpu_share() * 1000 + 0.5)}};
  }

 private:
  static constexpr int kFailedBatchesBeforeGivingUp = 3;

  static DecodeShareOptions share_options(const NodeSpec& n) {
    DecodeShareOptions o;
    const double hw = n.get_float("hw_share");
    if (hw < 0 && hw != -1) throw ConfigError("argument \"hw_share\" must be -1 (adaptive) or in [0, 1], got " + std::to_string(hw));
    if (hw >= 0) o.fixed_cpu_share = 1 - hw;
    o.max_cpu_share = 1 - 1.0 / 64;  // adaptive: the engines keep getting work, so keep being measured
    o.cpu_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));  // until run_batch says
    return o;
  }

  Status copy_to_device(const ConstTensorView& host, const TensorView& out, cuda::Stream& stream) const {
    if (!copied_) {  // one event, re-recorded: the stage's stream orders the copies
      HDL_ASSIGN_OR_RETURN(cuda::Event e, cuda::Event::create(stream.device()));
      copied_ = std::move(e);
    }
    return cuda::copy_async(host, out, stream, *copied_);
  }

  // Decodes sample s on the CPU in this thread into pinned memory and uploads it into `out`
  // (or a new output), then waits for the copy: a rare path.
  Status decode_here(BatchIO& io, int64_t s, std::span<const uint8_t> bytes, const TensorView* out) const {
    const SampleInfo& info = io.sample_io(s).sample();
    auto where = [&] {
      return "sample " + std::to_string(info.dataset_index) + " \"" +
             (info.dataset ? info.dataset->path(info.dataset_index) : std::string("?")) + "\": ";
    };
    Result<Shape> shape = decoders_.output_shape(bytes, request_);
    if (!shape.is_ok()) return Status(shape.status().code(), where() + shape.status().message());
    // Pinned memory, kept and grown (pinned allocation synchronises the device).
    const size_t bytes_needed = static_cast<size_t>(shape->num_elements());
    if (!pinned_ || pinned_->capacity() < bytes_needed)
      pinned_ = Storage::allocate(cuda::pinned_host_allocator(), std::max(bytes_needed, 2 * (pinned_ ? pinned_->capacity() : 0)));
    Tensor pinned(pinned_, 0, *shape, DType::kU8, Layout::kHWC);
    if (Status st = decoders_.decode(bytes, request_, pinned.view()).status(); !st.is_ok())
      return Status(st.code(), where() + st.message());
    TensorView target;
    if (out) {
      target = *out;
      if (target.shape != *shape) return Status::internal(where() + "the CPU decodes " + shape->to_string() + ", nvJPEG's slot is " + target.shape.to_string());
    } else {
      HDL_ASSIGN_OR_RETURN(target, io.output(0, s, *shape, DType::kU8, Layout::kHWC));
    }
    HDL_RETURN_IF_ERROR(copy_to_device(pinned.view(), target, io.stream()));
    fallback_images_.fetch_add(1, std::memory_order_relaxed);
    return io.stream().synchronize();  // `pinned_` is rewritten by the next one
  }

  ImageDecoderOp cpu_;  // the host half's decoder, exactly the cpu stage's
  DecodeRequest request_;
  mutable DecodeShare share_;
  mutable std::atomic<bool> hardware_usable_{true};  // false once the device half found no engines
  // The device half's own (run_batch calls are serialised by the device stage).
  mutable std::unique_ptr<NvjpegHardwareDecoder> hw_;
  mutable DecoderSet decoders_;
  mutable StoragePtr pinned_;                   // decode_here's pinned pixels
  mutable std::optional<cuda::Event> copied_;  // copy_to_device's event
  mutable int failed_batches_in_a_row_ = 0;
  mutable std::atomic<uint64_t> hardware_images_{0}, cpu_images_{0}, fallback_images_{0};
};

}  // namespace

OpSchema image_decoder_schema() {
  OpSchema s;
  s.name = "image_decoder";
  s.doc = "Decodes JPEG (libjpeg-turbo), PNG, BMP, TIFF and WebP (FFmpeg) images to HWC uint8. "
          "The format is found from the bytes, not the file name; a decoder that cannot take a "
          "file hands it to the next able one. Optionally fused with torchvision's "
          "RandomResizedCrop (random_crop=\"resized\"), Resize (resize) and CenterCrop "
          "(center_crop), in that order: only the region the output needs is decoded (JPEG "
          "region of interest; with dct_scaling, at 1/2, 1/4 or 1/8 scale while the region stays "
          ">= 2x the resized size) and resized straight into the output. Without DCT scaling the "
          "pixels equal full decode + crop + resize + center crop bit for bit. The output is dense "
          "when resize is [h, w] or center_crop is given.";
  s.inputs = {{"encoded", "encoded image bytes (uint8, 1-D)"}};
  s.outputs = {{"images", "decoded pixels, HWC uint8"}};
  s.uses_randomness = true;
  s.args = {
      {"output_type", ArgType::kString, ArgValue("rgb"), "pixel format: rgb, bgr or gray", one_of({"rgb", "bgr", "gray"})},
      {"apply_orientation", ArgType::kBool, ArgValue(false), "rotate per EXIF orientation (torchvision's PIL loader does not)"},
      {"max_pixels", ArgType::kInt, ArgValue(int64_t{178956970}), "refuse larger images before allocating (decompression bombs; Pillow's limit)", at_least(1)},
      {"max_scans", ArgType::kInt, ArgValue(int64_t{500}), "refuse JPEGs with more scans than this before decoding them (progressive DoS: each scan re-walks the whole image; libjpeg-turbo's own limit); 0: none", in_range(0, 1000000)},
      {"allow_partial", ArgType::kBool, ArgValue(false), "accept truncated images (missing part grey) instead of failing the sample"},
      {"dct_scaling", ArgType::kBool, ArgValue(true), "let the JPEG decoder reduce by 1/2, 1/4, 1/8 while the decoded region stays >= 2x the resized size (false: exact)"},
      {"index_cache_mb", ArgType::kInt, ArgValue(int64_t{512}), "memory for JPEG entry-point indexes (about 10% of a file's size, shared out over the dataset), built on a file's first region decode, so that later epochs Huffman-decode only the MCUs around the region (same pixels); 0: off", at_least(0)},
  };
  s.args.push_back({"hw_share", ArgType::kFloat, ArgValue(-1.0), "mixed stage: the share of the JPEGs the GPU's hardware engines can take that they decode, the rest going to CPU threads (DALI's hw_decoder_load), fixed and the same samples every run; -1: adapt the split to both engines' measured rates so they finish each batch together", in_range(-1, 1)});
  for (ArgSchema& a : ops::fused_geometry_args("image")) s.args.push_back(std::move(a));
  s.stages = {Stage::kCpu, Stage::kMixed};
  s.create = [](const NodeSpec& n) { return std::make_unique<ImageDecoderOp>(n); };
  // device="mixed": whole images decoded by the hardware JPEG engines and CPU threads together,
  // into device memory; crops and resizes follow on the gpu stage.
  s.create_device = [](const NodeSpec& n) -> std::unique_ptr<Operator> {
    if (n.get_string("random_crop") == "resized" || !n.get_ints("resize").empty() || !n.get_ints("center_crop").empty())
      throw ConfigError("on the mixed stage image_decoder decodes whole images: crop and resize with gpu-stage "
                        "operators after it (random_resized_crop, resize, crop)");
    return std::make_unique<MixedImageDecoderOp>(n);
  };
  return s;
}

}  // namespace hdl
