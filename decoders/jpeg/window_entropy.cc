// JpegWindowEntropy (decoders/jpeg/window_entropy.h): its tables (a code and its value bits in
// one 11-bit lookup) and the decoding of a window's rows, two bit streams side by side.
#include "decoders/jpeg/window_entropy.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <memory>
#include <vector>

#include "decoders/jpeg/detail/bit_io.h"
#include "decoders/jpeg/detail/huffman.h"
#include "decoders/jpeg/detail/markers.h"
#include "decoders/jpeg/detail/scan_index.h"

namespace hdl {
namespace detail {

using jpeg::canonical_codes;
using jpeg::entry_of;
using jpeg::extend;
using jpeg::HuffSpec;
using jpeg::inside_grid;
using jpeg::kDcCategories;
using jpeg::load_be64;
using jpeg::LongCodes;
using jpeg::ParsedHeader;

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
}  // namespace hdl
