// The index pass (decoders/jpeg/jpeg_index.h): build_jpeg_index parses the file's markers
// (detail/markers.h), then Huffman-decodes every MCU once (detail/bit_io.h: DC differences read,
// AC coefficients skipped), recording each entry's bit position and DC predictors in a
// JpegScanIndex (detail/scan_index.h).
#include "decoders/jpeg/jpeg_index.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "decoders/jpeg/detail/bit_io.h"
#include "decoders/jpeg/detail/huffman.h"
#include "decoders/jpeg/detail/markers.h"
#include "decoders/jpeg/detail/scan_index.h"

namespace hdl {
namespace detail {

using jpeg::BitReader;
using jpeg::block;
using jpeg::HuffDecoder;
using jpeg::HuffSpec;
using jpeg::ParsedHeader;
using jpeg::parse_header;

namespace {

// True if a marker follows `from` in the file: a 0xFF (after any 0xFF fill bytes) followed by a
// byte other than 0x00, inside the data. libjpeg's bit reader stops at a marker; without one
// it runs into the end of the file.
bool marker_follows(std::span<const uint8_t> data, size_t from) {
  const uint8_t* p = data.data() + std::min(from, data.size());
  const uint8_t* const end = data.data() + data.size();
  while ((p = static_cast<const uint8_t*>(std::memchr(p, 0xFF, size_t(end - p))))) {
    while (p < end && *p == 0xFF) ++p;
    if (p == end) return false;
    if (*p != 0x00) return true;
  }
  return false;
}

}  // namespace

const JpegMcuGrid& jpeg_index_grid(const JpegScanIndex& index) { return index.head.grid; }
size_t jpeg_index_bytes(const JpegScanIndex& index) { return index.bytes; }
int jpeg_index_column_step(const JpegScanIndex& index) { return index.step; }

Result<std::shared_ptr<const JpegScanIndex>> build_jpeg_index(std::span<const uint8_t> data, size_t max_bytes) {
  if (data.size() >= (size_t(1) << 29)) return Status::unsupported("file too large to index");
  HDL_ASSIGN_OR_RETURN(ParsedHeader head, parse_header(data));
  auto index = std::make_shared<JpegScanIndex>();
  JpegScanIndex& x = *index;
  x.head = std::move(head);
  const ParsedHeader& h = x.head;
  // Memory: the fixed part, then per entry a position and one predictor per component.
  size_t fixed = sizeof(JpegScanIndex) + h.header.size();
  for (const HuffSpec* t : {h.dc, h.ac, h.dc_file})
    for (int k = 0; k < 4; ++k) fixed += t[k].vals.size();
  const size_t per_entry = sizeof(uint32_t) + sizeof(int16_t) * size_t(h.ncomp);
  auto bytes_for = [&](int64_t step) {
    return fixed + per_entry * size_t(h.grid.mcus_y * ((h.grid.mcus_x + step - 1) / step) + 1);
  };
  x.step = 1;
  while (x.step < h.grid.mcus_x && bytes_for(x.step) > max_bytes) ++x.step;
  x.per_row = (h.grid.mcus_x + x.step - 1) / x.step;
  const size_t entries = size_t(x.per_row * h.grid.mcus_y + 1);
  x.pos.resize(entries);
  x.dc.resize(entries * h.ncomp);

  HuffDecoder dc[3], ac[3];
  for (int c = 0; c < h.ncomp; ++c)
    if (!dc[c].build(h.dc_file[h.comp[c].dc]) || !ac[c].build(h.ac[h.comp[c].ac], HuffDecoder::Skip::kChains))
      return Status::invalid_data("invalid Huffman table");

  BitReader r(data.data(), data.size(), h.scan_start);
  int pred[3] = {};
  size_t e = 0;
  auto record = [&] {
    x.pos[e] = uint32_t((r.offset() - h.scan_start) << 3 | size_t(r.bit()));
    for (int c = 0; c < h.ncomp; ++c) x.dc[e * h.ncomp + c] = int16_t(pred[c]);
    ++e;
  };
  r.refill();
  for (int64_t my = 0; my < h.grid.mcus_y; ++my) {
    for (int64_t mx = 0; mx < h.grid.mcus_x; ++mx) {
      if (mx % x.step == 0) record();
      for (int c = 0; c < h.ncomp; ++c) {
        for (int b = 0; b < h.comp[c].blocks; ++b) {
          int diff = 0;
          if (!block(r, dc[c], ac[c], &diff))
            return Status::invalid_data("invalid Huffman code");
          pred[c] += diff;
          if (pred[c] < -32768 || pred[c] > 32767) return Status::invalid_data("DC out of range");
        }
      }
      if (!r.within_data()) return Status::invalid_data("entropy-coded data ends early");
    }
  }
  // libjpeg reads ahead of the bits it needs; where the scan runs to the end of the file with
  // no marker after it (EOI cut off), it reaches the end while decoding the last MCU row and
  // warns "Premature end of JPEG file", which fails a plain decode of the bottom rows. A window
  // JPEG ends with EOI and would decode: such a file is not indexed, so both paths agree.
  if (!marker_follows(data, r.offset())) return Status::invalid_data("entropy-coded data runs to the end of the file");
  record();
  x.bytes = bytes_for(x.step);
  return std::shared_ptr<const JpegScanIndex>(std::move(index));
}

}  // namespace detail
}  // namespace hdl
