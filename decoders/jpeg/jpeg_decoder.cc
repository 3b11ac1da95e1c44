// The libjpeg-turbo decoder (decoders/jpeg/jpeg_decoder.h). JpegDecoder reads a file's header
// with a fresh decompressor, checks the request against it (decoders/detail/decode_window.h) and
// decodes the window's rows, straight into the caller's rows or through a scratch row (colour
// conversion, orientation). Its other pieces, one job each:
//   detail/libjpeg_errors   libjpeg's error manager: errors longjmp back here, warnings recorded
//   detail/indexed_window   the index half of a region decode through the entry-point index
//                           (jpeg_index.h); the libjpeg half is here (decode_indexed: the window
//                           JPEG read, JpegWindowEntropy swapped in for libjpeg's Huffman decoding)
#include "decoders/jpeg/jpeg_decoder.h"

// clang-format off: jpeglib.h needs <cstdio> first.
#include <csetjmp>
#include <cstdio>
#include <jpeglib.h>
#include <jerror.h>
// libjpeg's internal interfaces, for struct jpeg_entropy_decoder: an indexed window's Huffman
// decoding is swapped in there (decode_indexed). Without the header, libjpeg decodes a window
// JPEG instead.
#if __has_include(<jpegint.h>)
#include <jpegint.h>
#define HDL_JPEG_OWN_ENTROPY 1
#else
#define HDL_JPEG_OWN_ENTROPY 0
#endif
// clang-format on

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

#include "decoders/detail/decode_window.h"
#include "decoders/detail/image_header.h"
#include "decoders/detail/pillow_color.h"
#include "decoders/jpeg/detail/indexed_window.h"
#include "decoders/jpeg/detail/libjpeg_errors.h"
#include "decoders/jpeg/index_cache.h"
#include "decoders/jpeg/jpeg_window.h"
#include "decoders/jpeg/window_entropy.h"

namespace hdl {
namespace {

using detail::DecodeWindow;
using detail::jpeg::ErrorState;

#if HDL_JPEG_OWN_ENTROPY
// libjpeg's coefficient controller calls this for every MCU of an indexed window (raster order;
// MCU_data == nullptr when it skips rows), with the blocks zeroed. client_data is the decoder's
// JpegWindowEntropy. A mismatch ends the decode as a libjpeg error would: the caller then
// decodes the file itself.
boolean window_decode_mcu(j_decompress_ptr cinfo, JBLOCKROW* mcu) {
  auto* entropy = static_cast<detail::JpegWindowEntropy*>(cinfo->client_data);
  if (!entropy->decode_mcu(mcu ? reinterpret_cast<int16_t* const*>(mcu) : nullptr)) ERREXIT(cinfo, JERR_BAD_DCT_COEF);
  return TRUE;
}
#endif

const char* color_space_name(J_COLOR_SPACE cs) {
  switch (cs) {
    case JCS_GRAYSCALE: return "gray";
    case JCS_YCbCr: return "ycbcr";
    case JCS_RGB: return "rgb";
    case JCS_CMYK: return "cmyk";
    case JCS_YCCK: return "ycck";
    default: return "unknown";
  }
}

// What libjpeg is asked to produce, and what is left to do per row.
enum class Convert { kNone, kRgbToGray, kCmyk };
struct OutputMode {
  J_COLOR_SPACE space;
  int components;  // of libjpeg's output
  Convert convert;
  ColorFormat color;  // requested
};

class JpegDecoder final : public ImageDecoder {
 public:
  explicit JpegDecoder(const JpegDecoderOptions& options) : options_(options) {
    cinfo_.client_data = &entropy_;  // (kept by jpeg_create_decompress)
  }

  const char* name() const override { return "libjpeg-turbo"; }

  Result<ImageInfo> read_info(std::span<const uint8_t> data) override {
    if (!read_header(data)) return error_status();
    ImageInfo info = header_info(data, /*want_orientation=*/true);
    jpeg_abort_decompress(&cinfo_);
    return info;
  }

  Result<Shape> output_shape(const ImageInfo& info, const DecodeRequest& request) override {
    HDL_ASSIGN_OR_RETURN(DecodeWindow window, detail::decode_window(info, request, 8));
    return window.shape;
  }

