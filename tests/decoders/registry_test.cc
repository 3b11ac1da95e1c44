// decoders/registry.cc and decoders/decoder_set.cc: probes, fallback, error messages, every
// corpus file in tests/MANIFEST.tsv, and writes confined to a strided output slot.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <map>

#include "decoders/decoder_set.h"
#include "tests/decoders/decoder_test_util.h"

namespace hdl::testing {
namespace {

std::span<const uint8_t> as_bytes(const char* s, size_t n) {
  return {reinterpret_cast<const uint8_t*>(s), n};
}

TEST(DecoderRegistry, BuiltinOrderAndProbes) {
  const auto& reg = DecoderRegistry::builtin();
  ASSERT_GE(reg.entries().size(), 5u);
  EXPECT_EQ(reg.entries()[0].name, "libjpeg-turbo");
  EXPECT_EQ(reg.sniff_format(as_bytes("\xff\xd8\xff\xe0", 4)), "jpeg");
  EXPECT_EQ(reg.sniff_format(as_bytes("\x89PNG\r\n\x1a\n", 8)), "png");
  EXPECT_EQ(reg.sniff_format(as_bytes("RIFF\0\0\0\0WEBPVP8 ", 16)), "webp");
  EXPECT_EQ(reg.sniff_format(as_bytes("II*\0\x08\0\0\0", 8)), "tiff");
  EXPECT_EQ(reg.sniff_format(as_bytes("BM\0\0\0\0\0\0\0\0\0\0\0\0\x28\0\0\0", 18)), "bmp");
  EXPECT_EQ(reg.sniff_format(as_bytes("GIF89a", 6)), "");
  EXPECT_EQ(reg.sniff_format({}), "");
  auto jpeg = reg.candidates(as_bytes("\xff\xd8\xff\xdb", 4));
  ASSERT_EQ(jpeg.size(), 2u);  // libjpeg-turbo, then FFmpeg's mjpeg
  EXPECT_EQ(reg.entries()[jpeg[0]].name, "libjpeg-turbo");
  EXPECT_EQ(reg.entries()[jpeg[1]].name, "ffmpeg");
  EXPECT_EQ(color_channels(ColorFormat::kGray), 1);
  EXPECT_EQ(color_channels(ColorFormat::kBGR), 3);
  EXPECT_STREQ(color_format_name(ColorFormat::kRGB), "rgb");
}

TEST(DecoderSet, UnknownAndEmptyInput) {
  DecoderSet set;
  const char bytes[] = "\x00\x00\x00\x0cjP  \r\n\x87\n";
  auto r = set.read_info(as_bytes(bytes, sizeof(bytes) - 1));
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(r.status().message(), "unknown image format (first bytes 00 00 00 0c)");
  auto e = set.output_shape({}, DecodeRequest{});
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidData);
}

TEST(DecoderSet, ErrorsNameTheDecoder) {
  HDL_REQUIRE_CORPUS();
  DecoderSet set;
  auto bytes = read_file(corpus_tests_dir() / "jpeg/corrupt/derived_china_truncated_half.jpg");
  auto img = decode_with(set, bytes, request_for());
  ASSERT_FALSE(img.is_ok());
  EXPECT_EQ(img.status().message(), "libjpeg-turbo: Premature end of JPEG file");
}

TEST(DecoderSet, FallsBackToFfmpegForTwelveBitJpeg) {
  HDL_REQUIRE_CORPUS();
  DecoderSet set;
  auto bytes = read_file(corpus_tests_dir() / "jpeg/exotic/dicom_ct_12bit_extended_sof1.jpg");
  auto info = set.read_info(bytes);
  ASSERT_TRUE(info.is_ok()) << info.status().to_string();
  EXPECT_EQ(info->width, 256);
  EXPECT_EQ(info->height, 1024);
  DecodeRequest req = request_for();
  req.min_width = 32;  // FFmpeg does not scale: the shape says so, and decode agrees
  auto img = decode_with(set, bytes, req);
  ASSERT_TRUE(img.is_ok()) << img.status().to_string();
  EXPECT_EQ(img->shape(), (Shape{1024, 256, 3}));
}

// Every file of the corpus manifest: ok decodes; exotic decodes or is kUnsupported with a
// message; corrupt is an error with a message or a flagged partial decode, never a crash or a
// hang; huge is refused by max_pixels; mislabeled decodes by its magic bytes.
TEST(DecoderSet, EveryManifestFile) {
  HDL_REQUIRE_CORPUS();
  auto rows = read_manifest();
  ASSERT_GT(rows.size(), 150u);
  DecoderSet set;
  std::map<std::string, int> outcome;
  for (auto& row : rows) {
    SCOPED_TRACE(row.file + " [" + row.expect + "]");
    auto bytes = read_file(corpus_tests_dir() / row.file);
    auto t0 = std::chrono::steady_clock::now();
    DecodeRequest req = request_for();
    req.allow_partial = true;
    DecodeReport report;
    auto img = decode_with(set, bytes, req, &report);
    auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(secs, 20.0);
    std::string result = img.is_ok() ? (report.partial ? "partial" : "ok")
                                     : status_code_name(img.status().code());
    ++outcome[row.expect + " -> " + result];
    if (!img.is_ok()) EXPECT_GT(img.status().message().size(), 10u) << "unclear message";
    if (row.expect == "ok") {
      EXPECT_TRUE(img.is_ok()) << img.status().to_string();
      EXPECT_FALSE(report.partial) << report.warning;
    } else if (row.expect == "exotic") {
      if (!img.is_ok()) EXPECT_EQ(img.status().code(), StatusCode::kUnsupported) << img.status().to_string();
    } else if (row.expect == "corrupt") {
      if (img.is_ok() && report.partial) EXPECT_FALSE(report.warning.empty());
      std::string m = img.is_ok() ? "" : img.status().message();
      if (!img.is_ok() && m.rfind("unknown image format", 0) != 0 && m.rfind("empty input", 0) != 0)
        EXPECT_NE(m.find(": "), std::string::npos) << "no decoder name: " << m;
      DecodeRequest strict = request_for();  // and without allow_partial: no partial result
      auto s = decode_with(set, bytes, strict, &report);
      if (s.is_ok()) EXPECT_FALSE(report.partial);
    } else if (row.expect == "huge") {
      ASSERT_FALSE(img.is_ok());
      EXPECT_EQ(img.status().code(), StatusCode::kResourceExhausted) << img.status().to_string();
      EXPECT_LT(secs, 1.0);
    } else if (row.expect == "mislabeled") {
      EXPECT_TRUE(img.is_ok()) << img.status().to_string();
      EXPECT_EQ(set.registry().sniff_format(bytes), "png");
    }
  }
  for (auto& [k, n] : outcome) std::printf("  %-28s %d\n", k.c_str(), n);
}

// A slot in the middle of a larger buffer, rows further apart than the slot is wide, and pixels
// further apart than their channels: nothing outside the slot's pixels changes.
TEST(DecoderSet, StridedOutputStaysInsideItsSlot) {
  HDL_REQUIRE_CORPUS();
  DecoderSet set;
  struct Case { const char* file; ColorFormat color; bool orient; Roi roi; int64_t min_w; };
  const Case cases[] = {
      {"jpeg/ok/sklearn_china_444_q96.jpg", ColorFormat::kRGB, false, {}, 0},   // direct rows
      {"jpeg/ok/gdk_valid1_400.jpg", ColorFormat::kGray, false, {}, 0},         // converted
      {"jpeg/ok/gdk_exif_orientation6_422.jpg", ColorFormat::kBGR, true, {5, 7, 101, 33}, 0},
      {"jpeg/ok/wx_ycck_adobe.jpg", ColorFormat::kRGB, false, {1, 1, 150, 40}, 0},
      {"jpeg/ok/jxl_flower_small_420_non_interleaved.jpg", ColorFormat::kRGB, false, {}, 100},
      {"png/ok/skimage_chelsea.png", ColorFormat::kRGB, false, {10, 10, 200, 100}, 0},
      {"png/ok/pngsuite/basn3p08.png", ColorFormat::kGray, false, {}, 0},
  };
  for (const Case& c : cases) {
    for (int64_t pixel_stride : {0, 5}) {  // 0: packed pixels
      SCOPED_TRACE(std::string(c.file) + " pixel stride " + std::to_string(pixel_stride));
      auto bytes = read_file(corpus_tests_dir() / c.file);
      DecodeRequest req = request_for(c.color);
      req.apply_orientation = c.orient;
      req.roi = c.roi;
      req.min_width = c.min_w;
      auto shape = set.output_shape(bytes, req);
      ASSERT_TRUE(shape.is_ok()) << shape.status().to_string();
      auto packed = decode_with(set, bytes, req);
      ASSERT_TRUE(packed.is_ok());
      const int64_t h = (*shape)[0], w = (*shape)[1], ch = (*shape)[2];
      const int64_t ps = pixel_stride ? pixel_stride : ch, row = w * ps + 37, pad = 4096;
      std::vector<uint8_t> buf(size_t(2 * pad + h * row), 0xAB);
      TensorView out(buf.data() + pad, *shape, DType::kU8, Layout::kHWC);
      out.strides = Shape{row, ps, 1};
      auto r = set.decode(bytes, req, out);
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      for (size_t i = 0; i < buf.size(); ++i) {
        int64_t off = int64_t(i) - pad;
        bool inside = off >= 0 && off < h * row && (off % row) < w * ps && (off % row) % ps < ch;
        if (inside) {
          int64_t y = off / row, x = (off % row) / ps, k = (off % row) % ps;
          ASSERT_EQ(buf[i], packed->at(y, x, int(k))) << "pixel " << x << "," << y;
        } else {
          ASSERT_EQ(buf[i], 0xAB) << "byte " << off << " outside the slot was written";
        }
      }
    }
  }
}

}  // namespace
}  // namespace hdl::testing
