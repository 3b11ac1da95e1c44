// JPEG decoding with libjpeg-turbo (the libjpeg API of libjpeg62-turbo).
//
// Baseline, extended, progressive and arithmetic-coded 8-bit JPEGs; gray, YCbCr, RGB, CMYK and
// YCCK; every chroma layout. Output RGB, BGR or gray straight into caller memory with strided
// rows; region-of-interest decoding (rows above the window skipped, columns outside it not
// colour-converted, decoding stopped after the window's last row); DCT-domain scaling by 1/2,
// 1/4, 1/8 when DecodeRequest::min_width/min_height allow; EXIF orientation on request.
//
// By default results are bit-exact with Pillow's Image.open(p).convert("RGB") (and "L") and with
// torchvision.io.decode_jpeg: the accurate integer IDCT (JDCT_ISLOW) and fancy upsampling, as
// both use. JpegDecoderOptions trades that exactness for speed.
//
// Not decoded (kUnsupported, so the registry falls back to FFmpeg): 12-bit and lossless JPEG.
//
// Thread safety: one decoder instance per thread (it keeps a libjpeg decompressor and a scratch
// row between images); distinct instances are independent.
#pragma once

#include <memory>
#include <span>

#include "decoders/decoder.h"
#include "media/api.h"

HDL_API_BEGIN
namespace hdl {

/// Speed/exactness knobs of the JPEG decoder. The defaults match Pillow and torchvision.
struct JpegDecoderOptions {
  /// JDCT_IFAST instead of JDCT_ISLOW: a little faster, pixels differ by a few levels.
  bool fast_idct = false;  // default: exact
  /// false: libjpeg's merged/box chroma upsampling, faster for 4:2:0 and 4:2:2, differs at edges.
  bool fancy_upsampling = true;  // default: exact
  /// ColorFormat::kGray from a colour JPEG: false computes Pillow's convert("L") from the RGB
  /// pixels (exact); true takes the JPEG's Y plane (skips chroma work; differs by up to ~20
  /// levels on saturated colours).
  bool gray_from_luma = false;  // default: exact
  /// Region decodes through the JPEG entry-point index (decoders/jpeg/jpeg_index.h): true decodes
  /// the window's Huffman codes with detail::JpegWindowEntropy, straight from the file, and
  /// libjpeg-turbo does the rest (IDCT, upsampling, colour); false has libjpeg-turbo decode a
  /// JPEG of the window's MCUs. Same pixels either way; true is faster. The environment
  /// variable HDL_JPEG_OWN_HUFFMAN=0 sets the default to false (for A/B measurements).
  bool own_huffman = own_huffman_default();

  static bool own_huffman_default();
};

/// A new libjpeg-turbo decoder. name() is "libjpeg-turbo".
std::unique_ptr<ImageDecoder> make_jpeg_decoder(const JpegDecoderOptions& options = {});

/// True if `data` starts with a JPEG SOI marker followed by another marker (FF D8 FF).
bool probe_jpeg(std::span<const uint8_t> data);

}  // namespace hdl
HDL_API_END
