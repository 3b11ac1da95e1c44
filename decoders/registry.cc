// The decoders of this build, in preference order. An explicit list: adding a decoder means
// adding a line here (no static registration).
#include "decoders/decoder.h"
#include "decoders/ffmpeg_image_decoder.h"
#include "decoders/jpeg/jpeg_decoder.h"

namespace hdl {
namespace {

std::vector<DecoderEntry> builtin_entries() {
  auto jpeg = [] { return make_jpeg_decoder(); };
  auto ffmpeg = [] { return make_ffmpeg_image_decoder(); };
  return {
      // libjpeg-turbo first: ROI, DCT scaling, Pillow-exact pixels.
      {"libjpeg-turbo", "jpeg", probe_jpeg, jpeg},
      // FFmpeg's mjpeg decoder takes the JPEGs libjpeg-turbo answers kUnsupported for
      // (12-bit, lossless).
      {"ffmpeg", "jpeg", probe_jpeg, ffmpeg},
      {"ffmpeg", "png", probe_png, ffmpeg},
      {"ffmpeg", "webp", probe_webp, ffmpeg},
      {"ffmpeg", "bmp", probe_bmp, ffmpeg},
      {"ffmpeg", "tiff", probe_tiff, ffmpeg},
  };
}

}  // namespace

int color_channels(ColorFormat f) { return f == ColorFormat::kGray ? 1 : 3; }

const char* color_format_name(ColorFormat f) {
  switch (f) {
    case ColorFormat::kRGB: return "rgb";
    case ColorFormat::kBGR: return "bgr";
    case ColorFormat::kGray: return "gray";
  }
  return "unknown";
}

ColorFormat parse_color_format(const std::string& name) {
  if (name == "rgb") return ColorFormat::kRGB;
  if (name == "bgr") return ColorFormat::kBGR;
  return ColorFormat::kGray;
}

const DecoderRegistry& DecoderRegistry::builtin() {
  static const DecoderRegistry registry(builtin_entries());
  return registry;
}

std::vector<size_t> DecoderRegistry::candidates(std::span<const uint8_t> data) const {
  std::vector<size_t> out;
  for (size_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].probe(data)) out.push_back(i);
  return out;
}

std::string DecoderRegistry::sniff_format(std::span<const uint8_t> data) const {
  for (const DecoderEntry& e : entries_)
    if (e.probe(data)) return e.format;
  return "";
}

}  // namespace hdl
