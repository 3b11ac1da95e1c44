// Private: magic-byte probes and header parsing straight from the bytes, without any codec.
//
// Used by the registry (probes), by the FFmpeg decoder (dimensions before any decoder state is
// touched, so max_pixels is enforced before allocation) and by the JPEG decoder (EXIF
// orientation). Every reader bounds-checks: the bytes are untrusted.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <span>

#include "decoders/decoder.h"
#include "media/api.h"

HDL_API_BEGIN
namespace hdl::detail {

using Bytes = std::span<const uint8_t>;

/// FF D8 FF.
bool is_jpeg(Bytes data);
/// The 8-byte PNG signature.
bool is_png(Bytes data);
/// "BM" followed by a known DIB header size.
bool is_bmp(Bytes data);
/// "II*\0" or "MM\0*" (classic TIFF; BigTIFF is not recognised).
bool is_tiff(Bytes data);
/// "RIFF" <size> "WEBP".
bool is_webp(Bytes data);

/// Fills format, width, height, channels, color_space (and orientation, progressive and
/// subsampling where the format says) from the header bytes of a JPEG, PNG, BMP, TIFF or WebP.
/// Errors: kInvalidData for a header that is cut short or inconsistent, kUnsupported for
/// recognised variants FFmpeg cannot decode (animated WebP).
Status parse_image_header(Bytes data, ImageInfo* info);

/// "444", "422", "420", "440", "411", "410", "441", "gray" or "other" from a JPEG's per-component
/// sampling factors (h[i], v[i] for the first min(components, 4) components).
const char* jpeg_subsampling_name(int components, const int h[], const int v[]);

/// The number of SOS markers in a JPEG (segments walked, entropy-coded data skipped to its next
/// marker), counting stops at `limit` + 1. Linear in the file's size; for decoders that have no
/// scan limit of their own (FFmpeg's mjpeg).
int count_jpeg_scans(Bytes data, int limit);

/// The EXIF orientation (1..8) from a JPEG's first APP1 "Exif" segment; 1 when there is none
/// or it is malformed or out of range (as Pillow's exif_transpose treats it).
int jpeg_exif_orientation(Bytes data);

}  // namespace hdl::detail
HDL_API_END
