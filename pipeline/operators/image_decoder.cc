// image_decoder: encoded bytes -> HWC uint8 pixels, through the decoder registry; optionally
// fused with RandomResizedCrop / Resize / CenterCrop so that only the needed region is decoded
// (JPEG region-of-interest decode, DCT-domain downscaling) and resized straight into the slot.
#include "decoders/decoder_set.h"
#include "decoders/jpeg_index.h"
#include "pipeline/errors.h"
#include "pipeline/operator.h"
#include "pipeline/operators/decode_geometry.h"
#include "pipeline/operators/op_util.h"
#include "pipeline/readers/dataset.h"
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

class ImageDecoderOp final : public Operator {
 public:
  explicit ImageDecoderOp(const NodeSpec& n) : rrc_(ops::parse_random_resized_crop(n)), fused_(ops::parse_fused_geometry(n)) {
    fused_.dct_scaling = n.get_bool("dct_scaling");
    request_.color = parse_color_format(n.get_string("output_type"));
    request_.apply_orientation = n.get_bool("apply_orientation");
    request_.max_pixels = n.get_int("max_pixels");
    request_.max_scans = static_cast<int>(n.get_int("max_scans"));
    request_.allow_partial = n.get_bool("allow_partial");
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
            {"jpeg_index_over_budget", s.over_budget}};
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
    HDL_ASSIGN_OR_RETURN(DecodePlan plan, plan_for(bytes, image, window, info.format == "jpeg" ? 8 : 1, args, st, req));
    req.index_cache = index_.get();
    if (index_ && io.sample().dataset) index_->expect_files(io.sample().dataset->size());
    req.index_key = uint64_t(io.sample().dataset_index);
    req.index_every_file = random_crop_;
    const int64_t c = color_channels(request_.color);
    HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, Shape{plan.out_size.h, plan.out_size.w, c}, DType::kU8, Layout::kHWC));
    if (!(plan.dst_size == plan.out_size)) zero_fill(out);
    const TensorView target = out.crop_hw(plan.dst_in_output.y, plan.dst_in_output.x, plan.dst_size.h, plan.dst_size.w);
    if (!plan.resample) return st.decoders.decode(bytes, req, target).status();
    // The decoded region goes to a buffer with kSlack spare pixels either side of each row, so
    // that the JPEG decoder writes its block-aligned rows in place (DecodeRequest::slack_columns).
    const int64_t row = (plan.decoded.w + 2 * kSlack) * c;
    const size_t need = static_cast<size_t>(plan.decoded.h * row);
    if (st.pixels.size() < need) st.pixels.resize(need);  // grows only (no zero-fill per image)
    TensorView decoded(st.pixels.data() + kSlack * c, Shape{plan.decoded.h, plan.decoded.w, c}, DType::kU8, Layout::kHWC);
    decoded.strides[0] = row;
    req.slack_columns = kSlack;
    HDL_RETURN_IF_ERROR(st.decoders.decode(bytes, req, decoded).status());
    return kernels::resize_window(decoded, plan.src_origin, plan.full_in, target, plan.dst_origin,
                                  plan.full_out, args.options, st.resize);
  }

  // Plans the decode and fills `req`. A decoder that does not scale as planned (a JPEG taken by
  // a fallback decoder, a tiny region) gets a full-resolution plan instead.
  Result<DecodePlan> plan_for(std::span<const uint8_t> bytes, SizeHW image, const CropWindow& window,
                              int max_denom, const FusedDecodeArgs& args, DecoderState& st, DecodeRequest& req) const {
    HDL_ASSIGN_OR_RETURN(DecodePlan plan, plan_decode(image, window, args, max_denom, st.resize));
    req = request_;
    req.roi = plan.roi;
    req.min_width = plan.denom > 1 ? plan.decoded.w : 0;
    req.min_height = plan.denom > 1 ? plan.decoded.h : 0;
    HDL_ASSIGN_OR_RETURN(Shape shape, st.decoders.output_shape(bytes, req));
    if (shape[0] == plan.decoded.h && shape[1] == plan.decoded.w) return plan;
    if (max_denom > 1) return plan_for(bytes, image, window, 1, args, st, req);
    return Status::internal("decoder output " + shape.to_string() + " differs from the planned region " +
                            std::to_string(plan.decoded.h) + "x" + std::to_string(plan.decoded.w));
  }

  DecodeRequest request_;
  RandomResizedCropParams rrc_;
  FusedDecodeArgs fused_;
  bool random_crop_ = false;
  bool fused_on_ = false;
  std::unique_ptr<JpegIndexCache> index_;  // shared by the worker threads; thread-safe
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
  for (ArgSchema& a : ops::fused_geometry_args("image")) s.args.push_back(std::move(a));
  s.stages = {Stage::kCpu, Stage::kMixed};
  s.create = [](const NodeSpec& n) { return std::make_unique<ImageDecoderOp>(n); };
  return s;
}

}  // namespace hdl
