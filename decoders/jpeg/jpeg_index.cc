#include "decoders/jpeg/jpeg_index.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace hdl {
namespace detail {
namespace {

constexpr int kLookahead = 9;      // bits resolved by one table lookup
constexpr int kMultiBits = 11;     // AC codes plus their extra bits skipped by one lookup
constexpr int kDcCategories = 12;  // 8-bit JPEG: DC differences need 0..11 bits
constexpr size_t kTailPadding = 512 * 10;  // libjpeg-turbo's fast-path margin for 10 blocks

uint16_t be16(const uint8_t* p) { return uint16_t(p[0] << 8 | p[1]); }
inline uint64_t load_be64(const uint8_t* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  return __builtin_bswap64(w);
}

// True if MCUs [r0, r1) x [c0, c1) are a non-empty part of `g`.
bool inside_grid(const JpegMcuGrid& g, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  return 0 <= r0 && r0 < r1 && r1 <= g.mcus_y && 0 <= c0 && c0 < c1 && c1 <= g.mcus_x;
}


// True if any byte of `w` is 0xFF (a zero byte of ~w).
bool has_ff(uint64_t w) {
  const uint64_t inv = ~w;
  return ((inv - 0x0101010101010101ull) & ~inv & 0x8080808080808080ull) != 0;
}

// A Huffman table as the DHT segment gives it: code counts per length, symbols in code order.
struct HuffSpec {
  uint8_t bits[17] = {};  // bits[l]: codes of length l (1..16)
  std::vector<uint8_t> vals;
  bool defined = false;
};

// Canonical codes of `spec`: code and length per symbol position. False if the table is
// invalid (a code does not fit its length, or the all-ones code is used).
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

// Canonical decoding of the codes longer than a lookup table resolves.
struct LongCodes {
  int32_t maxcode[17];  // largest code of each length 1..16, -1 if none
  int32_t valoffset[17];  // symbol index = code + valoffset[length]
  uint8_t vals[256];

