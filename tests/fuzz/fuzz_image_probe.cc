// fuzz_image_probe: header probing (decoders/detail/image_header) and the registry's
// DecoderSet fallback over arbitrary bytes. Checks: no crash; the probes, sniff_format and
// candidates agree; parse_image_header gives sane sizes; DecoderSet's read_info, output_shape
// and decode make the same choice (the promised shape is the shape written) and decode never
// writes outside the view.
#include <string>

#include "decoders/decoder_set.h"
#include "decoders/detail/image_header.h"
#include "tests/fuzz/decode_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hdl;
  static DecoderSet decoders;  // one per worker thread in the pipeline: reused
  fuzz::Input in(data, size);
  const std::span<const uint8_t> bytes = in.payload;

  // Probes: each recognised format is sniffed as the first matching entry says.
  const DecoderRegistry& reg = decoders.registry();
  const std::vector<size_t> cands = reg.candidates(bytes);
  const std::string sniffed = reg.sniff_format(bytes);
  HDL_FUZZ_CHECK(cands.empty() == sniffed.empty(), "candidates and sniff_format disagree");
  if (!cands.empty()) HDL_FUZZ_CHECK(reg.entries()[cands[0]].format == sniffed, "sniffed format is not the first candidate's");
  const int magic = int(detail::is_jpeg(bytes)) + int(detail::is_png(bytes)) + int(detail::is_bmp(bytes)) +
                    int(detail::is_tiff(bytes)) + int(detail::is_webp(bytes));
  HDL_FUZZ_CHECK(magic <= 1, "two formats' magic bytes match the same input");

  ImageInfo header;
  if (detail::parse_image_header(bytes, &header).is_ok()) {
    HDL_FUZZ_CHECK(header.width > 0 && header.height > 0, "a parsed header with an empty size");
    HDL_FUZZ_CHECK(header.orientation >= 1 && header.orientation <= 8, "orientation out of 1..8");
  }
  const int o = detail::jpeg_exif_orientation(bytes);
  HDL_FUZZ_CHECK(o >= 1 && o <= 8, "EXIF orientation out of 1..8");

  // DecoderSet: the fallback chain as the pipeline's image_decoder uses it.
  auto info = decoders.read_info(bytes);
  if (!info.is_ok()) return 0;
  const bool slack = in.params.ConsumeBool();
  const DecodeRequest req = fuzz::random_request(in.params, *info);
  auto shape = decoders.output_shape(bytes, req);
  if (!shape.is_ok()) return 0;
  fuzz::checked_decode(*shape, req, slack,
                       [&](const DecodeRequest& r, const TensorView& v) { return decoders.decode(bytes, r, v); });
  return 0;
}
