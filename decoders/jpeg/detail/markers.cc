// Marker parsing for the entry-point index (decoders/jpeg/detail/markers.h).
#include "decoders/jpeg/detail/markers.h"

#include <algorithm>
#include <utility>

namespace hdl::detail::jpeg {
namespace {

uint16_t be16(const uint8_t* p) { return uint16_t(p[0] << 8 | p[1]); }

// Adds codes for the missing DC categories, longer than every existing code, so the codes of
// the symbols already there do not change. False if they do not fit in 16 bits.
bool complete_dc_table(HuffSpec* t) {
  bool present[256] = {};
  for (uint8_t v : t->vals) present[v] = true;
  std::vector<uint8_t> missing;
  for (int s = 0; s < kDcCategories; ++s)
    if (!present[s]) missing.push_back(uint8_t(s));
  if (missing.empty()) return true;
  int longest = 0;
  for (int l = 1; l <= 16; ++l)
    if (t->bits[l]) longest = l;
  HuffSpec ext = *t;
  // Place them at the shortest length beyond the longest code where they fit.
  for (int l = longest + 1; l <= 16; ++l) {
    ext = *t;
    ext.bits[l] = uint8_t(ext.bits[l] + missing.size());
    ext.vals.insert(ext.vals.end(), missing.begin(), missing.end());
    std::vector<uint16_t> codes;
    std::vector<uint8_t> lens;
    if (canonical_codes(ext, &codes, &lens)) {
      *t = ext;
      return true;
    }
  }
  return false;
}

}  // namespace

Result<ParsedHeader> parse_header(std::span<const uint8_t> data) {
  const uint8_t* d = data.data();
  const size_t n = data.size();
  if (n < 4 || d[0] != 0xFF || d[1] != 0xD8) return Status::invalid_data("not a JPEG");
  ParsedHeader h;
  h.header.assign(d, d + 2);
  bool have_frame = false;
  int comp_id[3] = {}, comp_h[3] = {}, comp_v[3] = {};
  size_t i = 2;
  while (true) {
    while (i < n && d[i] == 0xFF && i + 1 < n && d[i + 1] == 0xFF) ++i;  // fill bytes
    if (i + 4 > n || d[i] != 0xFF) return Status::invalid_data("bad marker");
    const uint8_t m = d[i + 1];
    const size_t len = be16(d + i + 2);
    if (len < 2 || i + 2 + len > n) return Status::invalid_data("truncated marker");
    const uint8_t* seg = d + i + 4;
    const size_t seg_len = len - 2;
    auto copy_marker = [&] { h.header.insert(h.header.end(), d + i, d + i + 2 + len); };
    if (m == 0xE0 || m == 0xEE || m == 0xDB) {
      copy_marker();
    } else if ((m >= 0xE1 && m <= 0xEF) || m == 0xFE) {
      // other application data and comments: not needed to decode
    } else if (m == 0xC0 || m == 0xC1) {
      if (have_frame) return Status::unsupported("two frame headers");
      if (seg_len < 6 || seg[0] != 8) return Status::unsupported("not 8-bit");
      const int nc = seg[5];
      if ((nc != 1 && nc != 3) || seg_len != size_t(6 + 3 * nc)) return Status::unsupported("components");
      h.grid.height = be16(seg + 1);
      h.grid.width = be16(seg + 3);
      if (h.grid.width == 0 || h.grid.height == 0) return Status::unsupported("size in DNL");
      h.ncomp = nc;
      for (int c = 0; c < nc; ++c) {
        comp_id[c] = seg[6 + 3 * c];
        comp_h[c] = seg[7 + 3 * c] >> 4;
        comp_v[c] = seg[7 + 3 * c] & 15;
        if (comp_h[c] < 1 || comp_h[c] > 4 || comp_v[c] < 1 || comp_v[c] > 4)
          return Status::unsupported("sampling factors");
      }
      h.sof_size_at = h.header.size() + 5;
      copy_marker();
      have_frame = true;
    } else if (m == 0xC4) {
      size_t j = 0;
      std::vector<uint8_t> out = {0xFF, 0xC4, 0, 0};
      while (j < seg_len) {
        if (j + 17 > seg_len) return Status::invalid_data("bad DHT");
        const int tc = seg[j] >> 4, th = seg[j] & 15;
        if (tc > 1 || th > 3) return Status::invalid_data("bad DHT");
        HuffSpec t;
        int count = 0;
        for (int l = 1; l <= 16; ++l) count += (t.bits[l] = seg[j + l]);
        if (count > 256 || j + 17 + count > seg_len) return Status::invalid_data("bad DHT");
        t.vals.assign(seg + j + 17, seg + j + 17 + count);
        t.defined = true;
        if (tc == 0) {
          h.dc_file[th] = t;
          if (!complete_dc_table(&t)) return Status::unsupported("DC table cannot be completed");
        }
        out.push_back(seg[j]);
        out.insert(out.end(), t.bits + 1, t.bits + 17);
        out.insert(out.end(), t.vals.begin(), t.vals.end());
        (tc == 0 ? h.dc : h.ac)[th] = std::move(t);
        j += 17 + count;
      }
      const size_t out_len = out.size() - 2;
      out[2] = uint8_t(out_len >> 8), out[3] = uint8_t(out_len);
      h.header.insert(h.header.end(), out.begin(), out.end());
    } else if (m == 0xDD) {
      if (seg_len >= 2 && be16(seg) != 0) return Status::unsupported("restart interval");
    } else if (m == 0xDA) {
      if (!have_frame) return Status::invalid_data("scan before frame");
      const int ns = seg_len ? seg[0] : 0;
      if (ns != h.ncomp || seg_len != size_t(4 + 2 * ns)) return Status::unsupported("not one interleaved scan");
      if (seg[1 + 2 * ns] != 0 || seg[2 + 2 * ns] != 63 || seg[3 + 2 * ns] != 0)
        return Status::unsupported("not a sequential scan");
      int hmax = 1, vmax = 1;
      for (int c = 0; c < h.ncomp; ++c) hmax = std::max(hmax, comp_h[c]), vmax = std::max(vmax, comp_v[c]);
      for (int k = 0; k < ns; ++k) {
        const int id = seg[1 + 2 * k];
        int c = 0;
        while (c < h.ncomp && comp_id[c] != id) ++c;
        if (c != k) return Status::unsupported("scan components out of frame order");
        ScanComp& sc = h.comp[k];
        sc.dc = seg[2 + 2 * k] >> 4;
        sc.ac = seg[2 + 2 * k] & 15;
        if (sc.dc > 3 || sc.ac > 3 || !h.dc[sc.dc].defined || !h.ac[sc.ac].defined)
          return Status::invalid_data("undefined Huffman table");
        sc.blocks = h.ncomp == 1 ? 1 : comp_h[k] * comp_v[k];
      }
      if (h.ncomp == 1) {
        hmax = vmax = 1;  // a one-component scan is not interleaved: an MCU is one block
      } else {
        int blocks = 0;
        for (int c = 0; c < h.ncomp; ++c) blocks += h.comp[c].blocks;
        if (blocks > 10) return Status::invalid_data("too many blocks per MCU");
      }
      h.grid.mcu_w = 8 * hmax;
      h.grid.mcu_h = 8 * vmax;
      h.grid.mcus_x = (h.grid.width + h.grid.mcu_w - 1) / h.grid.mcu_w;
      h.grid.mcus_y = (h.grid.height + h.grid.mcu_h - 1) / h.grid.mcu_h;
      copy_marker();
      h.scan_start = i + 2 + len;
      return h;
    } else if (m >= 0xC2 && m <= 0xCF) {
      return Status::unsupported("not a baseline Huffman JPEG");
    } else {
      // Anything else (a standalone RSTn/TEM/SOI/EOI read as a segment, JPGn, DHP, EXP):
      // libjpeg may read the bytes after it as markers where this parser would skip a
      // "segment", so a window JPEG could disagree with the file (fuzz_jpeg_index found a
      // stray RST7 after SOI whose window had no image). Not indexed: the plain path decodes it.
      return Status::unsupported("unexpected marker");
    }
    i += 2 + len;
  }
}

}  // namespace hdl::detail::jpeg
