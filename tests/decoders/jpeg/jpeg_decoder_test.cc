// decoders/jpeg/jpeg_decoder.cc against Pillow 9.4 (libjpeg-turbo 2.1.5, islow IDCT, fancy
// upsampling) on the real-media corpus.
#include "decoders/jpeg/jpeg_decoder.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "tests/decoders/decoder_test_util.h"

namespace hdl::testing {
namespace {

std::vector<ManifestRow> ok_jpegs() { return manifest_files("ok", "jpeg/"); }

// Small and medium files (every chroma layout, progressive, CMYK, gray) plus two 2268x1512 ones.
std::vector<ManifestRow> roi_jpegs() {
  std::vector<ManifestRow> out;
  for (auto& r : ok_jpegs())
    if (r.file.find("/large/") == std::string::npos &&
        (r.file.find("jxl_flower_") == std::string::npos || r.file.find("small") != std::string::npos ||
         r.file.find("420_progr") != std::string::npos || r.file.find("asymmetric") != std::string::npos))
      out.push_back(r);
  return out;
}

// Windows at the corners and edges, 1x1, MCU-aligned and not, and random ones.
std::vector<Roi> windows(int64_t W, int64_t H, uint32_t seed) {
  std::vector<Roi> v = {{0, 0, 1, 1},         {W - 1, H - 1, 1, 1}, {0, 0, W, 1},
                        {0, H - 1, W, 1},     {W - 1, 0, 1, H},     {0, H / 2, W, std::max<int64_t>(1, H / 3)},
                        {W / 2, 0, W - W / 2, H}};
  if (W > 40 && H > 40) {
    v.push_back({16, 16, 16, 16});
    v.push_back({15, 17, 9, 23});
    v.push_back({8, 8, W - 16, H - 16});
    v.push_back({W - 17, H - 33, 17, 33});
    v.push_back({31, 1, 2, H - 2});
  }
  std::mt19937 rng(seed);
  for (int i = 0; i < 12; ++i) {
    int64_t x = rng() % W, y = rng() % H;
    v.push_back({x, y, 1 + int64_t(rng() % (W - x)), 1 + int64_t(rng() % (H - y))});
  }
  return v;
}

TEST(JpegDecoder, ReadInfoMatchesHeader) {
  HDL_REQUIRE_CORPUS();
  auto dec = make_jpeg_decoder();
  auto bytes = read_file(corpus_tests_dir() / "jpeg/ok/gdk_exif_orientation6_422.jpg");
  auto info = dec->read_info(bytes);
  ASSERT_TRUE(info.is_ok()) << info.status().to_string();
  EXPECT_EQ(info->format, "jpeg");
  EXPECT_EQ(info->width, 640);
  EXPECT_EQ(info->height, 428);
  EXPECT_EQ(info->orientation, 6);
  EXPECT_EQ(info->subsampling, "422");
  EXPECT_EQ(info->color_space, "ycbcr");
  EXPECT_EQ(info->oriented_width(true), 428);
  auto prog = dec->read_info(read_file(corpus_tests_dir() / "jpeg/ok/rs_tower_prog.jpg"));
  ASSERT_TRUE(prog.is_ok());
  EXPECT_TRUE(prog->progressive);
  auto cmyk = dec->read_info(read_file(corpus_tests_dir() / "jpeg/ok/wx_ycck_adobe.jpg"));
  ASSERT_TRUE(cmyk.is_ok());
  EXPECT_EQ(cmyk->color_space, "ycck");
  EXPECT_EQ(cmyk->channels, 4);
}

// A decoder reused across files decodes each one as a fresh decoder does. libjpeg keeps
// quantisation and Huffman tables across images on one decompressor; a file lacking a table
// (fuzz_jpeg_index found both kinds) must not borrow the previous file's, or its outcome
// would depend on what the worker thread decoded before.
TEST(JpegDecoder, ReusedDecoderLendsNoTablesToTheNextFile) {
  HDL_REQUIRE_CORPUS();
  const fs::path dir = fs::path(HDL_SOURCE_DIR) / "tests/fuzz/regressions/fuzz_jpeg_index";
  const auto photo = read_file(corpus_tests_dir() / "jpeg/ok/gdk_exif_orientation6_422.jpg");
  for (const char* name : {"reused_decoder_no_dqt.jpg", "reused_decoder_missing_huffman_tables.jpg"}) {
    SCOPED_TRACE(name);
    auto bytes = read_file(dir / name);
    ASSERT_GT(bytes.size(), 32u);
    bytes.resize(bytes.size() - 32);  // the fuzz target's parameters
    auto fresh = make_jpeg_decoder();
    const auto expected = decode_with(*fresh, bytes, request_for());
    auto used = make_jpeg_decoder();
    ASSERT_TRUE(decode_with(*used, photo, request_for()).is_ok());
    const auto got = decode_with(*used, bytes, request_for());
    ASSERT_EQ(got.is_ok(), expected.is_ok()) << (got.is_ok() ? expected.status() : got.status()).to_string();
    if (got.is_ok()) EXPECT_EQ(got->px, expected->px);
    else EXPECT_EQ(got.status().to_string(), expected.status().to_string());
  }
}

// Full decodes are bit-exact with Image.open(p).convert("RGB"), BGR is RGB swapped, and gray
// is within 1 of convert("L") (exact by construction: Pillow's luma formula on the RGB pixels).
TEST(JpegDecoder, FullDecodeMatchesPillow) {
  HDL_REQUIRE_CORPUS();
  auto files = ok_jpegs();
  ASSERT_GT(files.size(), 70u);
  PillowRefs refs;
  std::vector<std::pair<fs::path, fs::path>> ref_paths;
  for (auto& r : files) {
    fs::path src = corpus_tests_dir() / r.file;
    ref_paths.emplace_back(refs.add("rgb", src), refs.add("gray", src));
  }
  refs.run();
  auto dec = make_jpeg_decoder();  // one instance for every file: exercises reuse
  int compared = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    SCOPED_TRACE(files[i].file);
    auto bytes = read_file(corpus_tests_dir() / files[i].file);
    std::string err;
    auto rgb_ref = PillowRefs::load(ref_paths[i].first, &err);
    ASSERT_TRUE(rgb_ref) << err;
    DecodeReport report;
    auto rgb = decode_with(*dec, bytes, request_for(ColorFormat::kRGB), &report);
    ASSERT_TRUE(rgb.is_ok()) << rgb.status().to_string();
    EXPECT_FALSE(report.partial);
    ASSERT_EQ(rgb->shape(), rgb_ref->shape());
    EXPECT_EQ(diff(*rgb, *rgb_ref).max, 0);
    auto bgr = decode_with(*dec, bytes, request_for(ColorFormat::kBGR));
    ASSERT_TRUE(bgr.is_ok());
    for (size_t p = 0; p + 2 < bgr->px.size(); p += 3)
      ASSERT_TRUE(bgr->px[p] == rgb->px[p + 2] && bgr->px[p + 2] == rgb->px[p]) << "pixel " << p / 3;
    auto gray_ref = PillowRefs::load(ref_paths[i].second, &err);
    ASSERT_TRUE(gray_ref) << err;
    auto gray = decode_with(*dec, bytes, request_for(ColorFormat::kGray));
    ASSERT_TRUE(gray.is_ok()) << gray.status().to_string();
    ASSERT_EQ(gray->shape(), gray_ref->shape());
    EXPECT_LE(diff(*gray, *gray_ref).max, 1);
    ++compared;
  }
  EXPECT_EQ(compared, int(files.size()));
}

// A window decoded with skip/crop equals the same window of the full decode, at full and DCT
// scales, in every colour format, for every chroma layout, baseline and progressive.
TEST(JpegDecoder, RoiEqualsCropOfFullDecode) {
  HDL_REQUIRE_CORPUS();
  auto dec = make_jpeg_decoder();
  int compared = 0, skipped = 0;
  uint32_t seed = 1;
  for (auto& r : roi_jpegs()) {
    SCOPED_TRACE(r.file);
    auto bytes = read_file(corpus_tests_dir() / r.file);
    auto info = dec->read_info(bytes);
    ASSERT_TRUE(info.is_ok()) << info.status().to_string();
    for (ColorFormat color : {ColorFormat::kRGB, ColorFormat::kGray}) {
      for (int d : {1, 2, 4, 8}) {
        DecodeRequest full_req = request_for(color);
        full_req.min_width = d == 1 ? 0 : (info->width + d - 1) / d;
        full_req.min_height = d == 1 ? 0 : (info->height + d - 1) / d;
        DecodeReport full_report;
        auto full = decode_with(*dec, bytes, full_req, &full_report);
        ASSERT_TRUE(full.is_ok()) << full.status().to_string();
        if (full_report.scale_denom != d) continue;  // tiny image: a larger scale was allowed
        for (const Roi& roi : windows(info->width, info->height, seed++)) {
          SCOPED_TRACE(::testing::Message() << "scale 1/" << d << " roi " << roi.x << "," << roi.y
                                          << " " << roi.w << "x" << roi.h);
          DecodeRequest req = request_for(color);
          req.roi = roi;
          req.min_width = d == 1 ? 0 : (roi.w + d - 1) / d;
          req.min_height = d == 1 ? 0 : (roi.h + d - 1) / d;
          DecodeReport report;
          auto win = decode_with(*dec, bytes, req, &report);
          ASSERT_TRUE(win.is_ok()) << win.status().to_string();
          if (report.scale_denom != d) { ++skipped; continue; }
          Image8 expected = full->crop(roi.x / d, roi.y / d, win->w, win->h);
          ASSERT_EQ(win->w, (roi.w + d - 1) / d);
          ASSERT_EQ(win->h, (roi.h + d - 1) / d);
          ASSERT_EQ(diff(*win, expected).max, 0);
          ++compared;
        }
      }
    }
  }
  EXPECT_GT(compared, 3000);
  EXPECT_LT(skipped, compared / 4);
}

// DCT-scaled decodes have the size Pillow's draft() gives and its pixels (tolerance 0: both are
// libjpeg-turbo's scaled IDCT with the same settings).
TEST(JpegDecoder, ScaledDecodeMatchesPillowDraft) {
  HDL_REQUIRE_CORPUS();
  auto dec = make_jpeg_decoder();
  PillowRefs refs;
  struct Job { ManifestRow row; int d; int64_t w, h; fs::path ref; };
  std::vector<Job> jobs;
  for (auto& r : ok_jpegs()) {
    auto info = dec->read_info(read_file(corpus_tests_dir() / r.file));
    ASSERT_TRUE(info.is_ok());
    for (int d : {2, 4, 8}) {
      int64_t w = info->width / d, h = info->height / d;  // Pillow picks scale d for this size
      if (w < 1 || h < 1) continue;
      // Tiny images where our rule (the largest scale that keeps >= w x h) goes further.
      if (d < 8 && (info->width + 2 * d - 1) / (2 * d) >= w && (info->height + 2 * d - 1) / (2 * d) >= h)
        continue;
      jobs.push_back({r, d, w, h, refs.add("draft", corpus_tests_dir() / r.file,
                                           std::to_string(w) + " " + std::to_string(h))});
    }
  }
  refs.run();
  int exact = 0;
  for (auto& j : jobs) {
    SCOPED_TRACE(::testing::Message() << j.row.file << " 1/" << j.d);
    std::string err;
    auto ref = PillowRefs::load(j.ref, &err);
    ASSERT_TRUE(ref) << err;
    DecodeRequest req = request_for();
    req.min_width = j.w;
    req.min_height = j.h;
    DecodeReport report;
    auto img = decode_with(*dec, read_file(corpus_tests_dir() / j.row.file), req, &report);
    ASSERT_TRUE(img.is_ok()) << img.status().to_string();
    EXPECT_EQ(report.scale_denom, j.d);
    ASSERT_EQ(img->shape(), ref->shape());
    Diff df = diff(*img, *ref);
    EXPECT_EQ(df.max, 0) << "mean " << df.mean;
    exact += df.max == 0;
  }
  EXPECT_GT(jobs.size(), 200u);
  EXPECT_EQ(exact, int(jobs.size()));
}

std::vector<ManifestRow> oriented_jpegs() {
  std::vector<ManifestRow> out;
  for (auto& r : ok_jpegs())
    if (r.file.find("orientation") != std::string::npos) out.push_back(r);
  return out;
}

// apply_orientation equals ImageOps.exif_transpose, and a window in oriented coordinates
// equals the same window of the oriented full decode.
TEST(JpegDecoder, OrientationMatchesExifTranspose) {
  HDL_REQUIRE_CORPUS();
  auto files = oriented_jpegs();
  ASSERT_GE(files.size(), 10u);
  PillowRefs refs;
  std::vector<fs::path> paths;
  for (auto& r : files) paths.push_back(refs.add("orient", corpus_tests_dir() / r.file));
  refs.run();
  auto dec = make_jpeg_decoder();
  std::set<int> seen;
  for (size_t i = 0; i < files.size(); ++i) {
    SCOPED_TRACE(files[i].file);
    auto bytes = read_file(corpus_tests_dir() / files[i].file);
    seen.insert(dec->read_info(bytes)->orientation);
    std::string err;
    auto ref = PillowRefs::load(paths[i], &err);
    ASSERT_TRUE(ref) << err;
    DecodeRequest req = request_for();
    req.apply_orientation = true;
    auto img = decode_with(*dec, bytes, req);
    ASSERT_TRUE(img.is_ok()) << img.status().to_string();
    ASSERT_EQ(img->shape(), ref->shape());
    EXPECT_EQ(diff(*img, *ref).max, 0);
    for (const Roi& roi : windows(img->w, img->h, uint32_t(i))) {
      DecodeRequest wreq = req;
      wreq.roi = roi;
      auto win = decode_with(*dec, bytes, wreq);
      ASSERT_TRUE(win.is_ok()) << win.status().to_string();
      ASSERT_EQ(diff(*win, img->crop(roi.x, roi.y, roi.w, roi.h)).max, 0)
          << "roi " << roi.x << "," << roi.y << " " << roi.w << "x" << roi.h;
      DecodeRequest sreq = wreq;  // scaled: shape is the oriented window scaled, rounded up
      sreq.min_width = sreq.min_height = 1;
      DecodeReport report;
      auto small = decode_with(*dec, bytes, sreq, &report);
      ASSERT_TRUE(small.is_ok());
      int d = report.scale_denom;
      EXPECT_EQ(small->w, (roi.w + d - 1) / d);
      EXPECT_EQ(small->h, (roi.h + d - 1) / d);
    }
  }
  for (int o = 1; o <= 8; ++o) EXPECT_TRUE(seen.count(o)) << "orientation " << o << " not covered";
}

// The speed options give up Pillow-exactness (mean error up to ~5 levels on small, detailed
// files), not ROI consistency: with merged upsampling and the fast IDCT, skipping and cropping
// still equal the full decode's window.
TEST(JpegDecoder, FastOptionsKeepRoiConsistent) {
  HDL_REQUIRE_CORPUS();
  JpegDecoderOptions fast;
  fast.fast_idct = true;
  fast.fancy_upsampling = false;
  fast.gray_from_luma = true;
  auto dec = make_jpeg_decoder(fast);
  PillowRefs refs;
  std::vector<ManifestRow> files = roi_jpegs();
  std::vector<fs::path> paths;
  for (auto& r : files) paths.push_back(refs.add("rgb", corpus_tests_dir() / r.file));
  refs.run();
  for (size_t i = 0; i < files.size(); ++i) {
    SCOPED_TRACE(files[i].file);
    auto bytes = read_file(corpus_tests_dir() / files[i].file);
    std::string err;
    auto ref = PillowRefs::load(paths[i], &err);
    ASSERT_TRUE(ref) << err;
    for (ColorFormat color : {ColorFormat::kRGB, ColorFormat::kGray}) {
      auto full = decode_with(*dec, bytes, request_for(color));
      ASSERT_TRUE(full.is_ok()) << full.status().to_string();
      if (color == ColorFormat::kRGB) EXPECT_LT(diff(*full, *ref).mean, 6.0);  // measured: up to ~4.8 on 48x48 files
      for (const Roi& roi : windows(full->w, full->h, uint32_t(i))) {
        DecodeRequest req = request_for(color);
        req.roi = roi;
        auto win = decode_with(*dec, bytes, req);
        ASSERT_TRUE(win.is_ok()) << win.status().to_string();
        ASSERT_EQ(diff(*win, full->crop(roi.x, roi.y, roi.w, roi.h)).max, 0)
            << "roi " << roi.x << "," << roi.y << " " << roi.w << "x" << roi.h;
      }
    }
  }
}

TEST(JpegDecoder, TruncatedFileIsPartialOrError) {
  HDL_REQUIRE_CORPUS();
  auto dec = make_jpeg_decoder();
  auto bytes = read_file(corpus_tests_dir() / "jpeg/corrupt/derived_china_truncated_half.jpg");
  auto strict = decode_with(*dec, bytes, request_for());
  ASSERT_FALSE(strict.is_ok());
  EXPECT_EQ(strict.status().code(), StatusCode::kInvalidData);
  EXPECT_NE(strict.status().message().find("Premature end of JPEG file"), std::string::npos)
      << strict.status().message();
  DecodeRequest lenient = request_for();
  lenient.allow_partial = true;
  DecodeReport report;
  auto partial = decode_with(*dec, bytes, lenient, &report);
  ASSERT_TRUE(partial.is_ok()) << partial.status().to_string();
  EXPECT_TRUE(report.partial);
  EXPECT_NE(report.warning.find("Premature end"), std::string::npos) << report.warning;
  // Rows at the top are real pixels, so equal to the complete file's.
  auto whole = decode_with(*dec, read_file(corpus_tests_dir() / "jpeg/ok/sklearn_china_444_q96.jpg"),
                           request_for());
  ASSERT_TRUE(whole.is_ok());
  EXPECT_EQ(diff(partial->crop(0, 0, partial->w, 64), whole->crop(0, 0, whole->w, 64)).max, 0);
  // The decoder is still usable after errors.
  EXPECT_TRUE(decode_with(*dec, bytes, lenient).is_ok());
}

TEST(JpegDecoder, RequestErrors) {
  HDL_REQUIRE_CORPUS();
  auto dec = make_jpeg_decoder();
  auto bytes = read_file(corpus_tests_dir() / "jpeg/ok/rs_tower_444.jpg");  // 512x512
  DecodeRequest req = request_for();
  req.roi = {500, 0, 13, 10};
  auto outside = decode_with(*dec, bytes, req);
  ASSERT_FALSE(outside.is_ok());
  EXPECT_EQ(outside.status().code(), StatusCode::kInvalidArgument);
  req = request_for();
  req.max_pixels = 512 * 512 - 1;
  auto big = decode_with(*dec, bytes, req);
  ASSERT_FALSE(big.is_ok());
  EXPECT_EQ(big.status().code(), StatusCode::kResourceExhausted);
  std::vector<uint8_t> buf(100 * 100 * 3);
  auto wrong = dec->decode(bytes, request_for(), TensorView(buf.data(), Shape{100, 100, 3}, DType::kU8));
  ASSERT_FALSE(wrong.is_ok());
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument);
}

TEST(JpegDecoder, TwelveBitIsUnsupported) {
  HDL_REQUIRE_CORPUS();
  auto dec = make_jpeg_decoder();
  auto info = dec->read_info(read_file(corpus_tests_dir() / "jpeg/exotic/dicom_ct_12bit_extended_sof1.jpg"));
  ASSERT_FALSE(info.is_ok());
  EXPECT_EQ(info.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(info.status().message().find("precision 12"), std::string::npos) << info.status().message();
}

}  // namespace
}  // namespace hdl::testing
