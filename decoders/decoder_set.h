// DecoderSet: decode any image the registry knows, choosing the decoder by magic bytes and
// falling back when the preferred one cannot handle a file. What the pipeline's image decoder
// operator holds, one per worker thread.
//
//   DecoderSet decoders;                                   // per thread
//   HDL_ASSIGN_OR_RETURN(Shape shape, decoders.output_shape(bytes, request));
//   ... allocate or pick a slot `out` of that shape ...
//   HDL_ASSIGN_OR_RETURN(DecodeReport report, decoders.decode(bytes, request, out));
//
// Choice: the registry's entries whose probe accepts the bytes, in registry order (never the
// file name: ImageNet has PNG and CMYK files named .JPEG). The first of them that does not
// answer kUnsupported decodes the file; a kUnsupported answer (12-bit or lossless JPEG in
// libjpeg-turbo, ...) moves on to the next. The three methods make the same choice for the same
// bytes, so the shape output_shape() promises is the shape decode() writes.
//
// Errors carry the decoder's name: "libjpeg-turbo: Premature end of JPEG file"; when every
// candidate is unsupported, all their reasons joined by "; ". Unrecognised bytes give
// kUnsupported "unknown image format (first bytes 00 00 00 0c)"; empty input kInvalidData.
// A fallback's error names what came before: "ffmpeg: mjpeg decoder: Invalid data found when
// processing input (after libjpeg-turbo: Unsupported color conversion request)".
//
// Thread safety: not thread-safe; use one DecoderSet per thread. Decoders are created lazily,
// one instance per decoder name, and reused for every later image (no allocation per image).
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "decoders/decoder.h"
#include "media/api.h"

HDL_API_BEGIN
namespace hdl {

class DecoderSet {
 public:
  /// Decodes with the decoders of `registry`, which must outlive the set.
  explicit DecoderSet(const DecoderRegistry& registry = DecoderRegistry::builtin());
  ~DecoderSet();
  DecoderSet(const DecoderSet&) = delete;
  DecoderSet& operator=(const DecoderSet&) = delete;

  /// The header of `data`, from the first candidate decoder that supports it.
  Result<ImageInfo> read_info(std::span<const uint8_t> data);
  /// The HWC shape decode(data, request, ...) writes. Errors: as read_info, plus the request's
  /// (roi outside the image: kInvalidArgument; over max_pixels: kResourceExhausted).
  Result<Shape> output_shape(std::span<const uint8_t> data, const DecodeRequest& request);
  /// Decodes into `out` (shape from output_shape(); uint8; unit channel stride; rows may be
  /// strided). On error `out` may hold partial pixels but nothing outside it was written.
  Result<DecodeReport> decode(std::span<const uint8_t> data, const DecodeRequest& request,
                              const TensorView& out);

  /// The decoder instance for registry entry `index` (created on first use).
  ImageDecoder& decoder(size_t index);
  const DecoderRegistry& registry() const { return registry_; }

 private:
  // Calls `attempt(index)` for each candidate until one answers other than kUnsupported.
  template <typename T, typename Attempt>
  Result<T> first_supported(std::span<const uint8_t> data, Attempt&& attempt);

  const DecoderRegistry& registry_;
  std::vector<size_t> slot_of_entry_;                  // entries sharing a name share a slot
  std::vector<std::unique_ptr<ImageDecoder>> slots_;   // lazily created
};

}  // namespace hdl
HDL_API_END
