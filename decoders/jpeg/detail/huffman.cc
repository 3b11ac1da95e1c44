// Building Huffman decoding tables (decoders/jpeg/detail/huffman.h): once per file or table,
// outside the decoding loops.
#include "decoders/jpeg/detail/huffman.h"

#include <algorithm>
#include <cstring>
#include <iterator>

namespace hdl::detail::jpeg {

bool canonical_codes(const HuffSpec& spec, std::vector<uint16_t>* codes, std::vector<uint8_t>* lens) {
  codes->clear();
  lens->clear();
  uint32_t code = 0;
  for (int l = 1; l <= 16; ++l) {
    for (int i = 0; i < spec.bits[l]; ++i) {
      codes->push_back(uint16_t(code));
      lens->push_back(uint8_t(l));
      ++code;
    }
    if (code >= (1u << l)) return false;  // too many codes, or the reserved all-ones code used
    code <<= 1;
  }
  return codes->size() == spec.vals.size();
}

void LongCodes::set(const HuffSpec& spec, const std::vector<uint16_t>& codes) {
  std::fill(std::begin(maxcode), std::end(maxcode), -1);
  std::copy(spec.vals.begin(), spec.vals.end(), vals);
  size_t k = 0;
  for (int l = 1; l <= 16; ++l) {
    if (spec.bits[l] == 0) continue;
    valoffset[l] = int32_t(k) - int32_t(codes[k]);
    maxcode[l] = codes[k + spec.bits[l] - 1];
    k += spec.bits[l];
  }
}

bool HuffDecoder::build(const HuffSpec& spec, Skip skip) {
  std::vector<uint16_t> codes;
  std::vector<uint8_t> lens;
  if (!spec.defined || !canonical_codes(spec, &codes, &lens)) return false;
  std::memset(lut, 0, sizeof(lut));
  long_codes.set(spec, codes);
  for (size_t k = 0; k < codes.size(); ++k) {
    if (lens[k] > kLookahead) continue;
    const int shift = kLookahead - lens[k];
    for (int j = 0; j < (1 << shift); ++j) lut[(codes[k] << shift) | j] = uint16_t(lens[k] << 8 | spec.vals[k]);
  }
  if (skip != Skip::kNone) build_multi(codes, lens, spec, skip == Skip::kChains);
  return true;
}

void HuffDecoder::build_multi(const std::vector<uint16_t>& codes, const std::vector<uint8_t>& lens,
                              const HuffSpec& spec, bool chains_wanted) {
  constexpr int B = kMultiBits;
  if (!multi) multi.reset(new uint16_t[1 << B]);
  if (!chains_wanted) {  // one symbol per entry
    std::memset(multi.get(), 0, sizeof(uint16_t) << B);
    for (size_t k = 0; k < codes.size(); ++k) {
      const int len = lens[k], run = spec.vals[k] >> 4, size = spec.vals[k] & 15;
      const bool eob = size == 0 && run != 15;
      const int used = eob ? len : len + size;
      if (used > B) continue;
      const uint16_t e = uint16_t(used | (eob ? 1 << 13 : (size ? run + 1 : 16) << 5));
      const uint32_t lo = uint32_t(codes[k]) << (B - len);
      for (uint32_t j = 0; j < (1u << (B - len)); ++j) multi[lo | j] = e;
    }
    return;
  }
  uint16_t first[1 << B] = {};  // (length << 8 | symbol) of the code a B-bit value starts with
  for (size_t k = 0; k < codes.size(); ++k) {
    if (lens[k] > B) continue;
    const uint32_t lo = uint32_t(codes[k]) << (B - lens[k]);
    for (uint32_t j = 0; j < (1u << (B - lens[k])); ++j) first[lo | j] = uint16_t(lens[k] << 8 | spec.vals[k]);
  }
  uint16_t chains[(2 << B) - 1];  // chains for b bits at offset 2^b - 1
  chains[0] = 0;                  // b = 0: nothing
  for (int b = 1; b <= B; ++b) {
    uint16_t* t = chains + (1 << b) - 1;
    for (uint32_t x = 0; x < (1u << b); ++x) {
      const uint16_t f = first[x << (B - b)];
      const int len = f >> 8, run = (f >> 4) & 15, size = f & 15;
      t[x] = 0;
      if (f == 0 || len > b) continue;
      if (size == 0 && run != 15) {  // end of block
        t[x] = uint16_t(len | 1 << 13);
        continue;
      }
      const int used = len + size;
      if (used > b) continue;
      const int rest_bits = b - used;
      const uint16_t rest = chains[(1 << rest_bits) - 1 + (x & ((1u << rest_bits) - 1))];
      const int adv = (size ? run + 1 : 16) + ((rest >> 5) & 0xFF);
      t[x] = uint16_t((used + (rest & 31)) | adv << 5 | (rest & (1 << 13)));
    }
  }
  std::memcpy(multi.get(), chains + (1 << B) - 1, sizeof(uint16_t) << B);
}

}  // namespace hdl::detail::jpeg
