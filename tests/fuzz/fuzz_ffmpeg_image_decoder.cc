// fuzz_ffmpeg_image_decoder: decoders/ffmpeg_image_decoder (PNG, BMP, TIFF, WebP, JPEG
// fallback) over arbitrary bytes with random requests. Checks as fuzz_jpeg_decoder.
#include <memory>

#include "decoders/ffmpeg_image_decoder.h"
#include "tests/fuzz/decode_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hdl;
  static const std::unique_ptr<ImageDecoder> dec = make_ffmpeg_image_decoder();
  fuzz::Input in(data, size);
  fuzz::fuzz_one_decoder(*dec, in.payload, in.params);
  return 0;
}
