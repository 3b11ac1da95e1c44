// decoders/ffmpeg_image_decoder.cc against Pillow 9.4 on the corpus PNGs, and on BMP, TIFF and
// WebP files that Pillow encodes at test time from real corpus photos.
#include "decoders/ffmpeg_image_decoder.h"

#include <gtest/gtest.h>

#include <chrono>

#include "tests/decoders/decoder_test_util.h"

namespace hdl::testing {
namespace {

// PNG decodes are exact vs Image.open(p).convert("RGB") (16-bit gray: value >> 8, see
// pillow_ref.py) and within 1 of convert("L") (exact by construction).
TEST(FfmpegImageDecoder, PngMatchesPillow) {
  HDL_REQUIRE_CORPUS();
  auto files = manifest_files("ok", "png/");
  ASSERT_GT(files.size(), 40u);
  PillowRefs refs;
  std::vector<std::pair<fs::path, fs::path>> paths;
  for (auto& r : files)
    paths.emplace_back(refs.add("rgb", corpus_tests_dir() / r.file), refs.add("gray", corpus_tests_dir() / r.file));
  refs.run();
  auto dec = make_ffmpeg_image_decoder();
  for (size_t i = 0; i < files.size(); ++i) {
    SCOPED_TRACE(files[i].file);
    auto bytes = read_file(corpus_tests_dir() / files[i].file);
    std::string err;
    auto rgb_ref = PillowRefs::load(paths[i].first, &err);
    ASSERT_TRUE(rgb_ref) << err;
    auto rgb = decode_with(*dec, bytes, request_for(ColorFormat::kRGB));
    ASSERT_TRUE(rgb.is_ok()) << rgb.status().to_string();
    ASSERT_EQ(rgb->shape(), rgb_ref->shape());
    EXPECT_EQ(diff(*rgb, *rgb_ref).max, 0);
    auto gray_ref = PillowRefs::load(paths[i].second, &err);
    ASSERT_TRUE(gray_ref) << err;
    auto gray = decode_with(*dec, bytes, request_for(ColorFormat::kGray));
    ASSERT_TRUE(gray.is_ok()) << gray.status().to_string();
    EXPECT_LE(diff(*gray, *gray_ref).max, 1);
    auto bgr = decode_with(*dec, bytes, request_for(ColorFormat::kBGR));
    ASSERT_TRUE(bgr.is_ok());
    for (size_t p = 0; p + 2 < bgr->px.size(); p += 3)
      ASSERT_TRUE(bgr->px[p] == rgb->px[p + 2] && bgr->px[p + 2] == rgb->px[p]);
  }
}

TEST(FfmpegImageDecoder, RoiAndOrientationEqualCropOfFullDecode) {
  HDL_REQUIRE_CORPUS();
  auto dec = make_ffmpeg_image_decoder();
  for (const char* f : {"png/ok/skimage_chelsea.png", "png/ok/pngsuite/basn3p04-31i.png",
                        "png/ok/pngsuite/basn0g01-30.png", "png/ok/jxl_hdr_room_16bit.png"}) {
    SCOPED_TRACE(f);
    auto bytes = read_file(corpus_tests_dir() / f);
    auto full = decode_with(*dec, bytes, request_for());
    ASSERT_TRUE(full.is_ok()) << full.status().to_string();
    for (Roi roi : {Roi{0, 0, 1, 1}, Roi{full->w - 1, full->h - 1, 1, 1}, Roi{3, 5, 7, 11},
                    Roi{1, 0, full->w - 2, full->h}}) {
      DecodeRequest req = request_for();
      req.roi = roi;
      req.min_width = 1;  // no DCT scaling here: ignored
      DecodeReport report;
      auto win = decode_with(*dec, bytes, req, &report);
      ASSERT_TRUE(win.is_ok()) << win.status().to_string();
      EXPECT_EQ(report.scale_denom, 1);
      EXPECT_EQ(diff(*win, full->crop(roi.x, roi.y, roi.w, roi.h)).max, 0);
    }
  }
}

struct Encoded {
  const char* src;   // corpus photo
  const char* args;  // pillow_ref.py encode arguments
  const char* ext;
  int max_diff;      // vs Pillow decoding the same file
};

// Lossless formats are exact; lossy WebP goes through libswscale's YUV->RGB, which is not
// libwebp's fancy upsampling: within a few levels.
TEST(FfmpegImageDecoder, BmpTiffWebpMatchPillow) {
  HDL_REQUIRE_CORPUS();
  const Encoded cases[] = {
      {"png/ok/skimage_chelsea.png", "BMP", ".bmp", 0},
      {"png/ok/skimage_coffee.png", "BMP;P", ".bmp", 0},
      {"png/ok/skimage_camera_gray.png", "BMP;L", ".bmp", 0},
      {"png/ok/skimage_chelsea.png", "TIFF", ".tif", 0},
      {"png/ok/skimage_coffee.png", "TIFF;RGB;compression=tiff_lzw", ".tif", 0},
      {"png/ok/skimage_astronaut.png", "TIFF;RGB;compression=tiff_adobe_deflate", ".tif", 0},
      {"png/ok/skimage_camera_gray.png", "TIFF;L;compression=packbits", ".tif", 0},
      {"png/ok/gdk_dpi.png", "TIFF;RGBA", ".tif", 0},
      {"png/ok/skimage_chelsea.png", "WEBP;RGB;lossless=1", ".webp", 0},
      {"png/ok/large/jxl_flower_alpha_rgba.png", "WEBP;RGBA;lossless=1", ".webp", 0},
      {"png/ok/skimage_astronaut.png", "WEBP;RGB;quality=90", ".webp", 40},
  };
  PillowRefs encode;
  std::vector<fs::path> files;
  for (auto& c : cases) files.push_back(encode.add("encode", corpus_tests_dir() / c.src, c.args, c.ext));
  encode.run();
  PillowRefs refs;
  std::vector<fs::path> paths;
  for (auto& f : files) paths.push_back(refs.add("rgb", f));
  refs.run();
  auto dec = make_ffmpeg_image_decoder();
  for (size_t i = 0; i < files.size(); ++i) {
    SCOPED_TRACE(cases[i].args);
    std::string err;
    auto ref = PillowRefs::load(paths[i], &err);
    ASSERT_TRUE(ref) << err;
    auto bytes = read_file(files[i]);
    auto img = decode_with(*dec, bytes, request_for());
    ASSERT_TRUE(img.is_ok()) << img.status().to_string();
    ASSERT_EQ(img->shape(), ref->shape());
    Diff d = diff(*img, *ref);
    EXPECT_LE(d.max, cases[i].max_diff) << "mean " << d.mean;
    if (cases[i].max_diff > 0) EXPECT_LT(d.mean, 1.5);
  }
}

TEST(FfmpegImageDecoder, HugeHeaderRefusedBeforeDecoding) {
  HDL_REQUIRE_CORPUS();
  auto dec = make_ffmpeg_image_decoder();
  auto bytes = read_file(corpus_tests_dir() / "png/corrupt/gdk_bug793470-crasher.png");
  auto info = dec->read_info(bytes);
  ASSERT_TRUE(info.is_ok()) << info.status().to_string();
  EXPECT_EQ(info->width, 935820);
  auto t0 = std::chrono::steady_clock::now();
  auto img = decode_with(*dec, bytes, request_for());
  ASSERT_FALSE(img.is_ok());
  EXPECT_EQ(img.status().code(), StatusCode::kResourceExhausted) << img.status().to_string();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
}

TEST(FfmpegImageDecoder, DecodesJpegsLibjpegCannot) {
  HDL_REQUIRE_CORPUS();
  auto dec = make_ffmpeg_image_decoder();
  for (const char* f : {"jpeg/exotic/dicom_ct_12bit_extended_sof1.jpg", "jpeg/exotic/dicom_rgb_lossless_sof3.jpg"}) {
    SCOPED_TRACE(f);
    auto img = decode_with(*dec, read_file(corpus_tests_dir() / f), request_for());
    ASSERT_TRUE(img.is_ok()) << img.status().to_string();
    EXPECT_GT(diff(*img, Image8{img->w, img->h, 3, std::vector<uint8_t>(img->px.size())}).max, 0)
        << "all black";
  }
}

}  // namespace
}  // namespace hdl::testing
