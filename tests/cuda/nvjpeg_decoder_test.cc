// decoders/nvjpeg: the host-side behaviour (what is refused and why, the fallback to the CPU
// decoder through DecoderSet) runs everywhere; decoding on a device needs a GPU and libnvjpeg.
#include "decoders/nvjpeg/nvjpeg_decoder.h"
#include "decoders/nvjpeg/nvjpeg_hardware.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tests/cuda/cuda_test_util.h"

namespace hdl {
namespace {

using ::hdl::testing::corpus_dir;
using ::hdl::testing::read_file;

std::vector<uint8_t> corpus_file(const std::string& rel) { return read_file(corpus_dir() / "tests" / rel); }

// The JPEG fixtures of the corpus and what the probe must say about them ("" = accepted).
struct Case {
  const char* file;
  const char* reason;
};
const Case kCases[] = {
    {"jpeg/ok/gdk_valid1_400.jpg", ""},
    {"jpeg/ok/go_video001_q50_422.jpg", ""},
    {"jpeg/ok/gdk_cat_gray_512.jpg", ""},
    {"jpeg/ok/forensics_whatsapp_prog.jpg", "progressive JPEG"},
    {"jpeg/ok/go_video001_cmyk.jpg", "CMYK/YCCK JPEG"},
    {"jpeg/ok/dicom_rgb_adobe_transform0.jpg", "RGB JPEG (not YCbCr)"},
    // Component IDs 0, 1, 2 and no marker: libjpeg (the reference) reads it as YCbCr too.
    {"jpeg/ok/dicom_rgb_no_jfif_no_adobe.jpg", ""},
    {"jpeg/exotic/dicom_ct_12bit_extended_sof1.jpg", "12-bit JPEG"},
    {"jpeg/exotic/derived_flower_small_arith.jpg", "JPEG coding other than Huffman baseline/extended"},
    {"jpeg/exotic/dicom_rgb_lossless_sof3.jpg", "JPEG coding other than Huffman baseline/extended"},
};

TEST(NvjpegTest, StatusSaysWhatIsMissing) {
  const Status s = nvjpeg_status();
  if (s.is_ok()) {
    EXPECT_TRUE(cuda::available());
    return;
  }
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  if (!cuda::built_with_cuda()) {
    EXPECT_EQ(s.message(), "not available: built without CUDA");
  } else if (!cuda::available()) {
    EXPECT_EQ(s.message().rfind("no CUDA device: ", 0), 0u) << s.message();
  } else {
    EXPECT_NE(s.message().find("libnvjpeg"), std::string::npos) << s.message();
  }
  std::cout << "[ nvjpeg ] unavailable: " << s.message() << "\n";
}

TEST(NvjpegTest, HardwareDecoderSaysWhyItCannotRunAndAnswersEveryCallSo) {
  NvjpegHardwareDecoder hw;
  const Status s = hw.status();
  if (s.is_ok()) GTEST_SKIP() << "hardware JPEG engines present: see NvjpegHardwareGpuTest";
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  if (!nvjpeg_status().is_ok()) {
    EXPECT_EQ(s.message(), nvjpeg_status().message());  // no library or no device: that reason
  } else {
    EXPECT_TRUE(s.message().find("lacks") != std::string::npos ||
                s.message().find("no hardware JPEG engines on cuda:0") != std::string::npos) << s.message();
  }
  EXPECT_EQ(hw.status().message(), s.message());  // kept, not retried
  HDL_REQUIRE_CORPUS();  // the calls below take a real JPEG
  const std::vector<uint8_t> jpeg = corpus_file("jpeg/ok/gdk_valid1_400.jpg");
  const Result<ImageInfo> info = hw.supports(jpeg, DecodeRequest{});
  ASSERT_FALSE(info.is_ok());
  EXPECT_EQ(info.status().message(), s.message());
  Tensor out = Tensor::empty(Shape{4, 4, 3}, DType::kU8, Layout::kHWC);
  cuda::Stream none;
  const std::vector<HardwareDecodeItem> items = {{jpeg, out.view()}, {jpeg, out.view()}};
  const std::vector<Status> got = hw.decode(items, ColorFormat::kRGB, none);
  ASSERT_EQ(got.size(), 2u);
  for (const Status& g : got) EXPECT_EQ(g.message(), s.message());
  EXPECT_EQ(hw.stats().batches, 0u);
  std::cout << "[ nvjpeg ] hardware engines unavailable: " << s.message() << "\n";
}

TEST(NvjpegTest, HardwareStructureCheckSendsMultiScanAndTruncatedFilesToTheCpu) {
  HDL_REQUIRE_CORPUS();
  const std::vector<uint8_t> ok = corpus_file("jpeg/ok/gdk_valid1_400.jpg");
  EXPECT_TRUE(hardware_jpeg_structure(ok).is_ok()) << hardware_jpeg_structure(ok).to_string();
  EXPECT_TRUE(hardware_jpeg_structure(corpus_file("jpeg/ok/gdk_cat_gray_512.jpg")).is_ok());
  // Trailing bytes after EOI are fine; a file cut short is not.
  std::vector<uint8_t> padded = ok;
  padded.insert(padded.end(), 20, 0);
  EXPECT_TRUE(hardware_jpeg_structure(padded).is_ok());
  const std::vector<uint8_t> cut(ok.begin(), ok.begin() + static_cast<std::ptrdiff_t>(ok.size() * 2 / 3));
  EXPECT_EQ(hardware_jpeg_structure(cut).message(), "JPEG without EOI at its end (truncated?)");
  // The first scan holding one component of three: several scans (the engines take one).
  std::vector<uint8_t> multi = ok;
  size_t sos = 2;
  while (sos + 4 < multi.size() && !(multi[sos] == 0xFF && multi[sos + 1] == 0xDA))
    sos += 2 + ((size_t(multi[sos + 2]) << 8) | multi[sos + 3]);
  ASSERT_EQ(multi[sos + 4], 3);
  multi[sos + 4] = 1;
  EXPECT_EQ(hardware_jpeg_structure(multi).message(), "JPEG of several scans (non-interleaved)");
  EXPECT_EQ(hardware_jpeg_structure(std::vector<uint8_t>{0x89, 'P', 'N', 'G'}).message(), "not a JPEG");
  const std::vector<uint8_t> header_only(ok.begin(), ok.begin() + 20);
  EXPECT_FALSE(hardware_jpeg_structure(header_only).is_ok());
  // hardware_may_take: all of this library's checks, as the mixed stage's host half routes.
  const Result<ImageInfo> info = hardware_may_take(ok, DecodeRequest{});
  ASSERT_TRUE(info.is_ok()) << info.status().to_string();
  EXPECT_GT(info->width, 0);
  EXPECT_EQ(hardware_may_take(cut, DecodeRequest{}).status().message(), "JPEG without EOI at its end (truncated?)");
  EXPECT_EQ(hardware_may_take(corpus_file("jpeg/ok/forensics_whatsapp_prog.jpg"), DecodeRequest{}).status().message(),
            "progressive JPEG");
  DecodeRequest gray;
  gray.color = ColorFormat::kGray;
  EXPECT_FALSE(hardware_may_take(ok, gray).is_ok());
  DecodeRequest small;
  small.max_pixels = 16;
  EXPECT_EQ(hardware_may_take(ok, small).status().code(), StatusCode::kResourceExhausted);
}

TEST(NvjpegTest, ProbeLeavesWhatNvjpegCannotTakeToTheCpu) {
  HDL_REQUIRE_CORPUS();
  for (const Case& c : kCases) {
    const std::vector<uint8_t> bytes = corpus_file(c.file);
    ASSERT_FALSE(bytes.empty()) << c.file;
    Result<ImageInfo> info = nvjpeg_probe_image(bytes);
    Status s = info.is_ok() ? nvjpeg_supports(*info, DecodeRequest{}) : info.status();
    if (*c.reason == 0) {
      EXPECT_TRUE(s.is_ok()) << c.file << ": " << s.to_string();
    } else {
      EXPECT_EQ(s.code(), StatusCode::kUnsupported) << c.file;
      EXPECT_EQ(s.message(), c.reason) << c.file;
    }
  }
}

TEST(NvjpegTest, RequestsNvjpegCannotHonourAreUnsupported) {
  HDL_REQUIRE_CORPUS();
  Result<ImageInfo> info = nvjpeg_probe_image(corpus_file("jpeg/ok/gdk_exif_orientation6_422.jpg"));
  ASSERT_TRUE(info.is_ok()) << info.status().to_string();
  DecodeRequest r;
  EXPECT_TRUE(nvjpeg_supports(*info, r).is_ok());
  r.min_width = r.min_height = 64;  // DCT scaling is optional: nvJPEG decodes full size
  EXPECT_TRUE(nvjpeg_supports(*info, r).is_ok());
  r.apply_orientation = true;
  EXPECT_EQ(nvjpeg_supports(*info, r).message(), "EXIF orientation");
  r = {};
  r.color = ColorFormat::kGray;
  EXPECT_EQ(nvjpeg_supports(*info, r).message(), "gray output");
  r = {};
  r.roi = {10, 10, 100, 100};
  EXPECT_EQ(nvjpeg_supports(*info, r).message(), "region-of-interest decode");
  r = {};
  r.color = ColorFormat::kBGR;
  EXPECT_TRUE(nvjpeg_supports(*info, r).is_ok());
  // Bytes the header parser refuses are left to the CPU decoder, which reports them itself.
  EXPECT_EQ(nvjpeg_probe_image({}).status().code(), StatusCode::kUnsupported);
}

// With nvJPEG listed first, a DecoderSet still decodes every JPEG: what nvJPEG refuses (all of
// them without a device or library) goes to libjpeg-turbo, with the same pixels.
TEST(NvjpegTest, DecoderSetFallsBackToTheCpuDecoder) {
  HDL_REQUIRE_CORPUS();
  std::vector<DecoderEntry> entries{nvjpeg_decoder_entry()};
  for (const DecoderEntry& e : DecoderRegistry::builtin().entries()) entries.push_back(e);
  const DecoderRegistry registry(entries);
  DecoderSet with_nvjpeg(registry), cpu;
  const bool usable = nvjpeg_status().is_ok();
  uint64_t expected_fallbacks = 0;
  for (const Case& c : kCases) {
    const std::vector<uint8_t> bytes = corpus_file(c.file);
    DecodeRequest req;
    Result<Shape> shape = cpu.output_shape(bytes, req);
    if (!shape.is_ok()) continue;  // not decodable on this build at all (e.g. 12-bit)
    Result<Shape> shape2 = with_nvjpeg.output_shape(bytes, req);
    ASSERT_TRUE(shape2.is_ok()) << c.file << ": " << shape2.status().to_string();
    ASSERT_EQ(*shape, *shape2) << c.file;
    Tensor a = Tensor::empty(*shape, DType::kU8, Layout::kHWC), b = Tensor::empty(*shape, DType::kU8, Layout::kHWC);
    ASSERT_TRUE(cpu.decode(bytes, req, a.view()).is_ok()) << c.file;
    Result<DecodeReport> r = with_nvjpeg.decode(bytes, req, b.view());
    ASSERT_TRUE(r.is_ok()) << c.file << ": " << r.status().to_string();
    const bool gpu_decoded = usable && *c.reason == 0;
    if (!gpu_decoded) {
      EXPECT_EQ(::hdl::testing::diff(a, b).mismatches, 0) << c.file;
      ++expected_fallbacks;
    }
  }
  auto& nv = dynamic_cast<NvjpegDecoder&>(with_nvjpeg.decoder(0));
  EXPECT_STREQ(nv.name(), "nvjpeg");
  EXPECT_EQ(nv.stats().fallbacks, expected_fallbacks);
  for (const auto& [reason, n] : nv.stats().fallback_reasons) {
    std::cout << "[ nvjpeg ] fallback " << n << "x: " << reason << "\n";
  }
  if (!usable) {
    ASSERT_EQ(nv.stats().fallback_reasons.size(), 1u);
    EXPECT_EQ(nvjpeg_status().message().rfind(nv.stats().fallback_reasons.begin()->first, 0), 0u);
  }
}

}  // namespace
}  // namespace hdl