  // `codes`: canonical_codes(spec)'s.
  void set(const HuffSpec& spec, const std::vector<uint16_t>& codes) {
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

  bool build(const HuffSpec& spec, Skip skip = Skip::kNone) {
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

 private:
  // multi[x] from chains[b][x]: what the b-bit value x holds, a symbol then what its rest holds.
  void build_multi(const std::vector<uint16_t>& codes, const std::vector<uint8_t>& lens, const HuffSpec& spec,
                   bool chains_wanted) {
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
};

// Reads the entropy-coded data of a scan: removes the 0x00 after each 0xFF, stops at a marker
// (then feeds zeros, as libjpeg does, and remembers it overran), and can say where in the file
// (stuffed byte offset and bit) the next unread bit is.
class BitReader {
 public:
  BitReader(const uint8_t* data, size_t end, size_t pos) : d_(data), end_(end), pos_(pos) {}

  // Tops the buffer up to at least 57 bits.
  void refill() {
    if (pos_ + 8 <= end_ && !marker_) {
      const uint64_t w = load_be64(d_ + pos_);
      if (!has_ff(w)) {
        const int n = (64 - bits_) >> 3;
        buf_ |= n == 8 ? w : (w >> (64 - 8 * n)) << (64 - bits_ - 8 * n);
        for (int i = 0; i < n; ++i) ring_[(loaded_ + i) & 15] = uint32_t(pos_ + i);
        pos_ += n;
        loaded_ += n;
        real_ += n;
        bits_ += 8 * n;
        return;
      }
    }
    while (bits_ <= 56) {
      uint32_t b = 0;
      if (!marker_ && pos_ < end_) {
        b = d_[pos_];
        if (b == 0xFF) {
          if (pos_ + 1 < end_ && d_[pos_ + 1] == 0x00) {
            ring_[loaded_ & 15] = uint32_t(pos_);
            pos_ += 2;
            ++real_;
          } else {
            marker_ = true;
            b = 0;
          }
        } else {
          ring_[loaded_ & 15] = uint32_t(pos_);
          ++pos_;
          ++real_;
        }
      } else {
        marker_ = true;
      }
      buf_ |= uint64_t(b) << (56 - bits_);
      bits_ += 8;
      ++loaded_;
    }
  }

  int bits() const { return bits_; }
  uint64_t peek(int n) const { return buf_ >> (64 - n); }
  void consume(int n) {
    buf_ <<= n;
    bits_ -= n;
  }
  uint32_t get(int n) {
    uint32_t v = n ? uint32_t(peek(n)) : 0;
    consume(n);
    return v;
  }

  // Decodes one symbol (needs >= 16 buffered bits). Returns -1 for an invalid code; `*len`
  // gets the code length.
  int decode(const HuffDecoder& t, int* len) {
    const uint16_t e = t.lut[peek(kLookahead)];
    if (e) {
      *len = e >> 8;
      consume(*len);
      return e & 0xFF;
    }
    const int sym = t.long_codes.decode(uint32_t(peek(16)), kLookahead, len);
    if (sym >= 0) consume(*len);
    return sym;
  }

  // True if every bit consumed so far came from the file (not from zeros fed past a marker).
  bool within_data() const { return (loaded_ - real_) * 8 <= uint64_t(bits_); }
  // The stuffed file offset and bit (0..7) of the next unread bit; valid while within_data().
  size_t offset() const {
    const uint64_t u = loaded_ * 8 - uint64_t(bits_);
    if (u / 8 >= real_) return pos_;  // exactly at the end of the data
    return ring_[(u / 8) & 15];
  }
  int bit() const { return int((loaded_ * 8 - uint64_t(bits_)) & 7); }

 private:
  const uint8_t* d_;
  size_t end_;
  size_t pos_;
  uint64_t buf_ = 0;
  int bits_ = 0;
  uint64_t loaded_ = 0;  // bytes put into the buffer (zeros past a marker included)
  uint64_t real_ = 0;    // of which came from the file
  uint32_t ring_[16] = {};
  bool marker_ = false;
};

// Writes entropy-coded bits, stuffing a 0x00 after each 0xFF. Writes whole 8-byte words, so
// the buffer needs 8 bytes of room past the end.
class BitWriter {
 public:
  explicit BitWriter(uint8_t* out) : p_(out) {}
  void put(uint64_t v, int n) {  // n <= 56
    if (n == 0) return;
    acc_ = (acc_ << n) | (v & ((uint64_t(1) << n) - 1));
    n_ += n;
    const int k = n_ >> 3;  // whole bytes to write
    if (k == 0) return;
    n_ -= 8 * k;
    const uint64_t word = (acc_ >> n_) << (64 - 8 * k);  // the k bytes, left-aligned
    if (!has_ff(word)) {  // (its unused low bytes are zero, never 0xFF)
      const uint64_t be = __builtin_bswap64(word);
      std::memcpy(p_, &be, 8);
      p_ += k;
    } else {
      for (int i = 0; i < k; ++i) byte(uint8_t(word >> (56 - 8 * i)));
    }
  }
#if defined(__SSE2__)
  // Writes src[0..j) behind the pending bits, 16 bytes at a time, for the largest j <= max that
  // is a multiple of 16 and meets no 0xFF in the source (stuffing) or the output; returns j.
  // src[-1] must be readable (its value does not matter).
  size_t put_source_bytes(const uint8_t* src, size_t max) {
    const int t = n_;
    const __m128i keep_hi = _mm_set1_epi8(char((0xFF << (8 - t)) & 0xFF)), keep_lo = _mm_set1_epi8(char(0xFF >> t));
    const __m128i left = _mm_cvtsi32_si128(8 - t), right = _mm_cvtsi32_si128(t);
    const __m128i ff = _mm_set1_epi8(char(0xFF));
    size_t j = 0;
    // Byte 0 of the first `a` is the pending bits' byte (only its low t bits are used).
    const __m128i lane0 = _mm_cvtsi32_si128(0xFF), pending = _mm_cvtsi32_si128(int(acc_ & 0xFF));
    for (; j + 16 <= max; j += 16) {
      __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + j - 1));
      if (j == 0) a = _mm_or_si128(_mm_andnot_si128(lane0, a), pending);
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + j));
      if (_mm_movemask_epi8(_mm_cmpeq_epi8(b, ff))) break;
      // Per byte: (a << (8 - t)) | (b >> t), with 16-bit shifts masked back to bytes.
      const __m128i out = _mm_or_si128(_mm_and_si128(_mm_sll_epi16(a, left), keep_hi),
                                       _mm_and_si128(_mm_srl_epi16(b, right), keep_lo));
      if (_mm_movemask_epi8(_mm_cmpeq_epi8(out, ff))) break;
      _mm_storeu_si128(reinterpret_cast<__m128i*>(p_), out);
      p_ += 16;
    }
    if (j) acc_ = src[j - 1];
    return j;
  }
#endif

