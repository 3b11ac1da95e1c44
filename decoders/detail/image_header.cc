#include "decoders/detail/image_header.h"

#include <cstring>
#include <string>

namespace hdl::detail {
namespace {

uint32_t be16(const uint8_t* p) { return uint32_t(p[0]) << 8 | p[1]; }
uint32_t be32(const uint8_t* p) { return be16(p) << 16 | be16(p + 2); }
uint32_t le16(const uint8_t* p) { return uint32_t(p[1]) << 8 | p[0]; }
uint32_t le24(const uint8_t* p) { return le16(p) | uint32_t(p[2]) << 16; }
uint32_t le32(const uint8_t* p) { return le16(p) | le16(p + 2) << 16; }

bool starts_with(Bytes d, const char* magic, size_t n, size_t at = 0) {
  return d.size() >= at + n && std::memcmp(d.data() + at, magic, n) == 0;
}

Status truncated(const char* format) {
  return Status::invalid_data(std::string(format) + " header is truncated");
}

// A classic TIFF structure (a TIFF file, or the payload of a JPEG's EXIF segment).
class TiffReader {
 public:
  explicit TiffReader(Bytes d) : d_(d), le_(d.size() >= 2 && d[0] == 'I') {}
  bool valid() const { return d_.size() >= 8 && (starts_with(d_, "II*\0", 4) || starts_with(d_, "MM\0*", 4)); }
  /// The first IFD's value of `tag` (SHORT or LONG, first value), or `fallback`.
  uint32_t ifd0_value(uint16_t tag, uint32_t fallback) const {
    uint32_t ifd = u32(4);
    if (!in(ifd, 2)) return fallback;
    uint32_t n = u16(ifd);
    for (uint32_t i = 0; i < n && i < 4096; ++i) {
      uint64_t e = uint64_t(ifd) + 2 + 12 * uint64_t(i);
      if (!in(e, 12)) return fallback;
      if (u16(e) != tag) continue;
      uint32_t type = u16(e + 2);
      if (type == 3 || type == 8) return u16(e + 8);  // SHORT, SSHORT
      if (type == 4 || type == 9) return u32(e + 8);  // LONG, SLONG (real cameras write it)
      return fallback;
    }
    return fallback;
  }

