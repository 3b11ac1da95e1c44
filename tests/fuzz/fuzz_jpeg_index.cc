// fuzz_jpeg_index: the JPEG entry-point index (decoders/jpeg/) against the plain region decode,
// on arbitrary bytes.
//
// For a few random windows of each input it checks the documented contract twice:
//  1. What users get: the JPEG decoder with a JpegIndexCache, as pipeline/operators/
//     image_decoder.cc passes it for random crops (index_every_file, the dataset index as key,
//     slack columns now and then), must give the same outcome as the same decoder without the
//     cache: both succeed or both fail, and succeeding decodes have the same pixels and the
//     same partial flag. The first window builds the index, the later ones use it. The indexed
//     decoder decodes windows' Huffman codes itself (JpegWindowEntropy, the default) or, for
//     some inputs, has libjpeg decode a window JPEG (own_huffman = false).
//  2. The index itself: build_jpeg_index, then write_jpeg_window for the MCUs around the
//     window (one pixel of chroma context, as the decoder asks), decoded as a whole JPEG, must
//     give the pixels of the plain region decode of the same rectangle, except within one
//     pixel of an edge that is not an edge of the image; and it must decode exactly when the
//     plain region decode does.
#include <algorithm>
#include <cstring>
#include <memory>

#include "decoders/jpeg/index_cache.h"
#include "decoders/jpeg/jpeg_decoder.h"
#include "decoders/jpeg/jpeg_index.h"
#include "decoders/jpeg/jpeg_window.h"
#include "tests/fuzz/fuzz_util.h"

