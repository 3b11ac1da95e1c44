// Huffman tables of a baseline JPEG (private to decoders/jpeg/).
//
// In: a table as a DHT segment gives it (HuffSpec: code counts per length, symbols in code
// order). Out: its canonical codes (canonical_codes), and HuffDecoder's decoding tables: a
// kLookahead-bit lookup for short codes, LongCodes' canonical limits for the rest, and for AC
// tables a kMultiBits lookup that skips whole runs of coefficients (the index pass and the window
// writer only skip AC coefficients; JpegWindowEntropy has tables of its own that decode them).
// Failures: an invalid table (too many codes for their lengths, the all-ones code used, counts
// that do not match the symbols): canonical_codes and build() return false. A code that no table
// entry matches: LongCodes::decode returns -1.
//
// LongCodes::decode and the lookups are inline, for the decoding loops that use them (bit_io.h,
// window_entropy.cc); building tables, once per file or table, is in huffman.cc.
//
// Thread safety: a table is written by build() and only read after that; share it read-only.
#pragma once

#include <bit>
#include <cstdint>
#include <memory>
#include <vector>

namespace hdl::detail::jpeg {

constexpr int kLookahead = 9;      // bits resolved by one table lookup
constexpr int kMultiBits = 11;     // AC codes plus their extra bits skipped by one lookup
constexpr int kDcCategories = 12;  // 8-bit JPEG: DC differences need 0..11 bits

// A Huffman table as the DHT segment gives it: code counts per length, symbols in code order.
struct HuffSpec {
  uint8_t bits[17] = {};  // bits[l]: codes of length l (1..16)
  std::vector<uint8_t> vals;
  bool defined = false;
};

// Canonical codes of `spec`: code and length per symbol position. False if the table is
// invalid (a code does not fit its length, or the all-ones code is used).
bool canonical_codes(const HuffSpec& spec, std::vector<uint16_t>* codes, std::vector<uint8_t>* lens);

// Canonical decoding of the codes longer than a lookup table resolves.
struct LongCodes {
  int32_t maxcode[17];  // largest code of each length 1..16, -1 if none
  int32_t valoffset[17];  // symbol index = code + valoffset[length]
  uint8_t vals[256];

  // `codes`: canonical_codes(spec)'s.
  void set(const HuffSpec& spec, const std::vector<uint16_t>& codes);
  // The symbol of the code at the top of the 16 bits `p`, known to be longer than `shorter`
  // bits, and its length; -1 if no code matches.
  int decode(uint32_t p, int shorter, int* len) const {
    for (int l = shorter + 1; l <= 16; ++l) {
      const int32_t code = int32_t(p >> (16 - l));
      if (code <= maxcode[l]) {
        *len = l;
        return vals[(code + valoffset[l]) & 0xFF];
      }
    }
    return -1;
  }
};

// Decoding tables: a kLookahead-bit lookup for short codes, canonical limits for the rest.
struct HuffDecoder {
  uint16_t lut[1 << kLookahead];  // (length << 8) | symbol; 0: longer code
  LongCodes long_codes;
  // AC tables, for skipping coefficients: the run of whole symbols (codes and their extra
  // bits) that the next kMultiBits bits hold, as total bits | coefficients advanced << 5 |
  // ends with an end of block << 13; 0: the first symbol does not fit. kChains: as many
  // symbols as fit (the index pass: one table per file, read for every block); kSingle: the
  // first symbol only, a tenth of the building (a window JPEG parses one MCU per row).
  enum class Skip { kNone, kSingle, kChains };
  std::unique_ptr<uint16_t[]> multi;

  bool build(const HuffSpec& spec, Skip skip = Skip::kNone);

 private:
  // multi[x] from chains[b][x]: what the b-bit value x holds, a symbol then what its rest holds.
  void build_multi(const std::vector<uint16_t>& codes, const std::vector<uint8_t>& lens, const HuffSpec& spec,
                   bool chains_wanted);
};

// A DC difference's magnitude category (the bits its value takes); `s` value bits as the
// signed value they encode.
inline int dc_category(int v) { return v == 0 ? 0 : 32 - std::countl_zero(uint32_t(v < 0 ? -v : v)); }
inline int extend(uint32_t bits, int s) {
  return s == 0 ? 0 : (bits < (1u << (s - 1)) ? int(bits) - (1 << s) + 1 : int(bits));
}

}  // namespace hdl::detail::jpeg