 private:
  bool in(uint64_t off, uint64_t n) const { return off + n <= d_.size(); }
  uint32_t u16(uint64_t off) const { return le_ ? le16(&d_[off]) : be16(&d_[off]); }
  uint32_t u32(uint64_t off) const { return le_ ? le32(&d_[off]) : be32(&d_[off]); }
  Bytes d_;
  bool le_;
};

// Walks the marker segments of a JPEG before the first SOS. `visit(marker, payload)` returns
// false to stop. Returns false when the structure is broken before SOS.
template <typename Visit>
bool walk_jpeg_markers(Bytes d, Visit&& visit) {
  size_t pos = 2;
  while (pos < d.size()) {
    if (d[pos] != 0xFF) return false;
    while (pos < d.size() && d[pos] == 0xFF) ++pos;  // fill bytes
    if (pos >= d.size()) return false;
    uint8_t marker = d[pos++];
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) continue;  // no payload
    if (marker == 0xD9 || pos + 2 > d.size()) return false;
    size_t len = be16(&d[pos]);
    if (len < 2 || pos + len > d.size()) return false;
    if (!visit(marker, d.subspan(pos + 2, len - 2))) return true;
    if (marker == 0xDA) return true;
    pos += len;
  }
  return false;
}

bool is_sof(uint8_t m) { return m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC; }

Status parse_jpeg(Bytes d, ImageInfo* info) {
  bool have_sof = false;
  int h[4] = {1, 1, 1, 1}, v[4] = {1, 1, 1, 1};
  walk_jpeg_markers(d, [&](uint8_t m, Bytes p) {
    if (!is_sof(m)) return m != 0xDA;
    if (p.size() < 6) return false;
    info->height = be16(&p[1]);
    info->width = be16(&p[3]);
    info->channels = p[5];
    for (int c = 0; c < info->channels && c < 4 && p.size() >= size_t(6 + 3 * c + 3); ++c) {
      h[c] = p[7 + 3 * c] >> 4;
      v[c] = p[7 + 3 * c] & 15;
    }
    info->progressive = (m & 3) == 2;
    have_sof = true;
    return false;
  });
  if (!have_sof) return Status::invalid_data("JPEG: no frame header (SOF) before the scan data");
  if (info->width == 0 || info->height == 0) return Status::invalid_data("JPEG: empty image");
  info->color_space = info->channels == 1 ? "gray" : info->channels == 3 ? "ycbcr" : "cmyk";
  info->subsampling = jpeg_subsampling_name(info->channels, h, v);
  info->orientation = jpeg_exif_orientation(d);
  return Status::ok();
}

Status parse_png(Bytes d, ImageInfo* info) {
  if (d.size() < 29) return truncated("PNG");
  if (!starts_with(d, "IHDR", 4, 12)) return Status::invalid_data("PNG: first chunk is not IHDR");
  info->width = be32(&d[16]);
  info->height = be32(&d[20]);
  static const struct { int channels; const char* name; } kTypes[7] = {
      {1, "gray"}, {0, ""}, {3, "rgb"}, {3, "palette"}, {2, "gray-alpha"}, {0, ""}, {4, "rgba"}};
  uint8_t type = d[25];
  if (type > 6 || kTypes[type].channels == 0)
    return Status::invalid_data("PNG: invalid colour type " + std::to_string(type));
  info->channels = kTypes[type].channels;
  info->color_space = kTypes[type].name;
  info->progressive = d[28] != 0;  // Adam7 interlacing
  return Status::ok();
}

Status parse_bmp(Bytes d, ImageInfo* info) {
  if (d.size() < 30) return truncated("BMP");
  int bpp;
  if (le32(&d[14]) == 12) {
    info->width = le16(&d[18]);
    info->height = le16(&d[20]);
    bpp = le16(&d[24]);
  } else {
    info->width = int32_t(le32(&d[18]));
    int32_t hgt = int32_t(le32(&d[22]));
    info->height = hgt < 0 ? -int64_t(hgt) : hgt;  // negative: stored top-down
    bpp = le16(&d[28]);
  }
  info->channels = bpp == 32 ? 4 : 3;
  info->color_space = bpp <= 8 ? "palette" : bpp == 32 ? "rgba" : "rgb";
  return Status::ok();
}

Status parse_webp(Bytes d, ImageInfo* info) {
  if (d.size() < 30) return truncated("WebP");
  if (starts_with(d, "VP8 ", 4, 12)) {
    if (d[23] != 0x9D || d[24] != 0x01 || d[25] != 0x2A)
      return Status::invalid_data("WebP: bad VP8 key frame start code");
    info->width = le16(&d[26]) & 0x3FFF;
    info->height = le16(&d[28]) & 0x3FFF;
    info->channels = 3;
  } else if (starts_with(d, "VP8L", 4, 12)) {
    if (d[20] != 0x2F) return Status::invalid_data("WebP: bad VP8L signature");
    uint32_t bits = le32(&d[21]);
    info->width = (bits & 0x3FFF) + 1;
    info->height = ((bits >> 14) & 0x3FFF) + 1;
    info->channels = (bits >> 28) & 1 ? 4 : 3;
  } else if (starts_with(d, "VP8X", 4, 12)) {
    if (d[20] & 0x02) return Status::unsupported("animated WebP is not supported");
    info->width = le24(&d[24]) + 1;
    info->height = le24(&d[27]) + 1;
    info->channels = d[20] & 0x10 ? 4 : 3;
  } else {
    return Status::invalid_data("WebP: unknown first chunk");
  }
  info->color_space = info->channels == 4 ? "rgba" : "rgb";
  return Status::ok();
}

Status parse_tiff(Bytes d, ImageInfo* info) {
  TiffReader t(d);
  if (!t.valid()) return truncated("TIFF");
  info->width = t.ifd0_value(256, 0);
  info->height = t.ifd0_value(257, 0);
  info->channels = int(t.ifd0_value(277, 1));
  static const char* const kPhotometric[7] = {"gray", "gray", "rgb", "palette", "mask", "cmyk", "ycbcr"};
  uint32_t photometric = t.ifd0_value(262, 1);
  info->color_space = photometric < 7 ? kPhotometric[photometric] : "other";
  uint32_t orientation = t.ifd0_value(274, 1);
  info->orientation = orientation >= 1 && orientation <= 8 ? int(orientation) : 1;
  return Status::ok();
}

}  // namespace

