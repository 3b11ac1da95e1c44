// fuzz_jpeg_decoder: decoders/jpeg/jpeg_decoder over arbitrary bytes with random requests (region,
// DCT scaling, EXIF orientation, rgb/bgr/gray, partial decodes, slack columns) with the exact
// and the fast options. Checks: no crash, sanitizer report or hang; decode fails where
// read_info does; a decode writes nothing outside its view and slack; partial only if allowed.
#include <memory>

#include "decoders/jpeg/jpeg_decoder.h"
#include "tests/fuzz/decode_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hdl;
  // One decoder per option set, reused across inputs as a pipeline worker reuses its own.
  static const std::unique_ptr<ImageDecoder> exact = make_jpeg_decoder();
  static const std::unique_ptr<ImageDecoder> fast = make_jpeg_decoder(
      {.fast_idct = true, .fancy_upsampling = false, .gray_from_luma = true});
  fuzz::Input in(data, size);
  ImageDecoder& dec = in.params.ConsumeBool() ? *fast : *exact;
  fuzz::fuzz_one_decoder(dec, in.payload, in.params);
  return 0;
}