  // Pads with 1 bits to a byte boundary.
  uint8_t* finish() {
    if (n_ & 7) put((1u << (8 - (n_ & 7))) - 1, 8 - (n_ & 7));
    return p_;
  }

 private:
  void byte(uint8_t b) {
    *p_++ = b;
    if (b == 0xFF) *p_++ = 0x00;
  }

  uint8_t* p_;
  uint64_t acc_ = 0;
  int n_ = 0;  // bits in acc_ not yet written (< 8 between calls)
};

// Copies `nbits` bits of entropy-coded data starting at bit `bit` of *p (stuffed bytes, as in
// the file) to `w`: 16 bytes at a time (SSE2) or seven while no 0xFF is near, else a byte.
void copy_entropy_bits(const uint8_t* p, int bit, uint64_t nbits, const uint8_t* end, BitWriter& w) {
  while (nbits > 0) {
#if defined(__SSE2__)
    if (bit == 0 && nbits >= 8 * 32) {
      const size_t j = w.put_source_bytes(p, std::min<size_t>(nbits / 8, size_t(end - p)));
      p += j;
      nbits -= 8 * j;
      if (j) continue;
    }
#endif
    if (bit == 0 && nbits >= 56 && p + 8 <= end) {  // (a partial first byte goes alone, below)
      const uint64_t v = load_be64(p);
      if (!has_ff(v)) {
        w.put(v >> 8, 56);
        p += 7;
        nbits -= 56;
        continue;
      }
    }
    // One byte (its bits from `bit` on), skipping the stuffed zero after a 0xFF.
    const int avail = 8 - bit;
    const int take = int(std::min<uint64_t>(uint64_t(avail), nbits));
    w.put(uint64_t(*p & ((1u << avail) - 1)) >> (avail - take), take);
    nbits -= uint64_t(take);
    if (take < avail) break;
    p += (*p == 0xFF) ? 2 : 1;
    bit = 0;
  }
}

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

struct DcCode {
  uint16_t code[kDcCategories];
  uint8_t len[kDcCategories];
};

inline int dc_category(int v) { return v == 0 ? 0 : 32 - std::countl_zero(uint32_t(v < 0 ? -v : v)); }
inline int extend(uint32_t bits, int s) {
  return s == 0 ? 0 : (bits < (1u << (s - 1)) ? int(bits) - (1 << s) + 1 : int(bits));
}

// Reads a block's DC difference into `*diff`. False on an invalid code.
inline bool read_dc(BitReader& r, const HuffDecoder& dc, int* diff) {
  if (r.bits() < 32) r.refill();
  int len = 0;
  const int s = r.decode(dc, &len);
  if (s < 0 || s >= kDcCategories) return false;
  *diff = extend(uint32_t(r.get(s)), s);
  return true;
}

// Skips a block's AC coefficients exactly as libjpeg consumes them (same bits, even for odd
// runs past the 64th coefficient). False on an invalid code.
inline bool skip_ac(BitReader& r, const HuffDecoder& ac) {
  int k = 1;
  while (k < 64) {
    if (r.bits() < 32) r.refill();
    // Short symbols, several per lookup, while they stay inside the block: each is read with
    // k < 64, as libjpeg's loop reads it (an end of block only while k + advance < 64).
    if (const uint16_t e = ac.multi[r.peek(kMultiBits)]) {
      const int adv = (e >> 5) & 0xFF;
      const bool eob = (e >> 13) & 1;
      if (k + adv + eob <= 64) {
        r.consume(e & 31);
        if (eob) break;
        k += adv;
        continue;
      }
    }
    int len = 0;
    const int rs = r.decode(ac, &len);
    if (rs < 0) return false;
    const int run = rs >> 4, size = rs & 15;
    if (size) {
      k += run;
      r.consume(size);
    } else {
      if (run != 15) break;
      k += 15;
    }
    ++k;
  }
  return true;
}

inline bool block(BitReader& r, const HuffDecoder& dc, const HuffDecoder& ac, int* diff) {
  return read_dc(r, dc, diff) && skip_ac(r, ac);
}

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

// A cheap identity check of a file's bytes: its size and 16 samples of 64 bytes spread over it
// (the first and the last included), 8 bytes per multiply.
uint64_t fingerprint(std::span<const uint8_t> data) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ data.size();
  const size_t n = data.size();
  for (int k = 0; k < 16; ++k) {
    const size_t from = n <= 64 ? 0 : (n - 64) / 15 * size_t(k) + (k == 15 ? (n - 64) % 15 : 0);
    for (size_t i = from; i < std::min(n, from + 64); i += 8) {
      uint64_t w = 0;
      std::memcpy(&w, data.data() + i, std::min<size_t>(8, n - i));
      h = (h ^ w) * 0xFF51AFD7ED558CCDull;
      h ^= h >> 32;
    }
  }
  return h;
}

}  // namespace

