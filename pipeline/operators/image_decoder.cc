// image_decoder: encoded bytes -> HWC uint8 pixels, through the decoder registry.
#include "decoders/decoder_set.h"
#include "pipeline/errors.h"
#include "pipeline/operator.h"
#include "pipeline/registry.h"
#include "pipeline/spec.h"

namespace hdl {
namespace {

ColorFormat parse_color(const std::string& s) {
  if (s == "rgb") return ColorFormat::kRGB;
  if (s == "bgr") return ColorFormat::kBGR;
  return ColorFormat::kGray;
}

struct DecoderState final : OpState {
  DecoderSet decoders;
};

class ImageDecoderOp final : public Operator {
 public:
  explicit ImageDecoderOp(const NodeSpec& n) {
    request_.color = parse_color(n.get_string("output_type"));
    request_.apply_orientation = n.get_bool("apply_orientation");
    request_.max_pixels = n.get_int("max_pixels");
    request_.allow_partial = n.get_bool("allow_partial");
  }

  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec> in) const override {
    if (in[0].dtype != DType::kU8 || in[0].shape.ndim() != 1)
      throw ConfigError("input must be encoded bytes (uint8, 1-D), got " + std::string(dtype_name(in[0].dtype)) +
                        " " + in[0].shape.to_string());
    return {TensorSpec{DType::kU8, Shape{-1, -1, color_channels(request_.color)}, Layout::kHWC}};
  }

  Status run(SampleIO& io) const override {
    const ConstTensorView& in = io.input(0);
    const std::span<const uint8_t> bytes(in.typed<uint8_t>(), static_cast<size_t>(in.num_elements()));
    DecoderSet& decoders = static_cast<DecoderState*>(io.state())->decoders;
    HDL_ASSIGN_OR_RETURN(Shape shape, decoders.output_shape(bytes, request_));
    HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, shape, DType::kU8, Layout::kHWC));
    HDL_ASSIGN_OR_RETURN(DecodeReport report, decoders.decode(bytes, request_, out));
    (void)report;
    return Status::ok();
  }

  std::unique_ptr<OpState> make_state() const override { return std::make_unique<DecoderState>(); }

 private:
  DecodeRequest request_;
};

}  // namespace

OpSchema image_decoder_schema() {
  OpSchema s;
  s.name = "image_decoder";
  s.doc = "Decodes JPEG (libjpeg-turbo), PNG, BMP, TIFF and WebP (FFmpeg) images to HWC uint8. "
          "The format is found from the bytes, not the file name; a decoder that cannot take a "
          "file hands it to the next able one.";
  s.inputs = {{"encoded", "encoded image bytes (uint8, 1-D)"}};
  s.outputs = {{"images", "decoded pixels, HWC uint8"}};
  s.args = {
      {"output_type", ArgType::kString, ArgValue("rgb"), "pixel format: rgb, bgr or gray", one_of({"rgb", "bgr", "gray"})},
      {"apply_orientation", ArgType::kBool, ArgValue(false), "rotate per EXIF orientation (torchvision's PIL loader does not)"},
      {"max_pixels", ArgType::kInt, ArgValue(int64_t{178956970}), "refuse larger images before allocating (decompression bombs; Pillow's limit)", at_least(1)},
      {"allow_partial", ArgType::kBool, ArgValue(false), "accept truncated images (missing part grey) instead of failing the sample"},
  };
  s.stages = {Stage::kCpu, Stage::kMixed};
  s.create = [](const NodeSpec& n) { return std::make_unique<ImageDecoderOp>(n); };
  return s;
}

}  // namespace hdl
