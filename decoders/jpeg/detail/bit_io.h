// Bit I/O over a JPEG's entropy-coded data (private to decoders/jpeg/).
//
// BitReader reads a scan's bytes as libjpeg does: the 0x00 stuffed after each 0xFF removed, and
// zeros fed once it meets a marker or the end of the data; for any bit not yet read it says
// where that bit sits in the file (stuffed byte offset and bit), which is what an index entry
// records. On it, read_dc / skip_ac / block read a block's symbols with HuffDecoder tables
// (huffman.h) as libjpeg consumes them. BitWriter writes bits with a 0x00 stuffed after each
// 0xFF; copy_entropy_bits copies a run of a file's entropy-coded bits through it, as they are.
// In: the file's bytes and positions in them. Out: bits, symbols, or bytes written into a buffer
// the caller sized (8 bytes of room past the end). Failures: an invalid code (decode returns -1,
// read_dc / skip_ac / block false); a reader that ran past the data says so (within_data()),
// and its callers (the index pass, the window writer) check.
//
// Everything here is inline: the index pass and the window writer call it for every symbol, and
// it must stay inlined into their loops (as when all of this was one file).
//
// Thread safety: plain values; a reader or writer is used by one thread.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "decoders/jpeg/detail/huffman.h"

namespace hdl::detail::jpeg {

inline uint64_t load_be64(const uint8_t* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  return __builtin_bswap64(w);
}

// True if any byte of `w` is 0xFF (a zero byte of ~w).
inline bool has_ff(uint64_t w) {
  const uint64_t inv = ~w;
  return ((inv - 0x0101010101010101ull) & ~inv & 0x8080808080808080ull) != 0;
}

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
inline void copy_entropy_bits(const uint8_t* p, int bit, uint64_t nbits, const uint8_t* end, BitWriter& w) {
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

// A whole block: its DC difference into `*diff`, its AC coefficients skipped.
inline bool block(BitReader& r, const HuffDecoder& dc, const HuffDecoder& ac, int* diff) {
  return read_dc(r, dc, diff) && skip_ac(r, ac);
}

}  // namespace hdl::detail::jpeg