struct JpegScanIndex {
  ParsedHeader head;
  int step = 1;
  int64_t per_row = 0;        // entries per MCU row
  std::vector<uint32_t> pos;  // per entry: (stuffed offset from scan start) << 3 | bit
  std::vector<int16_t> dc;    // per entry and component: the DC predictor before that MCU
  size_t bytes = 0;
};

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

namespace {

// Unstuffed bits from (a, abit) to (b, bbit), stuffed file offsets of data bytes.
uint64_t unstuffed_bits(std::span<const uint8_t> data, size_t a, int abit, size_t b, int bbit) {
  size_t stuffed = 0;
  for (const uint8_t* p = data.data() + a; (p = static_cast<const uint8_t*>(std::memchr(p, 0xFF, data.data() + b - p))); ++p)
    ++stuffed;
  return (uint64_t(b - a) - stuffed) * 8 + uint64_t(bbit) - uint64_t(abit);
}

// The index entry of MCU (row, col), col on the step grid or mcus_x (then the next row's first).
size_t entry_of(const JpegScanIndex& x, int64_t row, int64_t col) {
  return col >= x.head.grid.mcus_x ? size_t((row + 1) * x.per_row) : size_t(row * x.per_row + col / x.step);
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


// ---- JpegWindowEntropy ----

namespace {

constexpr int kFastBits = 11;  // code + value bits resolved by one lookup

// Zigzag position -> natural position, with 64 more entries: runs past the 64th coefficient
// land on 63 (libjpeg-turbo's jpeg_natural_order has 16 such entries), and so does an end of
// block, which the fast table encodes as a zero written 64 positions on (harmless: nothing was
// written at 63 before it, or the block would have ended there).
constexpr int16_t kNatural[128] = {
    0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,  12, 19, 26, 33, 40, 48, 41, 34, 27, 20,
    13, 6,  7,  14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45,
    38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
    63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
    63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63};

// A fast-table entry: bits to consume (0..63) | flags | advance << 8 | value << 16.
//  - plain: consume, k += advance (the run; 64 for an end of block), the value at k, k + 1;
//  - kValueBits: the value is the last `size` (the value field) of the bits to consume, the
//    code's and the value's, which did not fit in the lookup;
//  - kLongCode: the code is longer than kFastBits (or invalid): the slow path.
// (The count in the low 6 bits: a 64-bit shift by the entry itself shifts by the count.)
constexpr uint32_t kLongCode = 1u << 6, kValueBits = 1u << 7, kEndOfBlock = 64;
constexpr uint32_t fast_entry(int consume, uint32_t flags, int advance, int value) {
  return uint32_t(consume) | flags | uint32_t(advance) << 8 | uint32_t(uint16_t(int16_t(value))) << 16;
}

}  // namespace

// Decoding tables for one Huffman table of a file: an entry per kFastBits-bit prefix that
// resolves a code of up to kFastBits bits, with its value bits when they fit too; canonical
// limits for longer codes. DC tables: the symbol is the value's size; AC: run << 4 | size.
struct JpegWindowEntropy::Tables {
  bool ac = false;
  uint8_t bits[17] = {};
  std::vector<uint8_t> vals;
  uint32_t fast[1 << kFastBits];
  LongCodes long_codes;

  bool same(const HuffSpec& spec, bool is_ac) const {
    return ac == is_ac && vals == spec.vals && std::memcmp(bits, spec.bits, sizeof(bits)) == 0;
  }

  bool build(const HuffSpec& spec, bool is_ac) {
    ac = is_ac;
    std::memcpy(bits, spec.bits, sizeof(bits));
    vals = spec.vals;
    std::vector<uint16_t> codes;
    std::vector<uint8_t> lens;
    if (!spec.defined || !canonical_codes(spec, &codes, &lens)) return false;
    std::fill(std::begin(fast), std::end(fast), kLongCode);
    long_codes.set(spec, codes);
    for (size_t i = 0; i < codes.size(); ++i) {
      const int len = lens[i];
      if (len > kFastBits) continue;
      const int sym = spec.vals[i];
      const int run = ac ? sym >> 4 : 0, size = ac ? sym & 15 : sym;
      if (!ac && size >= kDcCategories) continue;  // left to the slow path, which refuses it
      const int free = kFastBits - len;
      const uint32_t lo = uint32_t(codes[i]) << free;
      for (uint32_t j = 0; j < (1u << free); ++j) {
        uint32_t e;
        if (ac && size == 0) {
          e = run == 15 ? fast_entry(len, 0, 15, 0) : fast_entry(len, 0, kEndOfBlock, 0);
        } else if (size == 0) {
          e = fast_entry(len, 0, 0, 0);
        } else if (len + size <= kFastBits) {
          const uint32_t v = (j >> (free - size)) & ((1u << size) - 1);
          e = fast_entry(len + size, 0, run, extend(v, size));
        } else {
          e = fast_entry(len + size, kValueBits, run, size);
        }
        fast[lo | j] = e;
      }
    }
    return true;
  }

  // A code longer than kFastBits bits at the top of `buf`: its symbol and length, or -1.
  int slow(uint64_t buf, int* len) const { return long_codes.decode(uint32_t(buf >> 48), kFastBits, len); }
};

JpegWindowEntropy::JpegWindowEntropy() = default;
JpegWindowEntropy::~JpegWindowEntropy() = default;

Status JpegWindowEntropy::start(std::span<const uint8_t> data, const JpegScanIndex& x, const JpegWindowPlan& plan) {
  const ParsedHeader& h = x.head;
  if (!inside_grid(h.grid, plan.r0, plan.r1, plan.c0, plan.c1))
    return Status::invalid_argument("window outside the MCU grid");
  data_ = data.data();
  size_ = data.size();
  index_ = &x;
  plan_ = plan;
  // Tables: the file's own (DC as the file defines them, as libjpeg decodes the file), built
  // once per distinct table and kept for the next files (most share their encoder's tables).
  auto tables_for = [&](const HuffSpec& spec, bool ac) -> const Tables* {
    for (size_t i = 0; i < cache_.size(); ++i) {
      if (cache_[i]->same(spec, ac)) {
        std::rotate(cache_.begin(), cache_.begin() + ptrdiff_t(i), cache_.begin() + ptrdiff_t(i) + 1);
        return cache_[0].get();
      }
    }
    auto t = std::make_unique<Tables>();
    if (!t->build(spec, ac)) return nullptr;
    // Kept: more than the 6 tables a file can use, so this start's tables stay (the most recent).
    constexpr size_t kKept = 8;
    if (cache_.size() == kKept) cache_.pop_back();
    cache_.insert(cache_.begin(), std::move(t));
    return cache_[0].get();
  };
  blocks_ = 0;
  for (int c = 0; c < h.ncomp; ++c) {
    // (AC first: a DC lookup after it keeps both at the front of the cache.)
    ac_[c] = tables_for(h.ac[h.comp[c].ac], true);
    dc_[c] = tables_for(h.dc_file[h.comp[c].dc], false);
    if (!dc_[c] || !ac_[c]) return Status::invalid_data("invalid Huffman table");
    for (int b = 0; b < h.comp[c].blocks; ++b) comp_of_block_[blocks_++] = c;
  }
  cols_ = plan.c1 - plan.c0;
  row_ = plan.r0 - 1;
  col_ = cols_;
  slot_row_[0] = slot_row_[1] = -1;
  return Status::ok();
}

namespace {

// One window row's bit stream being decoded, and where it is in the row. Kept in locals that
// the compiler holds in registers: nothing takes their address.
struct RowStream {
  uint64_t buf = 0;              // left-aligned; the bits below n are zero or the next bits
  int n = 0;                     // valid bits in buf
  const uint8_t* p = nullptr;    // next byte to load (of the unstuffed row)
  int k = 0;                     // the block's next coefficient (zigzag); 0: its DC
  int16_t* blk = nullptr;        // the block's 64 coefficients
  const uint32_t* ac = nullptr;  // the block's AC fast table
  int bi = 0;                    // the block's place in its MCU
  int64_t left = 0;              // blocks left in the row; 0: done
};

constexpr size_t kRowPadding = 16;  // zeros after an unstuffed row: loads of 8 bytes stay inside

}  // namespace

// Copies row `row`'s entropy-coded bytes, from its entry point to the next MCU's, into
// `out` without the 0x00 stuffed after each 0xFF, then kRowPadding zeros (what libjpeg feeds
// past the data). `*want_bits`: the bits from the first byte's first bit to where the row's
// last MCU ends. False if a marker sits inside the row (the data is not the index's).
bool JpegWindowEntropy::unstuff_row(int64_t row, std::vector<uint8_t>& out, uint64_t* want_bits, int* skip) const {
  const JpegScanIndex& x = *index_;
  const size_t e0 = entry_of(x, row, plan_.c0), e1 = entry_of(x, row, plan_.c1);
  const size_t off0 = x.head.scan_start + (x.pos[e0] >> 3), off1 = x.head.scan_start + (x.pos[e1] >> 3);
  const int bit1 = int(x.pos[e1] & 7);
  const size_t stop = bit1 ? off1 + 1 : off1;  // the last byte holding bits of the row
  if (stop > size_ || off0 > off1) return false;
  if (out.size() < stop - off0 + kRowPadding) out.resize(stop - off0 + kRowPadding);
  uint8_t* o = out.data();
  size_t i = off0;
  while (i < stop) {
    const auto* ff = static_cast<const uint8_t*>(std::memchr(data_ + i, 0xFF, stop - i));
    const size_t upto = ff ? size_t(ff - data_) + 1 : stop;  // through the 0xFF
    std::memcpy(o, data_ + i, upto - i);
    o += upto - i;
    i = upto;
    if (ff) {
      if (i >= size_ || data_[i] != 0x00) return false;  // a marker inside the row
      ++i;
    }
  }
  const size_t bytes = size_t(o - out.data());
  std::memset(o, 0, kRowPadding);
  *want_bits = uint64_t(bytes - (bit1 ? 1 : 0)) * 8 + uint64_t(bit1);
  *skip = int(x.pos[e0] & 7);
  return true;
}

// Decodes rows `ra` and `rb` (-1: none) of the window into slots 0 and 1. The two rows are
// independent bit streams (each starts at its own entry point with its recorded predictors),
// decoded one symbol each in turn: a symbol's decoding is a chain of dependent steps (shift,
// table lookup, shift by what it says), so one stream leaves most of the core idle; two chains
// side by side overlap. Each row is unstuffed first, so the bit reader's refill is a plain
// 8-byte load.
bool JpegWindowEntropy::decode_rows(int64_t ra, int64_t rb) {
  const JpegScanIndex& x = *index_;
  const int ncomp = x.head.ncomp;
  const size_t row_coefs = size_t(cols_) * size_t(blocks_) * 64;
  if (rows_.size() < 2 * row_coefs) rows_.resize(2 * row_coefs);
  int pred[2][3] = {};
  uint64_t want[2] = {};
  const uint8_t* limit[2] = {};  // loads from at most here (the padding): a bad row cannot run off
  RowStream a, b;
  auto begin = [&](RowStream& st, int slot, int64_t row) {
    slot_row_[slot] = row;
    if (row < 0) return true;
    int skip = 0;
    if (!unstuff_row(row, unstuffed_[slot], &want[slot], &skip)) return false;
    const size_t e0 = entry_of(x, row, plan_.c0);
    for (int c = 0; c < ncomp; ++c) pred[slot][c] = x.dc[e0 * size_t(ncomp) + size_t(c)];
    st.p = unstuffed_[slot].data();
    // A valid row's reads end within 8 bytes of its last bit; past that only a bad row goes.
    limit[slot] = st.p + (want[slot] + 7) / 8 + 8;
    st.buf = load_be64(st.p) << skip;
    st.p += 7;
    st.n = 56 - skip;
    st.left = cols_ * blocks_;
    st.blk = rows_.data() + size_t(slot) * row_coefs;
    std::memset(st.blk, 0, row_coefs * sizeof(int16_t));
    return true;
  };
  if (!begin(a, 0, ra) || !begin(b, 1, rb)) return false;
  const uint8_t* const start[2] = {unstuffed_[0].data(), unstuffed_[1].data()};

  // One symbol of `st`: a block's DC, or one of its AC codes. False on an invalid code or DC.
  auto step = [&](RowStream& st, int slot) __attribute__((always_inline)) {
    if (st.n < 32) {
      // Whole bytes behind the n valid bits; the partial next byte's bits sit below them and
      // are loaded again, unchanged, by the next refill.
      st.buf |= load_be64(st.p) >> st.n;
      st.p += (63 - st.n) >> 3;
      st.n |= 56;
      if (st.p > limit[slot]) st.p = limit[slot];  // past the row: zeros (caught at its end)
    }
    auto consume = [&](int bits) {
      st.buf <<= bits;
      st.n -= bits;
    };
    auto value = [&](int size) {  // the next `size` (1..15) bits as a signed coefficient
      const int v = extend(uint32_t(st.buf >> (64 - size)), size);
      consume(size);
      return v;
    };
    auto code_and_value = [&](uint32_t e) {  // a kValueBits entry: both consumed at once
      const int total = int(e & 63), size = int(e >> 16);
      const uint32_t raw = uint32_t(st.buf >> (64 - total)) & ((1u << size) - 1);
      consume(total);
      return extend(raw, size);
    };
    if (st.k == 0) [[unlikely]] {  // DC
      const int c = comp_of_block_[st.bi];
      const Tables& t = *dc_[c];
      const uint32_t e = t.fast[st.buf >> (64 - kFastBits)];
      int diff;
      if (!(e & (kLongCode | kValueBits))) {
        consume(int(e & 63));
        diff = int16_t(e >> 16);
      } else if (e & kValueBits) {
        diff = code_and_value(e);
      } else {
        int len = 0;
        const int sym = t.slow(st.buf, &len);
        if (sym < 0 || sym >= kDcCategories) return false;
        consume(len);
        diff = sym ? value(sym) : 0;
      }
      int& pr = pred[slot][c];
      pr += diff;
      if (pr < -32768 || pr > 32767) return false;
      st.blk[0] = int16_t(pr);
      st.ac = ac_[c]->fast;
      st.k = 1;
      return true;
    }
    // AC: libjpeg's loop (k += run, a value at natural order k, k + 1; ZRL: k += 16; any other
    // symbol of size 0 ends the block).
    const uint32_t e = st.ac[st.buf >> (64 - kFastBits)];
    if (!(e & (kLongCode | kValueBits))) [[likely]] {  // code and value in one lookup
      consume(int(e & 63));
      st.k += int(e >> 8) & 127;
      st.blk[kNatural[st.k]] = int16_t(e >> 16);
      ++st.k;
    } else if (e & kValueBits) {
      st.k += int(e >> 8) & 127;
      st.blk[kNatural[st.k]] = int16_t(code_and_value(e));
      ++st.k;
    } else {
      int len = 0;
      const int sym = ac_[comp_of_block_[st.bi]]->slow(st.buf, &len);
      if (sym < 0) return false;
      consume(len);
      const int run = sym >> 4, size = sym & 15;
      if (size) {
        st.k += run;
        st.blk[kNatural[st.k]] = int16_t(value(size));
        ++st.k;
      } else {
        st.k = run == 15 ? st.k + 16 : 64;
      }
    }
    if (st.k >= 64) [[unlikely]] {  // the block is done
      st.k = 0;
      st.blk += 64;
      if (++st.bi == blocks_) st.bi = 0;
      --st.left;
    }
    return true;
  };
  while (a.left > 0 && b.left > 0)
    if (!step(a, 0) || !step(b, 1)) return false;
  while (a.left > 0)
    if (!step(a, 0)) return false;
  while (b.left > 0)
    if (!step(b, 1)) return false;
  // Each row must end where the index says the next MCU starts.
  if (ra >= 0 && uint64_t(a.p - start[0]) * 8 - uint64_t(a.n) != want[0]) return false;
  if (rb >= 0 && uint64_t(b.p - start[1]) * 8 - uint64_t(b.n) != want[1]) return false;
  return true;
}

bool JpegWindowEntropy::decode_mcu(int16_t* const* blocks) {
  if (col_ == cols_) {  // the next row: decoded already, or decoded now with the one after it
    if (++row_ >= plan_.r1) return false;
    col_ = 0;
    if (slot_row_[0] == row_) {
      slot_ = 0;
    } else if (slot_row_[1] == row_) {
      slot_ = 1;
    } else {
      if (!decode_rows(row_, row_ + 1 < plan_.r1 ? row_ + 1 : -1)) {
        slot_row_[0] = slot_row_[1] = -1;
        col_ = cols_;
        row_ = plan_.r1;  // nothing more
        return false;
      }
      slot_ = 0;
    }
  }
  if (blocks) {
    const int16_t* from = rows_.data() + (size_t(slot_) * size_t(cols_) + size_t(col_)) * size_t(blocks_) * 64;
    for (int b = 0; b < blocks_; ++b) std::memcpy(blocks[b], from + b * 64, 64 * sizeof(int16_t));
  }
  ++col_;
  return true;
}

}  // namespace detail

// ---- JpegIndexCache ----

JpegIndexCache::JpegIndexCache(size_t budget_bytes) : budget_(budget_bytes), shards_(new Shard[kShards]) {}
JpegIndexCache::~JpegIndexCache() = default;

std::shared_ptr<const detail::JpegScanIndex> JpegIndexCache::find(uint64_t key, std::span<const uint8_t> data,
                                                                  bool* known_unindexable) const {
  *known_unindexable = false;
  Shard& s = shards_[key % kShards];
  std::lock_guard lock(s.mutex);
  auto it = s.map.find(key);
  if (it == s.map.end()) return nullptr;
  if (it->second.size != data.size() || it->second.fingerprint != detail::fingerprint(data)) return nullptr;
  if (!it->second.index) *known_unindexable = true;
  return it->second.index;
}

void JpegIndexCache::insert(uint64_t key, std::span<const uint8_t> data,
                            std::shared_ptr<const detail::JpegScanIndex> index) {
  if (index) {
    builds_.fetch_add(1, std::memory_order_relaxed);
    const int64_t add = int64_t(detail::jpeg_index_bytes(*index));
    if (bytes_.fetch_add(add, std::memory_order_relaxed) + add > int64_t(budget_)) {
      bytes_.fetch_sub(add, std::memory_order_relaxed);
      over_budget_.fetch_add(1, std::memory_order_relaxed);
      index.reset();  // remembered as unindexable: not rebuilt (and dropped) on every decode
    }
  }
  Entry entry{data.size(), detail::fingerprint(data), std::move(index)};
  Shard& s = shards_[key % kShards];
  std::lock_guard lock(s.mutex);
  auto [it, inserted] = s.map.try_emplace(key, entry);
  if (!inserted) {
    // A replaced file (other bytes) takes the slot; a race on the same bytes keeps the first.
    const bool same = it->second.size == entry.size && it->second.fingerprint == entry.fingerprint;
    if (same) {
      if (entry.index) bytes_.fetch_sub(int64_t(detail::jpeg_index_bytes(*entry.index)), std::memory_order_relaxed);
      return;
    }
    if (it->second.index) {
      bytes_.fetch_sub(int64_t(detail::jpeg_index_bytes(*it->second.index)), std::memory_order_relaxed);
      entries_.fetch_sub(1, std::memory_order_relaxed);
    } else {
      unindexable_.fetch_sub(1, std::memory_order_relaxed);
    }
    it->second = entry;
  }
  (entry.index ? entries_ : unindexable_).fetch_add(1, std::memory_order_relaxed);
}

JpegIndexCache::Stats JpegIndexCache::stats() const {
  Stats s;
  s.entries = entries_.load();
  s.unindexable = unindexable_.load();
  s.bytes = bytes_.load();
  s.hits = hits_.load();
  s.builds = builds_.load();
  s.over_budget = over_budget_.load();
  s.fallbacks = fallbacks_.load();
  return s;
}

}  // namespace hdl
