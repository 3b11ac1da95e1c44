// A window of an indexed JPEG (decoders/jpeg/jpeg_index.h): which MCUs it reads, and those MCUs
// written as a small JPEG for libjpeg-turbo to decode.
//
// plan_jpeg_window widens a window's MCUs to the index's column step (and to two MCU columns)
// and gives the pixels they cover. write_jpeg_window writes a JPEG of them: the file's header
// with the frame size patched and DC tables completed, then each MCU row's entropy-coded
// segment copied bit for bit from the file, its first DC difference per component re-encoded
// against the previous segment's last DC, EOI, and zeros that keep libjpeg-turbo's fast Huffman
// path on to the last MCU. write_jpeg_window_header writes only the markers up to the scan
// header, then EOI: what libjpeg needs when JpegWindowEntropy (window_entropy.h) decodes the
// entropy-coded data. In: the file's bytes and its index; out: bytes in `out` (resized) and the
// window's place in the image. Failures: kInvalidArgument for MCUs outside the grid,
// kInvalidData when the file's bytes do not match the index.
//
// Thread safety: pure functions (`out` is the caller's).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "decoders/jpeg/jpeg_index.h"
#include "media/api.h"
#include "media/status.h"

HDL_API_BEGIN
namespace hdl::detail {

/// Writes to `out` a JPEG of the MCUs [r0, r1) x [c0', c1') of the indexed image, where c0' and
/// c1' are c0 and c1 widened to the index's column step (and to at least two MCU columns when
/// the image has two), and returns its origin in the image
/// (pixels). Its pixels equal the full decode's, except within 1 pixel of an edge that is not
/// an edge of the image (chroma upsampling context). kInvalidData if `data` does not match.
struct JpegWindow {
  int64_t x = 0, y = 0;           ///< origin of the written image in the indexed image
  int64_t width = 0, height = 0;  ///< its size
};
Result<JpegWindow> write_jpeg_window(std::span<const uint8_t> data, const JpegScanIndex& index,
                                     int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                                     std::vector<uint8_t>& out);

/// The MCUs a window decode reads: [r0, r1) x [c0, c1) widened as write_jpeg_window widens
/// them, and the pixels they cover.
struct JpegWindowPlan {
  JpegWindow window;
  int64_t r0 = 0, r1 = 0, c0 = 0, c1 = 0;
};
/// kInvalidArgument if the MCUs are not inside the image's grid.
Result<JpegWindowPlan> plan_jpeg_window(const JpegScanIndex& index, int64_t r0, int64_t r1, int64_t c0, int64_t c1);

/// Writes to `out` the markers of the window JPEG of `plan` up to its scan header, then EOI:
/// what libjpeg needs to set up a decode of the window when JpegWindowEntropy, not libjpeg,
/// decodes the entropy-coded data. (A decoder reading past the scan header meets EOI.)
void write_jpeg_window_header(const JpegScanIndex& index, const JpegWindowPlan& plan, std::vector<uint8_t>& out);

}  // namespace hdl::detail
HDL_API_END
