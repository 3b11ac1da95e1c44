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

#include "decoders/jpeg/index_cache.h"
#include "decoders/jpeg/jpeg_index.h"
#include "decoders/jpeg/jpeg_window.h"
#include "decoders/jpeg/window_entropy.h"

#include "decoders/detail/decode_window.h"
#include "decoders/detail/image_header.h"
#include "decoders/detail/pillow_color.h"

namespace hdl {
namespace {

using detail::DecodeWindow;

// libjpeg reports errors through callbacks. error_exit must not return, so it longjmps back to
// the setjmp in the JpegDecoder method that called into libjpeg; warnings (corrupt or missing
// data, which libjpeg papers over with grey) are recorded here and judged after the decode.
// Nothing is ever printed and exit() is never called.
struct ErrorState {
  jpeg_error_mgr pub;  // first: libjpeg casts cinfo->err to it
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];  // the error that ended the call
  int code = 0;                   // its libjpeg message code
  char warning[JMSG_LENGTH_MAX];  // the first warning, or the first one that lost data
  bool data_lost = false;
  int warnings = 0;
  int max_scans = 0;       // of the request being decoded; 0: no limit
  bool over_limit = false; // the error is a limit of the request (kResourceExhausted)

  void reset() {
    message[0] = warning[0] = '\0';
    code = 0;
    over_limit = false;
    data_lost = false;
    warnings = 0;
    pub.num_warnings = 0;
  }
};

ErrorState* state(j_common_ptr cinfo) { return reinterpret_cast<ErrorState*>(cinfo->err); }

// Warnings after which part of the image is grey or garbage rather than what was encoded.
bool loses_data(int code) {
  switch (code) {
    case JWRN_HIT_MARKER: case JWRN_JPEG_EOF: case JWRN_HUFF_BAD_CODE: case JWRN_MUST_RESYNC:
    case JWRN_NOT_SEQUENTIAL: case JWRN_BOGUS_PROGRESSION: case JWRN_ARITH_BAD_CODE:
      return true;
    default:
      return false;
  }
}

void on_error_exit(j_common_ptr cinfo) {
  ErrorState* s = state(cinfo);
  s->code = s->pub.msg_code;
  (*s->pub.format_message)(cinfo, s->message);
  longjmp(s->jump, 1);
}

void on_emit_message(j_common_ptr cinfo, int level) {
  if (level >= 0) return;  // trace messages
  ErrorState* s = state(cinfo);
  bool lost = loses_data(s->pub.msg_code);
  if (s->warnings++ == 0 || (lost && !s->data_lost)) (*s->pub.format_message)(cinfo, s->warning);
  s->data_lost |= lost;
  ++s->pub.num_warnings;
}

void on_output_message(j_common_ptr) {}

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

// Called by libjpeg once per iMCU row it absorbs (jpeg_start_decompress reads every scan of a
// multi-scan file before the first row comes out) and once per output row: a scan is counted
// when its SOS marker has been read, before its entropy data is decoded.
void on_progress(j_common_ptr cinfo) {
  auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
  ErrorState* s = state(cinfo);
  if (s->max_scans > 0 && d->input_scan_number > s->max_scans) {
    std::snprintf(s->message, sizeof(s->message), "too many scans: more than max_scans (%d)", s->max_scans);
    s->code = JMSG_LASTMSGCODE;
    s->over_limit = true;
    longjmp(s->jump, 1);
  }
}

bool is_unsupported(int code) {
  switch (code) {
    case JERR_BAD_PRECISION: case JERR_SOF_UNSUPPORTED: case JERR_NOT_COMPILED:
    case JERR_ARITH_NOTIMPL: case JERR_CONVERSION_NOTIMPL: case JERR_NOTIMPL:
      return true;
    default:
      return false;
  }
}

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
    std::memset(&cinfo_, 0, sizeof(cinfo_));
    cinfo_.err = jpeg_std_error(&err_.pub);
    err_.pub.error_exit = on_error_exit;
    err_.pub.emit_message = on_emit_message;
    err_.pub.output_message = on_output_message;
    err_.reset();
    progress_.progress_monitor = on_progress;  // the decompressor is made per file (read_header)
    cinfo_.client_data = &entropy_;             // (kept by jpeg_create_decompress)
  }
  ~JpegDecoder() override {
    if (created_) jpeg_destroy_decompress(&cinfo_);
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
  // Parses the header of `data` with a fresh decompressor. False on a libjpeg error (err_ says
  // which). Fresh, because libjpeg keeps quantisation and Huffman tables across images on one
  // decompressor (for abbreviated streams): a file lacking a table would otherwise decode with
  // the tables of whatever this thread decoded before, where a fresh decoder refuses it (or
  // uses the standard Huffman tables), so the outcome would depend on the thread's history
  // (found by fuzz_jpeg_index; tests/fuzz/regressions/fuzz_jpeg_decoder/reused_*). Creating a
  // decompressor costs about 0.13 us.
  bool read_header(std::span<const uint8_t> data) {
    err_.reset();
    if (setjmp(err_.jump)) {
      if (created_) jpeg_abort_decompress(&cinfo_);
      return false;
    }
    if (created_) jpeg_destroy_decompress(&cinfo_);
    created_ = false;
    jpeg_create_decompress(&cinfo_);  // longjmps on out of memory: created_ stays false
    cinfo_.progress = &progress_;
    created_ = true;
    jpeg_mem_src(&cinfo_, data.data(), static_cast<unsigned long>(data.size()));
    jpeg_read_header(&cinfo_, TRUE);
    return true;
  }

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

  Status error_status() const {
    if (is_unsupported(err_.code)) return Status::unsupported(err_.message);
    if (err_.code == JERR_OUT_OF_MEMORY || err_.over_limit) return Status::resource_exhausted(err_.message);
    return Status::invalid_data(err_.message);
  }

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
  // the MCUs around the window, decoded like any other. nullopt when the index does not apply or
  // something about it fails (the caller then decodes the file itself; `*header_replaced` says
  // whether libjpeg must re-read the file's header first).
  std::optional<Result<DecodeReport>> decode_indexed(std::span<const uint8_t> data, const DecodeRequest& request,
                                                     const DecodeWindow& window, const TensorView& out,
                                                     bool* header_replaced) {
    if (window.orientation != 1 || window.scale_denom != 1 || request.roi.empty()) return std::nullopt;
    if (cinfo_.progressive_mode || cinfo_.arith_code || cinfo_.restart_interval != 0 ||
        cinfo_.data_precision != 8 || (cinfo_.num_components != 1 && cinfo_.num_components != 3) ||
        cinfo_.comps_in_scan != cinfo_.num_components)
      return std::nullopt;
    const int64_t width = cinfo_.image_width, height = cinfo_.image_height;
    const bool one = cinfo_.num_components == 1;
    const int64_t mcu_w = one ? 8 : 8 * cinfo_.max_h_samp_factor, mcu_h = one ? 8 : 8 * cinfo_.max_v_samp_factor;
    const int64_t mcus_x = (width + mcu_w - 1) / mcu_w;
    // One pixel of context each side: fancy chroma upsampling blends each chroma sample with
    // its neighbour on the side of the pixel (a window starting at an even column needs the
    // chroma sample left of it, the one covering the column before; likewise at the other
    // edges); IDCT and colour conversion are per block and per pixel.
    constexpr int64_t kContext = 1;
    const Roi& win = window.stored;
    const int64_t c0 = std::max<int64_t>(0, win.x - kContext) / mcu_w;
    const int64_t c1 = (std::min(width, win.x + win.w + kContext) + mcu_w - 1) / mcu_w;
    const int64_t r0 = std::max<int64_t>(0, win.y - kContext) / mcu_h;
    const int64_t r1 = (std::min(height, win.y + win.h + kContext) + mcu_h - 1) / mcu_h;
    // Without the index libjpeg Huffman-decodes every MCU of the rows above the window's end;
    // with it, the window's MCUs (widened to the index's column step). Our own Huffman decoder
    // is faster than libjpeg's, so once a file has an index it pays for any window; building
    // one (an extra pass) pays only for windows well inside the image, or when the caller
    // expects many (random crops).
    const bool own = HDL_JPEG_OWN_ENTROPY && options_.own_huffman;
    auto worth = [&](int64_t step) {
      const int64_t w0 = c0 / step * step, w1 = std::min(mcus_x, (c1 + step - 1) / step * step);
      return (w1 - w0) * (r1 - r0) * 10 <= r1 * mcus_x * 9;
    };
    JpegIndexCache& cache = *request.index_cache;
    bool unindexable = false;
    std::shared_ptr<const detail::JpegScanIndex> index = cache.find(request.index_key, data, &unindexable);
    if (!index) {
      if (!worth(1) && !request.index_every_file) return std::nullopt;
      if (unindexable || !cache.has_room()) return std::nullopt;
      auto built = detail::build_jpeg_index(data, cache.file_share());
      cache.insert(request.index_key, data, built.is_ok() ? *built : nullptr);
      if (!built.is_ok()) return std::nullopt;
      index = *built;
    }
    if (!own && !worth(detail::jpeg_index_column_step(*index))) return std::nullopt;
    // From here on a failure is counted: the index applied, and the file is decoded without it.
    auto fallback = [&] {
      cache.count_fallback();
      return std::nullopt;
    };
    const detail::JpegMcuGrid& grid = detail::jpeg_index_grid(*index);
    if (grid.width != width || grid.height != height || grid.mcu_w != mcu_w || grid.mcu_h != mcu_h)
      return fallback();
    Result<detail::JpegWindow> piece = Status::internal("");
#if HDL_JPEG_OWN_ENTROPY
    if (own) {
      auto plan = detail::plan_jpeg_window(*index, r0, r1, c0, c1);
      if (!plan.is_ok() || !entropy_.start(data, *index, *plan).is_ok()) return fallback();
      detail::write_jpeg_window_header(*index, *plan, window_jpeg_);
      piece = plan->window;
    }
#endif
    if (!own) piece = detail::write_jpeg_window(data, *index, r0, r1, c0, c1, window_jpeg_);
    if (!piece.is_ok()) return fallback();

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
  jpeg_decompress_struct cinfo_;
  ErrorState err_;
  jpeg_progress_mgr progress_{};
  bool created_ = false;
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