namespace hdl::fuzz {
namespace {

// Images up to 64 Kpixel (256 x 256). What the index does (MCU grids, restart intervals,
// progressive scans, DC prediction, window JPEGs) does not depend on size, and each input is
// decoded up to 17 times, so a small cap buys ten times the executions of fuzz_jpeg_decoder's
// 1 Mpixel. seeds.py gives larger corpus JPEGs as lossless crops (jpegtran) to keep their
// coding modes and sampling factors.
constexpr int64_t kMaxPixels = int64_t(1) << 16;

struct Decoded {
  Result<DecodeReport> report = Status::internal("not run");
  std::unique_ptr<Image> image;
};

Decoded decode(ImageDecoder& dec, std::span<const uint8_t> bytes, const ImageInfo& info, const DecodeRequest& req) {
  Decoded d;
  auto shape = dec.output_shape(info, req);
  if (!shape.is_ok()) {
    d.report = shape.status();
    return d;
  }
  d.image = std::make_unique<Image>(*shape, req.slack_columns);
  d.report = dec.decode(bytes, req, d.image->view);
  return d;
}

// Pixels of `a` and `b` (same shape) in [x0, x1) x [y0, y1) are equal.
bool same_pixels(const Image& a, const Image& b, int64_t x0, int64_t y0, int64_t x1, int64_t y1, int64_t ax = 0,
                 int64_t ay = 0) {
  // A row at a time (pixels of a row are contiguous): a per-pixel loop here, instrumented for
  // coverage, cost half the run time.
  const size_t row_bytes = size_t(x1 - x0) * size_t(a.view.shape[2]);
  for (int64_t y = y0; y < y1; ++y)
    if (row_bytes > 0 && std::memcmp(a.px(y + ay, x0 + ax), b.px(y, x0), row_bytes) != 0) return false;
  return true;
}

// Check 1: the decoder with and without the index cache.
void check_user_path(ImageDecoder& plain, ImageDecoder& indexed, JpegIndexCache& cache, std::span<const uint8_t> bytes,
                     const ImageInfo& info, DecodeRequest req, bool slack) {
  const Decoded a = decode(plain, bytes, info, req);
  req.index_cache = &cache;
  req.index_key = 7;
  req.index_every_file = true;  // as image_decoder does for random crops
  req.slack_columns = slack ? 64 : 0;
  const Decoded b = decode(indexed, bytes, info, req);
  // Which window and request, for the log of a failing input.
  const auto check = [&](bool ok, const char* what) {
    if (ok) return;
    std::fprintf(stderr, "roi %lld,%lld %lldx%lld color %d partial %d slack %d: plain %s, indexed %s\n",
                 (long long)req.roi.x, (long long)req.roi.y, (long long)req.roi.w, (long long)req.roi.h,
                 int(req.color), int(req.allow_partial), int(slack), a.report.status().to_string().c_str(),
                 b.report.status().to_string().c_str());
    fail(what);
  };
  check(a.report.is_ok() == b.report.is_ok(), "index and plain path disagree on success");
  if (!a.report.is_ok()) return;
  check(a.report->partial == b.report->partial, "index and plain path disagree on partial");
  const Shape& s = a.image->view.shape;
  check(s == b.image->view.shape, "index and plain path shapes differ");
  check(same_pixels(*a.image, *b.image, 0, 0, s[1], s[0]), "index and plain path pixels differ");
}

// Check 2: a window JPEG written from the index against the plain region decode.
void check_window(ImageDecoder& plain, std::span<const uint8_t> bytes, const ImageInfo& info,
                  const detail::JpegScanIndex& index, const Roi& roi, ColorFormat color, std::vector<uint8_t>& scratch) {
  const detail::JpegMcuGrid& g = detail::jpeg_index_grid(index);
  if (g.width != info.width || g.height != info.height) return;  // libjpeg read another header
  const int64_t c0 = std::max<int64_t>(0, roi.x - 1) / g.mcu_w;
  const int64_t c1 = (std::min(g.width, roi.x + roi.w + 1) + g.mcu_w - 1) / g.mcu_w;
  const int64_t r0 = std::max<int64_t>(0, roi.y - 1) / g.mcu_h;
  const int64_t r1 = (std::min(g.height, roi.y + roi.h + 1) + g.mcu_h - 1) / g.mcu_h;
  auto win = detail::write_jpeg_window(bytes, index, r0, r1, c0, c1, scratch);
  if (!win.is_ok()) return;  // the decoder then takes the plain path
  DecodeRequest req;
  req.color = color;
  req.max_pixels = kMaxPixels;
  auto win_info = plain.read_info(scratch);
  if (!win_info.is_ok()) std::fprintf(stderr, "window rows %lld-%lld cols %lld-%lld: %s\n", (long long)r0, (long long)r1,
                                      (long long)c0, (long long)c1, win_info.status().to_string().c_str());
  HDL_FUZZ_CHECK(win_info.is_ok(), "a window JPEG has no valid header");
  HDL_FUZZ_CHECK(win_info->width == win->width && win_info->height == win->height, "window JPEG of the wrong size");
  const Decoded from_window = decode(plain, scratch, *win_info, req);
  req.roi = {win->x, win->y, win->width, win->height};
  const Decoded from_file = decode(plain, bytes, info, req);
  HDL_FUZZ_CHECK(from_window.report.is_ok() == from_file.report.is_ok(),
                 "window JPEG and plain region decode disagree on success");
  if (!from_file.report.is_ok()) return;
  // One pixel of chroma context is missing at edges that are not the image's.
  const int64_t x0 = win->x > 0 ? 1 : 0, y0 = win->y > 0 ? 1 : 0;
  const int64_t x1 = win->width - (win->x + win->width < info.width ? 1 : 0);
  const int64_t y1 = win->height - (win->y + win->height < info.height ? 1 : 0);
  HDL_FUZZ_CHECK(same_pixels(*from_window.image, *from_file.image, x0, y0, x1, y1),
                 "window JPEG pixels differ from the plain region decode");
}

}  // namespace
}  // namespace hdl::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hdl;
  using namespace hdl::fuzz;
  static const std::unique_ptr<ImageDecoder> plain = make_jpeg_decoder();
  static const std::unique_ptr<ImageDecoder> indexed = make_jpeg_decoder();
  static const std::unique_ptr<ImageDecoder> indexed_window_jpeg = [] {
    JpegDecoderOptions o;
    o.own_huffman = false;
    return make_jpeg_decoder(o);
  }();
  static std::vector<uint8_t> scratch;
  Input in(data, size);
  FuzzedDataProvider& p = in.params;
  const ColorFormat colors[] = {ColorFormat::kRGB, ColorFormat::kBGR, ColorFormat::kGray};
  const ColorFormat color = colors[p.ConsumeIntegralInRange(0, 2)];
  const bool allow_partial = p.ConsumeBool();
  // Now and then a coarse index (every k-th MCU of a row), as a small budget share gives.
  const size_t max_bytes = p.ConsumeBool() ? size_t(p.ConsumeIntegralInRange(200, 4000)) : SIZE_MAX;
  const int windows = p.ConsumeIntegralInRange(1, 4);
  ImageDecoder& with_index = p.ConsumeIntegralInRange(0, 3) == 0 ? *indexed_window_jpeg : *indexed;

  auto info = plain->read_info(in.payload);
  if (!info.is_ok() || info->width * info->height > kMaxPixels) return 0;
  JpegIndexCache cache(size_t(64) << 20);
  auto index = detail::build_jpeg_index(in.payload, max_bytes);
  for (int i = 0; i < windows; ++i) {
    Roi roi;
    roi.x = p.ConsumeIntegralInRange<int64_t>(0, info->width - 1);
    roi.y = p.ConsumeIntegralInRange<int64_t>(0, info->height - 1);
    roi.w = p.ConsumeIntegralInRange<int64_t>(1, info->width - roi.x);
    roi.h = p.ConsumeIntegralInRange<int64_t>(1, info->height - roi.y);
    DecodeRequest req;
    req.color = color;
    req.allow_partial = allow_partial;
    req.max_pixels = kMaxPixels;
    req.roi = roi;
    check_user_path(*plain, with_index, cache, in.payload, *info, req, p.ConsumeBool());
    if (index.is_ok()) check_window(*plain, in.payload, *info, **index, roi, color, scratch);
  }
  return 0;
}
