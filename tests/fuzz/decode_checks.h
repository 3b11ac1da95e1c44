// The checks the decoder targets share: a random DecodeRequest for an image, and one decode
// with it whose promises are verified (shape as output_shape said, nothing written outside
// the view and its slack, partial only when allowed).
#pragma once

#include <algorithm>

#include "decoders/decoder.h"
#include "tests/fuzz/fuzz_util.h"

namespace hdl::fuzz {

constexpr int64_t kDecodeMaxPixels = int64_t(1) << 20;  // huge headers are refused fast

/// A request for an image of `info` (max_pixels kDecodeMaxPixels): colour, orientation,
/// partial, a region now and then (sometimes one pixel outside the image), DCT scaling.
inline DecodeRequest random_request(FuzzedDataProvider& p, const ImageInfo& info) {
  const ColorFormat colors[] = {ColorFormat::kRGB, ColorFormat::kBGR, ColorFormat::kGray};
  DecodeRequest req;
  req.color = colors[p.ConsumeIntegralInRange(0, 2)];
  req.apply_orientation = p.ConsumeBool();
  req.allow_partial = p.ConsumeBool();
  req.max_pixels = kDecodeMaxPixels;
  req.max_scans = 50;  // a progressive file's scans each re-walk the image: keep inputs fast
  const int64_t w = info.oriented_width(req.apply_orientation), h = info.oriented_height(req.apply_orientation);
  if (p.ConsumeBool() && w > 0 && h > 0) {
    Roi& r = req.roi;
    r.x = p.ConsumeIntegralInRange<int64_t>(0, w - 1);
    r.y = p.ConsumeIntegralInRange<int64_t>(0, h - 1);
    r.w = p.ConsumeIntegralInRange<int64_t>(1, w - r.x);
    r.h = p.ConsumeIntegralInRange<int64_t>(1, h - r.y);
    if (p.ConsumeIntegral<uint8_t>() == 0) r.w += 1;  // one pixel outside: must be refused
  }
  if (p.ConsumeBool()) {  // DCT scaling, keeping at least this much of the window
    const int64_t rw = req.roi.empty() ? w : req.roi.w, rh = req.roi.empty() ? h : req.roi.h;
    req.min_width = p.ConsumeIntegralInRange<int64_t>(1, std::max<int64_t>(1, rw));
    req.min_height = p.ConsumeIntegralInRange<int64_t>(1, std::max<int64_t>(1, rh));
  }
  return req;
}

/// Decodes with `decode(view)` into a buffer of `shape` (the output_shape() answer), with 64
/// slack columns when `slack`, and checks what a decoder promises.
template <typename Decode>
void checked_decode(const Shape& shape, DecodeRequest req, bool slack, Decode&& decode) {
  HDL_FUZZ_CHECK(shape.ndim() == 3 && shape[0] > 0 && shape[1] > 0, "empty output shape");
  HDL_FUZZ_CHECK(shape[0] * shape[1] <= req.max_pixels, "output shape over max_pixels");
  req.slack_columns = slack ? 64 : 0;
  constexpr uint8_t kFill = 0xA5;
  Image out(shape, req.slack_columns, kFill);
  const Result<DecodeReport> report = decode(req, out.view);
  // Nothing outside the rows and their slack columns may change (the slack is the decoder's).
  const int64_t c = shape[2];
  const uint8_t* first = static_cast<const uint8_t*>(out.view.data) - req.slack_columns * c;
  const uint8_t* end = first + (shape[0] - 1) * out.view.strides[0] + (shape[1] + 2 * req.slack_columns) * c;
  for (const uint8_t* q = out.bytes.data(); q < first; ++q) HDL_FUZZ_CHECK(*q == kFill, "wrote before the view");
  for (const uint8_t* q = end; q < out.bytes.data() + out.bytes.size(); ++q)
    HDL_FUZZ_CHECK(*q == kFill, "wrote after the view");
  if (report.is_ok() && report->partial) HDL_FUZZ_CHECK(req.allow_partial, "partial decode without allow_partial");
}

/// read_info, a random request, output_shape and a checked decode with one decoder.
inline void fuzz_one_decoder(ImageDecoder& dec, std::span<const uint8_t> bytes, FuzzedDataProvider& p) {
  const bool slack = p.ConsumeBool();
  auto info = dec.read_info(bytes);
  if (!info.is_ok()) {
    // decode() reads the header itself: it must fail too, without touching the view.
    uint8_t px[3] = {1, 2, 3};
    TensorView one(px, Shape{1, 1, 3}, DType::kU8, Layout::kHWC);
    DecodeRequest req;
    req.max_pixels = kDecodeMaxPixels;
    HDL_FUZZ_CHECK(!dec.decode(bytes, req, one).is_ok(), "decode succeeded where read_info failed");
    return;
  }
  const DecodeRequest req = random_request(p, *info);
  auto shape = dec.output_shape(*info, req);
  if (!shape.is_ok()) return;
  checked_decode(*shape, req, slack, [&](const DecodeRequest& r, const TensorView& v) { return dec.decode(bytes, r, v); });
}

}  // namespace hdl::fuzz
