// The markers of a JPEG up to its first scan, for the entry-point index (private to
// decoders/jpeg/).
//
// parse_header checks that a file is of the kind the index handles (sequential Huffman, 8-bit,
// 1 or 3 components, one interleaved scan, no restart interval, no marker libjpeg could read
// otherwise than this parser) and gives, as ParsedHeader: the MCU grid, the scan's components
// and their table numbers, the Huffman tables (as the file defines them, and with the DC tables
// completed by complete_dc_table), the header of window JPEGs (SOI, JFIF/Adobe markers,
// quantisation tables, frame header, Huffman tables, scan header) and where the entropy-coded
// data starts. In: the whole file. Failures: kInvalidData for damaged markers ("not a JPEG",
// "bad marker", "truncated marker", "bad DHT", "scan before frame", "undefined Huffman table",
// "too many blocks per MCU"); kUnsupported for files of another kind ("not 8-bit",
// "components", "restart interval", "not a baseline Huffman JPEG", "unexpected marker", ...).
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "decoders/jpeg/detail/huffman.h"
#include "decoders/jpeg/jpeg_index.h"
#include "media/status.h"

namespace hdl::detail::jpeg {

struct ScanComp {
  int blocks = 1;  // blocks per MCU
  int dc = 0, ac = 0;  // table numbers
};

// The markers of a file up to its first scan, checked and turned into the header of window
// JPEGs: SOI, JFIF/Adobe markers, quantisation tables, the frame header (size patched per
// window), Huffman tables with complete DC tables, and the scan header.
struct ParsedHeader {
  JpegMcuGrid grid;
  int ncomp = 0;
  ScanComp comp[3];
  HuffSpec dc[4], ac[4];  // as written to window JPEGs: DC tables extended
  // The DC tables as the file defines them, which are what libjpeg decodes the file with: a code
  // that only the extension defines is a corrupt code in the file (libjpeg-turbo's fast path
  // reads it silently as a zero difference), so the index pass must reject it, not read it.
  HuffSpec dc_file[4];
  std::vector<uint8_t> header;
  size_t sof_size_at = 0;  // offset in header of the frame's height field
  size_t scan_start = 0;   // file offset of the entropy-coded data
};

// Parses `data`'s markers up to its first scan (see above).
Result<ParsedHeader> parse_header(std::span<const uint8_t> data);

}  // namespace hdl::detail::jpeg
