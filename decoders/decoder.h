// Image decoders: the plug-in seam between encoded bytes and pixels.
//
// A decoder reads a header (read_info), says what shape a request produces (output_shape), and
// writes pixels into memory the caller provides (decode), so a sample can be decoded straight
// into its slot of a batch buffer. Bad bytes are reported as a Status, never thrown or crashed
// on: decoders are fed corrupt, truncated and hostile files at scale.
//
// Thread safety: a decoder instance is used by one thread at a time (the pipeline keeps one per
// worker thread); distinct instances may run concurrently. DecoderRegistry is immutable after
// construction and thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "media/api.h"
#include "media/shape.h"
#include "media/status.h"
#include "media/tensor.h"

HDL_API_BEGIN
namespace hdl {

class JpegIndexCache;  // decoders/jpeg/index_cache.h

/// Pixel format of decoded output (always interleaved HWC uint8).
enum class ColorFormat : uint8_t {
  kRGB,   ///< 3 channels
  kBGR,   ///< 3 channels
  kGray,  ///< 1 channel (ITU-R 601 luma, as PIL's convert("L"))
};
int color_channels(ColorFormat f);
const char* color_format_name(ColorFormat f);
/// "rgb", "bgr" or "gray" (an operator's output_type, already validated); anything else is gray.
ColorFormat parse_color_format(const std::string& name);

/// A window of an image in pixels. Empty (w == 0 or h == 0) means the whole image.
struct Roi {
  int64_t x = 0, y = 0, w = 0, h = 0;
  bool empty() const { return w <= 0 || h <= 0; }
  friend bool operator==(const Roi&, const Roi&) = default;
};

/// What a header says. Dimensions are as stored, before EXIF orientation.
struct ImageInfo {
  std::string format;       ///< "jpeg", "png", "bmp", "tiff", "webp", ...
  int64_t width = 0;
  int64_t height = 0;
  int channels = 0;         ///< as stored: 1 gray, 3 colour, 4 CMYK or RGBA
  int orientation = 1;      ///< EXIF orientation 1..8 (1 = as stored)
  bool progressive = false; ///< JPEG: progressive scan (about 3x slower to decode)
  std::string color_space;  ///< "gray", "ycbcr", "rgb", "cmyk", "ycck", "rgba", "palette", ...
  std::string subsampling;  ///< JPEG chroma layout: "444", "422", "420", "440", "411", "441", "gray"

  /// Width and height after orientation (swapped for orientations 5..8 when `apply`).
  int64_t oriented_width(bool apply) const { return apply && orientation >= 5 ? height : width; }
  int64_t oriented_height(bool apply) const { return apply && orientation >= 5 ? width : height; }
};

/// What to decode.
struct DecodeRequest {
  ColorFormat color = ColorFormat::kRGB;  ///< output pixel format
  bool apply_orientation = false;         ///< rotate/flip per EXIF; roi is then in oriented coordinates
  Roi roi;                                ///< decode only this window (empty: whole image); clipped by nobody: must lie inside the image
  /// If > 0, the decoder may decode at a reduced scale (JPEG DCT scaling 1/2, 1/4, 1/8) as long as
  /// the decoded window stays at least min_width x min_height. 0: full resolution.
  int64_t min_width = 0;
  int64_t min_height = 0;
  /// Refuse images with more pixels than this before any large allocation (decompression bombs).
  int64_t max_pixels = int64_t(1) << 28;
  /// Refuse JPEGs with more scans than this (kResourceExhausted, "too many scans"), counted as
  /// libjpeg reads them, before the excess scans are decoded. A progressive decoder re-walks
  /// the whole coefficient buffer for every scan, so a small hostile file with thousands of
  /// scans costs minutes; real progressive files have about 10. 500 is libjpeg-turbo's own
  /// choice (its fuzzers' TJPARAM_SCANLIMIT). 0: no limit.
  int max_scans = 500;
  /// A truncated or partly corrupt image: true returns what was decoded (rest grey) with
  /// DecodeReport::partial set; false makes it an error.
  bool allow_partial = false;
  /// Scratch room around the output (no orientation, no colour conversion): each output row may
  /// also be written up to this many pixels to its left and to its right. The caller promises a
  /// row stride of at least (width + 2 * slack_columns) pixels and writable memory from
  /// slack_columns pixels before the first row to slack_columns pixels after the last, e.g. a
  /// view into a wider buffer. Lets a region decoder (libjpeg widens a crop to whole blocks)
  /// write rows in place instead of copying them through a scratch row. 0: only the view.
  int64_t slack_columns = 0;
  /// Entry-point indexes shared across decodes (decoders/jpeg/jpeg_index.h) and this file's key in
  /// them (e.g. its dataset index; the bytes are fingerprinted too). With both, a region decode
  /// of a baseline JPEG skips the Huffman decoding outside the region once the file has been
  /// indexed (the first region decode of a file builds its index). nullptr: no index.
  JpegIndexCache* index_cache = nullptr;
  uint64_t index_key = 0;
  /// Index every file on its first decode, not only when its region is small enough to use an
  /// index: for random crops, where a later epoch's region differs.
  bool index_every_file = false;
};

/// What decode() has to say besides the pixels.
struct DecodeReport {
  bool partial = false;  ///< only part of the image could be decoded (allow_partial)
  std::string warning;   ///< e.g. "premature end of data segment"
  int scale_denom = 1;   ///< DCT scaling used: output is the window scaled by 1/scale_denom (rounded up)
};

class ImageDecoder {
 public:
  virtual ~ImageDecoder() = default;
  /// "libjpeg-turbo", "ffmpeg", ...
  virtual const char* name() const = 0;
  /// Parses the header only. Errors: kInvalidData (not this format or corrupt), kUnsupported.
  virtual Result<ImageInfo> read_info(std::span<const uint8_t> data) = 0;
  /// The HWC shape decode() will write for `request` on an image described by `info`.
  /// Deterministic; errors for a roi outside the image, too many pixels, or an unsupported request.
  virtual Result<Shape> output_shape(const ImageInfo& info, const DecodeRequest& request) = 0;
  /// Decodes into `out`, which must have output_shape(info, request) as shape, uint8 dtype,
  /// and unit channel stride (rows may be strided: a slot of a batch). Never writes outside `out`.
  virtual Result<DecodeReport> decode(std::span<const uint8_t> data, const DecodeRequest& request,
                                      const TensorView& out) = 0;
};

/// One registered decoder: a name, a magic-byte probe and a factory.
struct DecoderEntry {
  std::string name;
  std::string format;  ///< the format its probe recognises ("jpeg", "png", ...)
  /// True if the first bytes look like this decoder's format. Must be cheap (magic bytes).
  std::function<bool(std::span<const uint8_t>)> probe;
  std::function<std::unique_ptr<ImageDecoder>()> create;
};

/// The decoders of this build in fallback order. Explicit list in decoders/registry.cc.
class DecoderRegistry {
 public:
  /// Every decoder compiled in, in preference order.
  static const DecoderRegistry& builtin();
  explicit DecoderRegistry(std::vector<DecoderEntry> entries) : entries_(std::move(entries)) {}

  const std::vector<DecoderEntry>& entries() const { return entries_; }
  /// Indices of entries whose probe accepts `data`, in preference order (empty: unknown format).
  std::vector<size_t> candidates(std::span<const uint8_t> data) const;
  /// The format name the magic bytes say ("jpeg", "png", ...), or "" if none matches.
  std::string sniff_format(std::span<const uint8_t> data) const;

 private:
  std::vector<DecoderEntry> entries_;
};

}  // namespace hdl
HDL_API_END