  Result<DecodeReport> decode(std::span<const uint8_t> data, const DecodeRequest& request,
                              const TensorView& out) override {
    if (!read_header(data)) return error_status();
    ImageInfo info = header_info(data, request.apply_orientation);
    auto window = detail::decode_window(info, request, 8);
    if (window.is_ok()) {
      Status s = detail::check_output(out, *window);
      if (!s.is_ok()) window = s;
    }
    if (!window.is_ok()) {
      jpeg_abort_decompress(&cinfo_);
      return window.status();
    }
    slack_columns_ = request.slack_columns;
    err_.max_scans = request.max_scans;
    if (request.index_cache) {
      bool header_replaced = false;
      if (auto done = decode_indexed(data, request, *window, out, &header_replaced)) return std::move(*done);
      if (header_replaced && !read_header(data)) return error_status();  // back to the file itself
    }
    if (!decode_rows(*window, output_mode(request.color), out)) return error_status();
    DecodeReport report;
    report.scale_denom = window->scale_denom;
    if (err_.data_lost) {
      if (!request.allow_partial) return Status::invalid_data(err_.warning);
      report.partial = true;
    }
    if (err_.warnings > 0) report.warning = err_.warning;
    return report;
  }

 private:
  // Parses the header of `data` with a fresh decompressor (Decompressor::read_header says why
  // fresh). False on a libjpeg error (err_ says which).
  bool read_header(std::span<const uint8_t> data) { return libjpeg_.read_header(data); }

  ImageInfo header_info(std::span<const uint8_t> data, bool want_orientation) const {
    ImageInfo info;
    info.format = "jpeg";
    info.width = cinfo_.image_width;
    info.height = cinfo_.image_height;
    info.channels = cinfo_.num_components;
    info.progressive = cinfo_.progressive_mode;
    info.color_space = color_space_name(cinfo_.jpeg_color_space);
    int h[4] = {1, 1, 1, 1}, v[4] = {1, 1, 1, 1};
    for (int c = 0; c < std::min(cinfo_.num_components, 4); ++c) {
      h[c] = cinfo_.comp_info[c].h_samp_factor;
      v[c] = cinfo_.comp_info[c].v_samp_factor;
    }
    info.subsampling = detail::jpeg_subsampling_name(cinfo_.num_components, h, v);
    if (want_orientation) info.orientation = detail::jpeg_exif_orientation(data);
    return info;
  }

  OutputMode output_mode(ColorFormat color) const {
    J_COLOR_SPACE in = cinfo_.jpeg_color_space;
    if (in == JCS_CMYK || in == JCS_YCCK) return {JCS_CMYK, 4, Convert::kCmyk, color};
    if (color == ColorFormat::kGray) {
      if (in == JCS_GRAYSCALE || options_.gray_from_luma)
        return {JCS_GRAYSCALE, 1, Convert::kNone, color};
      return {JCS_EXT_RGB, 3, Convert::kRgbToGray, color};
    }
    return {color == ColorFormat::kBGR ? JCS_EXT_BGR : JCS_EXT_RGB, 3, Convert::kNone, color};
  }

  Status error_status() const { return libjpeg_.error_status(); }

  // Runs the decompression for `window` after read_header. False on a libjpeg error.
  // Only trivially destructible locals below setjmp: a longjmp skips destructors.
  bool decode_rows(const DecodeWindow& window, OutputMode mode, const TensorView& out) {
    if (setjmp(err_.jump)) {
      jpeg_abort_decompress(&cinfo_);
      return false;
    }
    cinfo_.out_color_space = mode.space;
    cinfo_.dct_method = options_.fast_idct ? JDCT_IFAST : JDCT_ISLOW;
    cinfo_.do_fancy_upsampling = options_.fancy_upsampling ? TRUE : FALSE;
    cinfo_.scale_num = 1;
    cinfo_.scale_denom = static_cast<unsigned>(window.scale_denom);
    jpeg_start_decompress(&cinfo_);
#if HDL_JPEG_OWN_ENTROPY
    if (own_entropy_) {
      if (!cinfo_.entropy || cinfo_.blocks_in_MCU != entropy_.blocks_per_mcu() ||
          int64_t(cinfo_.MCUs_per_row) != entropy_.mcus_per_row())
        fail("the window's MCUs are not the index's");
      cinfo_.entropy->decode_mcu = window_decode_mcu;
    }
#endif
    const int64_t d = window.scale_denom;
    if (cinfo_.output_width != JDIMENSION((window.width + d - 1) / d) ||
        cinfo_.output_height != JDIMENSION((window.height + d - 1) / d))
      fail("libjpeg scaled to an unexpected size");
    const Roi& win = window.scaled;
    JDIMENSION x0 = 0, cols = cinfo_.output_width;
    if (win.w < int64_t(cols) && crop_is_exact()) crop_columns(win, &x0, &cols);
    size_t raw_bytes = size_t(cols) * mode.components;
    size_t need = raw_bytes + size_t(win.w) * window.channels;
    if (scratch_.size() < need) scratch_.resize(need);  // grows only: no steady-state allocation
    skip_rows(JDIMENSION(win.y));
    // libjpeg writes `cols` pixels from column x0: straight into the caller's rows when the
    // columns outside the window fit in the caller's slack (or there are none).
    const int64_t left = int64_t(win.x) - int64_t(x0), right = int64_t(x0) + int64_t(cols) - (win.x + win.w);
    const int64_t slack = std::max<int64_t>(slack_columns_, 0);
    bool direct = left <= slack && right <= slack && window.orientation == 1 &&
                  mode.convert == Convert::kNone && out.strides[1] == window.channels &&
                  (slack == 0 || out.strides[0] >= (win.w + 2 * slack) * window.channels);
    if (direct) {
      read_rows_into(out, win, left * window.channels);
    } else {
      read_rows_via_scratch(window, mode, out, int64_t(win.x) - int64_t(x0), cols);
    }
    jpeg_abort_decompress(&cinfo_);  // skips the rest of the file: nothing more is needed
    return true;
  }

