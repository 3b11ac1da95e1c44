// Hostile inputs: files whose headers lie, scans that never end, inflate bombs. Each must fail
// fast with the named error (or decode in bounded work), never hang, crash or allocate what a
// header claims. The hostile bytes are made here from real corpus files (a JPEG's SOF rewritten,
// a progressive file's last scan repeated, a PNG's IHDR rewritten, a metadata bomb inserted);
// BMP/TIFF/WebP headers are written byte by byte (the corpus has none of those formats).
//
// The few wall-clock checks are hang guards with generous bounds (seconds), not speed tests.
#include <gtest/gtest.h>
#include <zlib.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "decoders/decoder_set.h"
#include "decoders/ffmpeg_image_decoder.h"
#include "decoders/jpeg/jpeg_decoder.h"
#include "decoders/jpeg/index_cache.h"
#include "tests/decoders/decoder_test_util.h"

namespace hdl {
namespace {

using testing::corpus_tests_dir;
using testing::decode_with;
using Bytes = std::vector<uint8_t>;

Bytes corpus_file(const std::string& rel) { return testing::read_file(corpus_tests_dir() / rel); }

#define HDL_REQUIRE_FILE(bytes, rel)                                                       \
  do {                                                                                     \
    if ((bytes).empty()) GTEST_SKIP() << "corpus file " << (rel) << " not found under "   \
                                      << corpus_tests_dir();                               \
  } while (0)

void put_be16(Bytes& b, size_t at, uint32_t v) {
  b[at] = uint8_t(v >> 8);
  b[at + 1] = uint8_t(v);
}
void put_be32(Bytes& b, size_t at, uint32_t v) {
  put_be16(b, at, v >> 16);
  put_be16(b, at + 2, v & 0xFFFF);
}
void put_le16(Bytes& b, size_t at, uint32_t v) {
  b[at] = uint8_t(v);
  b[at + 1] = uint8_t(v >> 8);
}
void put_le32(Bytes& b, size_t at, uint32_t v) {
  put_le16(b, at, v & 0xFFFF);
  put_le16(b, at + 2, v >> 16);
}

// Offsets of a JPEG's marker segments before its first scan: (offset of FF, marker).
std::vector<std::pair<size_t, uint8_t>> jpeg_segments(const Bytes& b) {
  std::vector<std::pair<size_t, uint8_t>> out;
  size_t pos = 2;
  while (pos + 4 <= b.size() && b[pos] == 0xFF) {
    const uint8_t m = b[pos + 1];
    out.emplace_back(pos, m);
    if (m == 0xDA) break;
    pos += 2 + (size_t(b[pos + 2]) << 8 | b[pos + 3]);
  }
  return out;
}

// The JPEG with its frame header (SOF) saying width x height; the scan data is unchanged.
Bytes with_jpeg_size(Bytes b, uint32_t width, uint32_t height) {
  for (auto [at, m] : jpeg_segments(b))
    if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) {
      put_be16(b, at + 5, height);
      put_be16(b, at + 7, width);
      return b;
    }
  ADD_FAILURE() << "no SOF";
  return b;
}

// The progressive JPEG with its last scan (DHT/SOS header through entropy data) repeated until
// the file has `scans` scans: each repeat is a valid scan libjpeg decodes (with a "bogus
// progression" warning), the shape of the known many-scans denial of service.
Bytes with_scans(const Bytes& b, int scans) {
  std::vector<size_t> sos;
  for (size_t i = 0; i + 1 < b.size(); ++i)
    if (b[i] == 0xFF && b[i + 1] == 0xDA) sos.push_back(i);
  EXPECT_GE(sos.size(), 2u);
  size_t eoi = b.size() - 2;
  EXPECT_TRUE(b[eoi] == 0xFF && b[eoi + 1] == 0xD9);
  const Bytes last(b.begin() + sos.back(), b.begin() + eoi);
  Bytes out(b.begin(), b.begin() + eoi);
  for (int i = int(sos.size()); i < scans; ++i) out.insert(out.end(), last.begin(), last.end());
  out.push_back(0xFF);
  out.push_back(0xD9);
  return out;
}

// The PNG with IHDR saying width x height (CRC recomputed).
Bytes with_png_size(Bytes b, uint32_t width, uint32_t height) {
  put_be32(b, 16, width);
  put_be32(b, 20, height);
  put_be32(b, 29, uint32_t(crc32(0, b.data() + 12, 17)));
  return b;
}

// A PNG chunk of `type` holding `payload`.
Bytes png_chunk(const char* type, const Bytes& payload) {
  Bytes c(8);
  put_be32(c, 0, uint32_t(payload.size()));
  std::memcpy(c.data() + 4, type, 4);
  c.insert(c.end(), payload.begin(), payload.end());
  c.resize(c.size() + 4);
  put_be32(c, c.size() - 4, uint32_t(crc32(0, c.data() + 4, uInt(4 + payload.size()))));
  return c;
}

// zlib stream of `n` zero bytes (about n / 1000 bytes).
Bytes deflated_zeros(size_t n) {
  z_stream z{};
  deflateInit(&z, 9);
  const Bytes zeros(1 << 20, 0);
  Bytes out(n / 500 + 1024);
  z.next_out = out.data();
  z.avail_out = uInt(out.size());
  for (size_t left = n; left > 0;) {
    const size_t k = std::min(left, zeros.size());
    z.next_in = const_cast<uint8_t*>(zeros.data());
    z.avail_in = uInt(k);
    left -= k;
    deflate(&z, left ? Z_NO_FLUSH : Z_FINISH);
  }
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// Status of a whole decode through the registry (probe, fallback), as the pipeline does it.
Status decode_status(std::span<const uint8_t> bytes, const DecodeRequest& req = {}) {
  DecoderSet set;
  auto r = decode_with(set, bytes, req);
  return r.is_ok() ? Status::ok() : r.status();
}

#define EXPECT_STATUS(status, code_, text)                                                  \
  do {                                                                                      \
    const Status s_ = (status);                                                             \
    EXPECT_EQ(s_.code(), code_) << s_.to_string();                                          \
    EXPECT_NE(s_.to_string().find(text), std::string::npos) << s_.to_string();              \
  } while (0)

// ---- (1) dimensions: max_pixels from the header, before any large allocation ----------------

TEST(HostileDimensions, JpegSofRewrittenIsRefusedOnEveryPath) {
  const std::string rel = "jpeg/ok/derived_tower_restart1block.jpg";
  const Bytes real = corpus_file(rel);
  HDL_REQUIRE_FILE(real, rel);
  const Bytes bomb = with_jpeg_size(real, 65000, 65000);  // 4.2 Gpixel claimed by 84 KB
  DecoderSet set;
  auto info = set.read_info(bomb);  // the header alone is fine to read
  ASSERT_TRUE(info.is_ok()) << info.status().to_string();
  EXPECT_EQ(info->width, 65000);

  DecodeRequest whole;
  DecodeRequest roi;
  roi.roi = {100, 100, 224, 224};
  DecodeRequest scaled;
  scaled.min_width = scaled.min_height = 64;  // DCT scaling would make it 1/8: still refused
  DecodeRequest indexed = roi;
  JpegIndexCache cache(size_t(64) << 20);
  indexed.index_cache = &cache;
  for (const DecodeRequest* req : {&whole, &roi, &scaled, &indexed}) {
    EXPECT_STATUS(set.output_shape(bomb, *req).status(), StatusCode::kResourceExhausted, "over max_pixels");
    // decode() checks too, whatever output it is handed: nothing is allocated for the claim.
    uint8_t px[3];
    TensorView out(px, Shape{1, 1, 3}, DType::kU8, Layout::kHWC);
    EXPECT_STATUS(set.decode(bomb, *req, out).status(), StatusCode::kResourceExhausted, "over max_pixels");
  }
  // FFmpeg's mjpeg (the JPEG fallback) refuses it from the same header.
  auto ffmpeg = make_ffmpeg_image_decoder();
  EXPECT_STATUS(decode_with(*ffmpeg, bomb, whole).status(), StatusCode::kResourceExhausted, "over max_pixels");
}

TEST(HostileDimensions, CorpusBombIsRefused) {
  const std::string rel = "jpeg/huge/gdk_issue205_64250x64250.jpg";  // 1.4 KB, progressive
  const Bytes bomb = corpus_file(rel);
  HDL_REQUIRE_FILE(bomb, rel);
  EXPECT_STATUS(decode_status(bomb), StatusCode::kResourceExhausted, "64250x64250");
}

TEST(HostileDimensions, PngIhdrRewrittenIsRefused) {
  std::vector<Bytes> pngs;
  for (const auto& row : testing::manifest_files("ok", "png/"))
    if (pngs.empty()) pngs.push_back(corpus_file(row.file));
  if (pngs.empty() || pngs[0].empty()) GTEST_SKIP() << "no PNG in the corpus manifest";
  for (auto [w, h] : {std::pair{60000u, 60000u}, {0x7FFFFFFFu, 2u}, {1u, 0x7FFFFFFFu}}) {
    const Bytes bomb = with_png_size(pngs[0], w, h);
    EXPECT_STATUS(decode_status(bomb), StatusCode::kResourceExhausted, "over max_pixels");
    auto ffmpeg = make_ffmpeg_image_decoder();
    uint8_t px[3];
    TensorView out(px, Shape{1, 1, 3}, DType::kU8, Layout::kHWC);
    EXPECT_STATUS(ffmpeg->decode(bomb, {}, out).status(), StatusCode::kResourceExhausted, "over max_pixels");
  }
  // Past 2^31 on a side: a corrupt header, not a big image.
  EXPECT_STATUS(decode_status(with_png_size(pngs[0], 0xFFFFFFFFu, 1)), StatusCode::kInvalidData, "invalid dimensions");
}

TEST(HostileDimensions, BmpTiffWebpHeadersAreRefused) {
  // BMP: BITMAPINFOHEADER, 24 bpp, 50000 x -50000 (top-down), no pixel data.
  Bytes bmp(54, 0);
  bmp[0] = 'B';
  bmp[1] = 'M';
  put_le32(bmp, 2, 54);
  put_le32(bmp, 10, 54);
  put_le32(bmp, 14, 40);
  put_le32(bmp, 18, 50000);
  put_le32(bmp, 22, uint32_t(-50000));
  put_le16(bmp, 26, 1);
  put_le16(bmp, 28, 24);
  EXPECT_STATUS(decode_status(bmp), StatusCode::kResourceExhausted, "50000x50000");

  // TIFF (little-endian): one IFD with ImageWidth = ImageLength = 100000 (LONG), 8-bit gray.
  Bytes tiff = {'I', 'I', 42, 0, 8, 0, 0, 0};
  const uint16_t tags[][3] = {{256, 4, 0}, {257, 4, 0}, {258, 3, 8}, {262, 3, 1}, {273, 4, 0}, {277, 3, 1}};
  tiff.resize(8 + 2 + 12 * 6 + 4, 0);
  put_le16(tiff, 8, 6);
  for (int i = 0; i < 6; ++i) {
    const size_t e = 10 + 12 * i;
    put_le16(tiff, e, tags[i][0]);
    put_le16(tiff, e + 2, tags[i][1]);
    put_le32(tiff, e + 4, 1);
    put_le32(tiff, e + 8, i < 2 ? 100000u : tags[i][2]);
  }
  EXPECT_STATUS(decode_status(tiff), StatusCode::kResourceExhausted, "100000x100000");

  // WebP VP8X: a 16777216 x 16777216 canvas (the 24-bit maximum).
  Bytes webp = {'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'E', 'B', 'P', 'V', 'P', '8', 'X', 10, 0, 0, 0,
                0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
  put_le32(webp, 4, uint32_t(webp.size() - 8));
  EXPECT_STATUS(decode_status(webp), StatusCode::kResourceExhausted, "over max_pixels");
  // WebP VP8L: 16384 x 16384 is exactly the default max_pixels (2^28); a request for less refuses it.
  Bytes vp8l = {'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'E', 'B', 'P', 'V', 'P', '8', 'L', 10, 0, 0, 0,
                0x2F, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  put_le32(vp8l, 4, uint32_t(vp8l.size() - 8));
  put_le32(vp8l, 21, 0x3FFF | 0x3FFF << 14);
  DecodeRequest small;
  small.max_pixels = 1 << 24;
  EXPECT_STATUS(decode_status(vp8l, small), StatusCode::kResourceExhausted, "16384x16384");
}

// ---- (2) scans and markers -------------------------------------------------------------

TEST(HostileScans, ThousandsOfScansAreRefused) {
  const std::string rel = "jpeg/ok/go_video001_progressive_444.jpg";  // 150x103, 10 scans
  const Bytes real = corpus_file(rel);
  HDL_REQUIRE_FILE(real, rel);
  const Bytes hostile = with_scans(real, 5000);
  EXPECT_STATUS(decode_status(hostile), StatusCode::kResourceExhausted, "too many scans: more than max_scans (500)");
  DecodeRequest roi;
  roi.roi = {10, 10, 32, 32};
  roi.min_width = roi.min_height = 8;
  EXPECT_STATUS(decode_status(hostile, roi), StatusCode::kResourceExhausted, "too many scans");
  // FFmpeg's mjpeg (the JPEG fallback) has no limit of its own: the scans are counted first.
  auto ffmpeg = make_ffmpeg_image_decoder();
  EXPECT_STATUS(decode_with(*ffmpeg, hostile, {}).status(), StatusCode::kResourceExhausted, "too many scans");

  // The limit is exact: the real file's 10 scans pass at max_scans = 10, fail at 9.
  DecodeRequest ten;
  ten.max_scans = 10;
  EXPECT_TRUE(decode_status(real, ten).is_ok());
  EXPECT_TRUE(decode_with(*ffmpeg, real, ten).is_ok());
  DecodeRequest nine;
  nine.max_scans = 9;
  EXPECT_STATUS(decode_status(real, nine), StatusCode::kResourceExhausted, "more than max_scans (9)");
  EXPECT_STATUS(decode_with(*ffmpeg, real, nine).status(), StatusCode::kResourceExhausted, "more than max_scans (9)");
  // 0 lifts the limit: the 5000 scans are decoded, and their bogus progression is data loss.
  DecodeRequest unlimited;
  unlimited.max_scans = 0;
  unlimited.allow_partial = true;
  auto dec = make_jpeg_decoder();
  DecodeReport report;
  ASSERT_TRUE(decode_with(*dec, hostile, unlimited, &report).is_ok());
  EXPECT_TRUE(report.partial) << report.warning;
}

// A restart marker after every MCU, and entropy data that is nothing but markers: decoded (or
// refused) in one pass. The time bound is a hang guard, not a speed test.
TEST(HostileScans, RestartMarkersAndJunkMarkersEndQuickly) {
  const std::string rel = "jpeg/ok/derived_tower_restart1block.jpg";  // 512x512, DRI = 1
  const Bytes real = corpus_file(rel);
  HDL_REQUIRE_FILE(real, rel);
  const auto start = std::chrono::steady_clock::now();
  DecodeRequest roi;
  roi.roi = {300, 400, 100, 100};
  JpegIndexCache cache(size_t(64) << 20);
  roi.index_cache = &cache;
  EXPECT_TRUE(decode_status(real).is_ok());
  EXPECT_TRUE(decode_status(real, roi).is_ok());

  // 1-1.5 MB of markers after the scan header of a file without restart interval (so a region
  // decode runs the entry-point index pass over them too): RST0..7 cycling, RSTs between
  // stuffed zeros, stray markers (FF 01, FF C8).
  const std::string plain_rel = "jpeg/ok/rs_tower_444.jpg";
  const Bytes plain = corpus_file(plain_rel);
  HDL_REQUIRE_FILE(plain, plain_rel);
  const auto segs = jpeg_segments(plain);
  ASSERT_EQ(segs.back().second, 0xDA);
  const size_t sos = segs.back().first;
  const size_t data = sos + 2 + (size_t(plain[sos + 2]) << 8 | plain[sos + 3]);
  for (int kind = 0; kind < 3; ++kind) {
    Bytes junk(plain.begin(), plain.begin() + data);
    for (int i = 0; i < (1 << 19); ++i) {
      junk.push_back(0xFF);
      junk.push_back(kind == 0 ? uint8_t(0xD0 + (i & 7)) : kind == 1 ? uint8_t(0xD0 + ((i * 3) & 7)) : uint8_t(0x01 + (i & 1) * 0xC7));
      if (kind == 1) junk.push_back(0x00);  // stuffed zero: "data" between markers
    }
    junk.push_back(0xFF);
    junk.push_back(0xD9);
    for (const DecodeRequest* req : std::vector<const DecodeRequest*>{nullptr, &roi}) {
      DecodeRequest r = req ? *req : DecodeRequest{};
      Status s = decode_status(junk, r);
      EXPECT_FALSE(s.is_ok()) << "kind " << kind;  // data lost: an error without allow_partial
      r.allow_partial = true;
      s = decode_status(junk, r);
      EXPECT_TRUE(s.is_ok() || s.code() == StatusCode::kInvalidData) << s.to_string();
    }
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20)) << "hang guard";
}

// ---- (3) PNG inflate bombs and frames ----------------------------------------------------

// A PNG within max_pixels whose iCCP and zTXt chunks inflate to 64 MB each (a 1 MB chunk
// would make 1 GB): FFmpeg would inflate them into buffers without a size limit; the decoder
// drops them unread and the pixels are those of the file without them. A third chunk, an
// iCCP whose zlib stream is corrupt, shows they are not inflated: FFmpeg fails the whole
// image on it. APNG frames (100 fdAT chunks of the same bomb) are not decoded either.
TEST(HostilePng, MetadataAndAnimationBombsAreNotInflated) {
  std::vector<Bytes> pngs;
  for (const auto& row : testing::manifest_files("ok", "png/"))
    if (pngs.empty()) pngs.push_back(corpus_file(row.file));
  if (pngs.empty() || pngs[0].empty()) GTEST_SKIP() << "no PNG in the corpus manifest";
  const Bytes& real = pngs[0];
  const Bytes zeros = deflated_zeros(size_t(64) << 20);
  Bytes iccp = {'b', 'o', 'm', 'b', 0, 0};  // name, NUL, compression method 0
  iccp.insert(iccp.end(), zeros.begin(), zeros.end());
  Bytes ztxt = {'C', 'o', 'm', 'm', 'e', 'n', 't', 0, 0};
  ztxt.insert(ztxt.end(), zeros.begin(), zeros.end());
  Bytes bomb(real.begin(), real.begin() + 33);  // signature + IHDR
  const Bytes corrupt_iccp = {'x', 0, 0, 0x78, 0xDA, 0xFF, 0xFF, 0xFF, 0xFF};
  for (const Bytes& c : {png_chunk("iCCP", iccp), png_chunk("zTXt", ztxt), png_chunk("iCCP", corrupt_iccp)})
    bomb.insert(bomb.end(), c.begin(), c.end());
  // APNG: an animation control chunk claiming 100,000 frames and 100 frames of inflate bomb.
  Bytes actl(8, 0);
  put_be32(actl, 0, 100000);
  const Bytes actl_chunk = png_chunk("acTL", actl);
  bomb.insert(bomb.end(), actl_chunk.begin(), actl_chunk.end());
  bomb.insert(bomb.end(), real.begin() + 33, real.end() - 12);  // up to IEND
  Bytes fdat = {0, 0, 0, 1};
  fdat.insert(fdat.end(), zeros.begin(), zeros.end());
  const Bytes fdat_chunk = png_chunk("fdAT", fdat);
  for (int i = 0; i < 100; ++i) bomb.insert(bomb.end(), fdat_chunk.begin(), fdat_chunk.end());
  bomb.insert(bomb.end(), real.end() - 12, real.end());

  DecoderSet set;
  auto want = decode_with(set, real, {});
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  const auto start = std::chrono::steady_clock::now();
  auto got = decode_with(set, bomb, {});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ(got->px, want->px);
  // Inflating the chunks would take about 0.5 s and 130 MB; skipping them takes nothing. A guard.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5)) << "hang guard";
}

}  // namespace
}  // namespace hdl