bool is_jpeg(Bytes d) { return d.size() >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF; }
bool is_png(Bytes d) { return starts_with(d, "\x89PNG\r\n\x1a\n", 8); }
bool is_bmp(Bytes d) {
  if (!starts_with(d, "BM", 2) || d.size() < 18) return false;
  switch (le32(&d[14])) {
    case 12: case 16: case 40: case 52: case 56: case 64: case 108: case 124: return true;
    default: return false;
  }
}
bool is_tiff(Bytes d) { return starts_with(d, "II*\0", 4) || starts_with(d, "MM\0*", 4); }
bool is_webp(Bytes d) { return starts_with(d, "RIFF", 4) && starts_with(d, "WEBP", 4, 8); }

const char* jpeg_subsampling_name(int components, const int h[], const int v[]) {
  if (components == 1) return "gray";
  if (components < 3) return "other";
  if (h[1] != h[2] || v[1] != v[2] || h[1] != 1 || v[1] != 1 ||
      (components == 4 && (h[3] != h[0] || v[3] != v[0])))
    return "other";
  struct Layout { int h, v; const char* name; };
  static const Layout kLayouts[] = {{1, 1, "444"}, {2, 1, "422"}, {2, 2, "420"}, {1, 2, "440"},
                                    {4, 1, "411"}, {4, 2, "410"}, {1, 4, "441"}};
  for (const Layout& l : kLayouts)
    if (h[0] == l.h && v[0] == l.v) return l.name;
  return "other";
}

Status parse_image_header(Bytes data, ImageInfo* info) {
  Status s;
  if (is_jpeg(data)) {
    info->format = "jpeg";
    s = parse_jpeg(data, info);
  } else if (is_png(data)) {
    info->format = "png";
    s = parse_png(data, info);
  } else if (is_bmp(data)) {
    info->format = "bmp";
    s = parse_bmp(data, info);
  } else if (is_webp(data)) {
    info->format = "webp";
    s = parse_webp(data, info);
  } else if (is_tiff(data)) {
    info->format = "tiff";
    s = parse_tiff(data, info);
  } else {
    return Status::invalid_data("not a JPEG, PNG, BMP, TIFF or WebP file");
  }
  if (s.is_ok() && (info->width <= 0 || info->height <= 0 || info->width > (int64_t(1) << 31) ||
                    info->height > (int64_t(1) << 31)))
    return Status::invalid_data(info->format + ": invalid dimensions " +
                                std::to_string(info->width) + "x" + std::to_string(info->height));
  return s;
}

int count_jpeg_scans(Bytes d, int limit) {
  int scans = 0;
  size_t pos = 2;
  while (pos + 1 < d.size() && scans <= limit) {
    if (d[pos] != 0xFF) {  // entropy-coded data (or junk): skip to the next marker
      const void* ff = std::memchr(d.data() + pos, 0xFF, d.size() - pos);
      if (!ff) break;
      pos = static_cast<const uint8_t*>(ff) - d.data();
      continue;
    }
    uint8_t m = d[pos + 1];
    if (m == 0xFF) { ++pos; continue; }  // fill byte
    pos += 2;
    if (m == 0x00 || m == 0x01 || (m >= 0xD0 && m <= 0xD9)) continue;  // stuffed byte, RSTn, SOI, EOI, TEM
    if (pos + 2 > d.size()) break;
    size_t len = be16(&d[pos]);
    if (len < 2) break;
    scans += m == 0xDA;
    pos += len;  // the scan's entropy data follows its header
  }
  return scans;
}

int jpeg_exif_orientation(Bytes data) {
  int orientation = 1;
  walk_jpeg_markers(data, [&](uint8_t m, Bytes p) {
    if (m != 0xE1 || !starts_with(p, "Exif\0\0", 6)) return m != 0xDA;
    uint32_t o = TiffReader(p.subspan(6)).ifd0_value(0x0112, 1);
    orientation = o >= 1 && o <= 8 ? int(o) : 1;
    return false;  // only the first EXIF segment counts
  });
  return orientation;
}

}  // namespace hdl::detail