  // The region through the file's entry-point index (decoders/jpeg/jpeg_index.h): a JPEG of just
  // the MCUs around the window (made by detail/indexed_window.h), decoded like any other.
  // nullopt when the index does not apply or something about it fails (the caller then decodes
  // the file itself; `*header_replaced` says whether libjpeg must re-read the file's header
  // first).
  std::optional<Result<DecodeReport>> decode_indexed(std::span<const uint8_t> data, const DecodeRequest& request,
                                                     const DecodeWindow& window, const TensorView& out,
                                                     bool* header_replaced) {
    const bool own = HDL_JPEG_OWN_ENTROPY && options_.own_huffman;
    // The index stays alive until libjpeg has read the window: entropy_ reads it (the cache
    // drops an index it has no budget for).
    std::shared_ptr<const detail::JpegScanIndex> index;
    const std::optional<detail::JpegWindow> piece =
        detail::jpeg::prepare_indexed_window(cinfo_, data, request, window, own, entropy_, window_jpeg_, index);
    if (!piece) return std::nullopt;
    // From here on a failure is counted: the index applied, and the file is decoded without it.
    JpegIndexCache& cache = *request.index_cache;
    auto fallback = [&] {
      cache.count_fallback();
      return std::nullopt;
    };
    *header_replaced = true;
    if (!read_header(window_jpeg_)) return fallback();
    DecodeWindow sub = window;
    sub.width = piece->width;
    sub.height = piece->height;
    sub.stored.x -= piece->x;
    sub.stored.y -= piece->y;
    sub.scaled = sub.stored;
    own_entropy_ = own;
    const bool decoded = decode_rows(sub, output_mode(request.color), out);
    own_entropy_ = false;
    if (!decoded || err_.warnings > 0) return fallback();
    cache.count_hit();
    return Result<DecodeReport>(DecodeReport{});
  }

  // libjpeg-turbo 2.1's jpeg_crop_scanline sizes each component's row as if it were upsampled by
  // max_h / h, but under DCT scaling chroma may be IDCT-scaled up instead (4:1:0 at 1/2 ends up
  // upsampled by 2, not 4), and the fancy upsampler then treats the middle of the row as its
  // right edge. Crop only when every component is upsampled horizontally by the nominal ratio
  // or not at all; otherwise decode whole rows (rows are still skipped).
  bool crop_is_exact() const {
    for (int c = 0; c < cinfo_.num_components; ++c) {
      const jpeg_component_info& comp = cinfo_.comp_info[c];
      bool nominal = comp.DCT_scaled_size == cinfo_.min_DCT_scaled_size;
      bool full_size = comp.h_samp_factor * comp.DCT_scaled_size ==
                       cinfo_.max_h_samp_factor * cinfo_.min_DCT_scaled_size;
      if (!nominal && !full_size) return false;
    }
    return true;
  }

  // Decodes a wider span of columns than the window: libjpeg widens the left edge to an iMCU
  // boundary, and the pixels next to either edge of a cropped decode differ from a full decode
  // (fancy upsampling replicates the edge chroma sample, which reaches one chroma sample in;
  // progressive block smoothing uses DC values up to two blocks away). A margin of one iMCU on
  // each side (two for progressive files) makes the window's pixels equal those of a full
  // decode; every column of margin costs IDCT, upsampling and colour conversion.
  void crop_columns(const Roi& win, JDIMENSION* x0, JDIMENSION* cols) {
    const int64_t imcus = cinfo_.progressive_mode ? 2 : 1;
    int64_t margin = imcus * int64_t(cinfo_.min_DCT_scaled_size) * cinfo_.max_h_samp_factor;
    int64_t left = std::max<int64_t>(0, win.x - margin);
    int64_t right = std::min<int64_t>(cinfo_.output_width, win.x + win.w + margin);
    if (left == 0 && right == int64_t(cinfo_.output_width)) return;
    *x0 = JDIMENSION(left);
    *cols = JDIMENSION(right - left);
    jpeg_crop_scanline(&cinfo_, x0, cols);
  }

