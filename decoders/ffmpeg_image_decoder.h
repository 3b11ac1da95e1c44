// PNG, BMP, TIFF and WebP (and JPEG as a fallback for what libjpeg-turbo cannot decode: 12-bit,
// lossless) through FFmpeg's libavcodec image decoders, parsed from memory.
//
// The header is read from the bytes by this library before any codec state is touched, so
// DecodeRequest::max_pixels refuses a decompression bomb before allocation. The whole image is
// decoded, then the window is converted and copied into the caller's (strided) memory. Pixels
// match Pillow's Image.open(p).convert("RGB") / convert("L"): alpha is dropped (not composited),
// palettes are expanded, 16-bit samples keep their high byte (>> 8), 1/2/4-bit gray is scaled
// to 0..255. Exception: Pillow clips 16-bit gray (mode "I") to 255 instead of shifting; we shift.
// Formats FFmpeg hands back as YUV (lossy WebP, some TIFF and JPEG) go through libswscale and are
// close to, not equal to, Pillow's output. No DCT scaling: DecodeReport::scale_denom is always 1.
// EXIF orientation is known for JPEG (APP1) and TIFF (tag 274); PNG and WebP report 1.
//
// Thread safety: one instance per thread (it caches one codec context per format and scratch
// buffers between images); distinct instances are independent.
#pragma once

#include <memory>
#include <span>

#include "decoders/decoder.h"
#include "media/api.h"

HDL_API_BEGIN
namespace hdl {

/// A new FFmpeg image decoder. name() is "ffmpeg".
std::unique_ptr<ImageDecoder> make_ffmpeg_image_decoder();

/// Magic-byte probes of the formats this decoder handles.
bool probe_png(std::span<const uint8_t> data);
bool probe_bmp(std::span<const uint8_t> data);
bool probe_tiff(std::span<const uint8_t> data);
bool probe_webp(std::span<const uint8_t> data);

}  // namespace hdl
HDL_API_END
