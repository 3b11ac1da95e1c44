// Windows of an indexed JPEG (decoders/jpeg/jpeg_window.h): their MCUs, and those MCUs written
// as a small JPEG, its entropy-coded segments copied from the file with detail/bit_io.h.
#include "decoders/jpeg/jpeg_window.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "decoders/jpeg/detail/bit_io.h"
#include "decoders/jpeg/detail/huffman.h"
#include "decoders/jpeg/detail/markers.h"
#include "decoders/jpeg/detail/scan_index.h"

namespace hdl {
namespace detail {

using jpeg::BitReader;
using jpeg::BitWriter;
using jpeg::block;
using jpeg::canonical_codes;
using jpeg::copy_entropy_bits;
using jpeg::dc_category;
using jpeg::entry_of;
using jpeg::HuffDecoder;
using jpeg::HuffSpec;
using jpeg::inside_grid;
using jpeg::kDcCategories;
using jpeg::ParsedHeader;
using jpeg::read_dc;
using jpeg::skip_ac;

namespace {

constexpr size_t kTailPadding = 512 * 10;  // libjpeg-turbo's fast-path margin for 10 blocks

struct DcCode {
  uint16_t code[kDcCategories];
  uint8_t len[kDcCategories];
};

// Unstuffed bits from (a, abit) to (b, bbit), stuffed file offsets of data bytes.
uint64_t unstuffed_bits(std::span<const uint8_t> data, size_t a, int abit, size_t b, int bbit) {
  size_t stuffed = 0;
  for (const uint8_t* p = data.data() + a; (p = static_cast<const uint8_t*>(std::memchr(p, 0xFF, data.data() + b - p))); ++p)
    ++stuffed;
  return (uint64_t(b - a) - stuffed) * 8 + uint64_t(bbit) - uint64_t(abit);
}

// Writes the window's markers up to its scan header, the frame's size patched; returns where
// the entropy-coded data goes.
uint8_t* put_window_header(const JpegScanIndex& x, const JpegWindow& win, uint8_t* out) {
  const ParsedHeader& h = x.head;
  std::memcpy(out, h.header.data(), h.header.size());
  uint8_t* sof = out + h.sof_size_at;
  sof[0] = uint8_t(win.height >> 8), sof[1] = uint8_t(win.height);
  sof[2] = uint8_t(win.width >> 8), sof[3] = uint8_t(win.width);
  return out + h.header.size();
}

}  // namespace

Result<JpegWindowPlan> plan_jpeg_window(const JpegScanIndex& x, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  const JpegMcuGrid& g = x.head.grid;
  c0 = c0 / x.step * x.step;
  c1 = std::min<int64_t>(g.mcus_x, (c1 + x.step - 1) / x.step * x.step);
  if (!inside_grid(g, r0, r1, c0, c1)) return Status::invalid_argument("window outside the MCU grid");
  // libjpeg upsamples a component only 1 or 2 samples wide with a box filter instead of the
  // fancy one, so a one-MCU window at the right edge of an image whose last MCU column holds
  // a few pixels (4:2:0, 163 px wide: 3 px, 2 chroma samples) would decode with other chroma
  // than the full image. Two MCU columns are always more than 2 samples wide.
  if (c1 - c0 < 2 && g.mcus_x >= 2) {
    if (c1 < g.mcus_x) c1 = std::min<int64_t>(g.mcus_x, c1 + x.step);
    else c0 -= x.step;
  }
  JpegWindowPlan plan;
  JpegWindow& win = plan.window;
  win.x = c0 * g.mcu_w;
  win.y = r0 * g.mcu_h;
  win.width = std::min<int64_t>(g.width, c1 * g.mcu_w) - win.x;
  win.height = std::min<int64_t>(g.height, r1 * g.mcu_h) - win.y;
  plan.r0 = r0, plan.r1 = r1, plan.c0 = c0, plan.c1 = c1;
  return plan;
}

void write_jpeg_window_header(const JpegScanIndex& x, const JpegWindowPlan& plan, std::vector<uint8_t>& out) {
  out.resize(x.head.header.size() + 2);
  uint8_t* p = put_window_header(x, plan.window, out.data());
  p[0] = 0xFF, p[1] = 0xD9;
}

Result<JpegWindow> write_jpeg_window(std::span<const uint8_t> data, const JpegScanIndex& x, int64_t r0,
                                     int64_t r1, int64_t c0, int64_t c1, std::vector<uint8_t>& out) {
  HDL_ASSIGN_OR_RETURN(JpegWindowPlan plan, plan_jpeg_window(x, r0, r1, c0, c1));
  r0 = plan.r0, r1 = plan.r1, c0 = plan.c0, c1 = plan.c1;
  const JpegWindow& win = plan.window;
  const ParsedHeader& h = x.head;
  auto entry = [&](int64_t row, int64_t col) { return entry_of(x, row, col); };
  auto offset_of = [&](size_t e) { return h.scan_start + (x.pos[e] >> 3); };
  // Room: the header, every byte of the segments (re-stuffing can at most double a byte) and
  // the DC codes that get longer.
  size_t room = h.header.size() + 64 + kTailPadding;
  for (int64_t r = r0; r < r1; ++r) room += 2 * (offset_of(entry(r, c1)) - offset_of(entry(r, c0)) + 8) + 16;
  out.resize(room);
  put_window_header(x, win, out.data());

  // Decoding tables per table number the scan uses (the file's own); DC codes to re-encode
  // with (the extended tables of the window's header).
  HuffDecoder dc_tables[4], ac_tables[4];
  DcCode enc[4];
  bool built_dc[4] = {}, built_ac[4] = {};
  for (int c = 0; c < h.ncomp; ++c) {
    const int td = h.comp[c].dc, ta = h.comp[c].ac;
    if (!built_ac[ta] && !(built_ac[ta] = ac_tables[ta].build(h.ac[ta], HuffDecoder::Skip::kSingle)))
      return Status::internal("index tables");
    if (built_dc[td]) continue;
    const HuffSpec& spec = h.dc[td];
    if (!(built_dc[td] = dc_tables[td].build(h.dc_file[td]))) return Status::internal("index tables");
    std::vector<uint16_t> codes;
    std::vector<uint8_t> lens;
    canonical_codes(spec, &codes, &lens);
    std::memset(&enc[td], 0, sizeof(DcCode));
    for (size_t k = 0; k < spec.vals.size(); ++k)
      if (spec.vals[k] < kDcCategories) enc[td].code[spec.vals[k]] = codes[k], enc[td].len[spec.vals[k]] = lens[k];
  }
  const uint8_t* const file_end = data.data() + data.size();
  const auto mismatch = [] { return Status::invalid_data("entropy data does not match its index"); };

  BitWriter w(out.data() + h.header.size());
  int prev[3] = {};  // DC of the last block of each component written so far
  for (int64_t r = r0; r < r1; ++r) {
    const size_t e0 = entry(r, c0), e1 = entry(r, c1);
    const size_t end_off = offset_of(e1);
    const int end_bit = int(x.pos[e1] & 7);
    BitReader rd(data.data(), data.size(), offset_of(e0));
    rd.refill();
    rd.consume(int(x.pos[e0] & 7));
    // The segment's first MCU: each component's first DC difference now counts from `prev`.
    // Parse it to find those differences; everything between them is copied as it is.
    int new_dc[3];
    size_t from[3], upto[3];
    int from_bit[3], upto_bit[3];
    for (int c = 0; c < h.ncomp; ++c) {
      const HuffDecoder& dct = dc_tables[h.comp[c].dc];
      const HuffDecoder& act = ac_tables[h.comp[c].ac];
      if (c > 0) upto[c - 1] = rd.offset(), upto_bit[c - 1] = rd.bit();
      int diff = 0;
      if (!read_dc(rd, dct, &diff)) return mismatch();
      new_dc[c] = x.dc[e0 * h.ncomp + c] + diff - prev[c];
      from[c] = rd.offset(), from_bit[c] = rd.bit();
      if (!skip_ac(rd, act)) return mismatch();
      for (int b = 1; b < h.comp[c].blocks; ++b)
        if (!block(rd, dct, act, &diff)) return mismatch();
    }
    if (!rd.within_data()) return mismatch();
    if (rd.offset() > end_off || (rd.offset() == end_off && rd.bit() > end_bit)) return mismatch();
    upto[h.ncomp - 1] = end_off, upto_bit[h.ncomp - 1] = end_bit;  // the last copy runs to the end
    for (int c = 0; c < h.ncomp; ++c) {
      const DcCode& code = enc[h.comp[c].dc];
      const int cat = dc_category(new_dc[c]);
      if (cat >= kDcCategories || code.len[cat] == 0) return mismatch();
      w.put(code.code[cat], code.len[cat]);
      w.put(uint32_t(new_dc[c] < 0 ? new_dc[c] - 1 : new_dc[c]), cat);
      copy_entropy_bits(data.data() + from[c], from_bit[c], unstuffed_bits(data, from[c], from_bit[c], upto[c], upto_bit[c]),
                        file_end, w);
    }
    for (int c = 0; c < h.ncomp; ++c) prev[c] = x.dc[e1 * h.ncomp + c];
  }
  uint8_t* p = w.finish();
  *p++ = 0xFF;
  *p++ = 0xD9;
  // Zeros after the end: libjpeg-turbo takes its fast Huffman path only while it has 512 bytes
  // per block of an MCU left in the buffer; with them, the window's last MCUs are fast too.
  std::memset(p, 0, kTailPadding);
  out.resize(size_t(p - out.data()) + kTailPadding);
  return win;
}

}  // namespace detail
}  // namespace hdl