  // Skips to row `y`: jpeg_skip_scanlines to the start of y's iMCU row, then reads and drops
  // the rest. libjpeg-turbo 2.1 mis-decodes the rows after skipping into the middle of a row
  // group with merged upsampling (fancy_upsampling = false) on multi-scan files; whole iMCU
  // rows are safe, and the rows decoded in vain are fewer than one iMCU row.
  void skip_rows(JDIMENSION y) {
    JDIMENSION group = JDIMENSION(cinfo_.max_v_samp_factor * cinfo_.min_DCT_scaled_size);
    JDIMENSION aligned = y / group * group;
    if (aligned > 0 && jpeg_skip_scanlines(&cinfo_, aligned) != aligned)
      fail("could not skip to the first row of the window");
    JSAMPROW row = scratch_.data();
    while (cinfo_.output_scanline < y)
      if (jpeg_read_scanlines(&cinfo_, &row, 1) != 1) fail("libjpeg returned no rows");
  }

  // Fast path: libjpeg writes straight into the caller's rows, each starting `back` bytes before
  // the row (the columns left of the window, in the caller's slack).
  void read_rows_into(const TensorView& out, const Roi& win, int64_t back) {
    auto* base = static_cast<uint8_t*>(out.data) - back;
    JSAMPROW rows[16];
    for (int64_t r = 0; r < win.h;) {
      int n = int(std::min<int64_t>(16, win.h - r));
      for (int i = 0; i < n; ++i) rows[i] = base + (r + i) * out.strides[0];
      JDIMENSION got = jpeg_read_scanlines(&cinfo_, rows, JDIMENSION(n));
      if (got == 0) fail("libjpeg returned no rows");
      r += got;
    }
  }

  // General path: one row at a time into scratch_, then the window's columns are converted and
  // written (oriented) into `out`.
  void read_rows_via_scratch(const DecodeWindow& window, OutputMode mode, const TensorView& out,
                             int64_t skip_cols, JDIMENSION cols) {
    const int64_t w = window.scaled.w;
    size_t raw_bytes = size_t(cols) * mode.components;
    uint8_t* raw = scratch_.data();
    uint8_t* converted = raw + raw_bytes;
    for (int64_t r = 0; r < window.scaled.h; ++r) {
      JSAMPROW row = raw;
      if (jpeg_read_scanlines(&cinfo_, &row, 1) != 1) fail("libjpeg returned no rows");
      const uint8_t* px = raw + skip_cols * mode.components;
      if (mode.convert == Convert::kCmyk) {
        detail::cmyk_to_color(px, converted, w, mode.color);
        px = converted;
      } else if (mode.convert == Convert::kRgbToGray) {
        detail::rgb_to_gray(px, 3, converted, w);
        px = converted;
      }
      detail::write_window_row(px, r, window, out);
    }
  }

  [[noreturn]] void fail(const char* what) {
    std::snprintf(err_.message, sizeof(err_.message), "%s", what);
    err_.code = JMSG_LASTMSGCODE;
    longjmp(err_.jump, 1);
  }

  JpegDecoderOptions options_;
  detail::jpeg::Decompressor libjpeg_;  // made fresh per file (read_header)
  jpeg_decompress_struct& cinfo_ = libjpeg_.cinfo;
  ErrorState& err_ = libjpeg_.err;
  int64_t slack_columns_ = 0;  // of the request being decoded
  std::vector<uint8_t> scratch_;
  std::vector<uint8_t> window_jpeg_;  // decode_indexed's JPEG of the window's MCUs (or its header)
  detail::JpegWindowEntropy entropy_;  // decode_indexed's Huffman decoding, when own_huffman
  bool own_entropy_ = false;           // decode_rows swaps entropy_ into libjpeg
};

}  // namespace

bool JpegDecoderOptions::own_huffman_default() {
  static const bool own = [] {
    const char* v = std::getenv("HDL_JPEG_OWN_HUFFMAN");
    return !(v && std::string_view(v) == "0");
  }();
  return own;
}

std::unique_ptr<ImageDecoder> make_jpeg_decoder(const JpegDecoderOptions& options) {
  return std::make_unique<JpegDecoder>(options);
}

bool probe_jpeg(std::span<const uint8_t> data) { return detail::is_jpeg(data); }

}  // namespace hdl
