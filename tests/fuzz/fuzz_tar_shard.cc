// fuzz_tar_shard: arbitrary bytes as a tar shard (pipeline/readers/tar/tar_archive, shard_sample,
// tar_stream, shard_index), in every way a reader takes one: the member parser with and
// without reading the data, build_shard_index over a file in memory, the streaming samples,
// and libarchive's streaming path (what a .tar.gz shard takes; it sniffs its filters itself).
// Checks: errors carry a message naming the shard; members have block-aligned, ascending data
// offsets and data inside the input once read; an index that builds re-encodes, parses back to
// itself, lists fields inside the input, and agrees with the streamed samples (same keys,
// fields and bytes) whenever both succeed.
#include <cstring>
#include <string>
#include <vector>

#include "media/file_system.h"
#include "pipeline/readers/tar/shard_index.h"
#include "pipeline/readers/tar/tar_stream.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using namespace hdl;

class MemoryFile : public RandomAccessFile {
 public:
  explicit MemoryFile(std::string_view b) : b_(b) {}
  int64_t size() const override { return int64_t(b_.size()); }
  int64_t modified_ns() const override { return 12345; }
  Result<int64_t> read(int64_t offset, int64_t n, void* dst) const override {
    if (offset >= size()) return int64_t(0);
    int64_t k = std::min(n, size() - offset);
    if (k > 0) std::memcpy(dst, b_.data() + offset, size_t(k));
    return k;
  }

 private:
  std::string_view b_;
};

// memcmp over n bytes; empty ranges (whose data() may be null) are equal without a call.
bool same_bytes(const void* a, const void* b, size_t n) { return n == 0 || std::memcmp(a, b, n) == 0; }

TarLimits limits() {
  TarLimits l;
  l.max_member_bytes = 1 << 20;  // the input is smaller: anything larger fails either way
  l.max_name_bytes = 4096;
  l.max_pax_bytes = 1 << 16;
  return l;
}

void check_error(const Status& s) {
  HDL_FUZZ_CHECK(!s.message().empty(), "an error without a message");
  HDL_FUZZ_CHECK(s.message().find("shard") != std::string::npos, "an error that does not name the shard");
}

void members(std::string_view bytes, bool read) {
  auto src = memory_byte_source(bytes);
  TarReader reader(*src, "f.tar", limits());
  int64_t last_end = 0;
  std::vector<uint8_t> buf;
  for (int i = 0; i < 100000; ++i) {
    auto m = reader.next();
    if (!m.is_ok()) return check_error(m.status());
    if (!*m) return;
    const TarMember& t = **m;
    HDL_FUZZ_CHECK(t.data_offset % kTarBlockSize == 0 && t.data_offset >= last_end + kTarBlockSize,
                   "a data offset not block-aligned or not after the previous member");
    HDL_FUZZ_CHECK(t.header_offset >= last_end && t.header_offset < t.data_offset, "a bad header offset");
    HDL_FUZZ_CHECK(t.size >= 0 && t.size <= limits().max_member_bytes, "a size out of bounds");
    last_end = t.data_offset + t.size;
    if (read) {
      buf.resize(size_t(t.size));
      Status s = reader.read_data(buf.data());
      if (!s.is_ok()) return check_error(s);
      HDL_FUZZ_CHECK(t.data_offset + t.size <= int64_t(bytes.size()), "data read past the input");
      HDL_FUZZ_CHECK(same_bytes(buf.data(), bytes.data() + t.data_offset, size_t(t.size)),
                     "data that is not the input's bytes at its offset");
    }
  }
}

Result<std::vector<StreamedSample>> stream(std::string_view bytes, ShardCompression c) {
  SampleStream s(open_member_stream(memory_byte_source(bytes), "f.tar", c, limits()), "f.tar");
  std::vector<StreamedSample> out;
  for (int i = 0; i < 100000; ++i) {
    StreamedSample x;
    auto r = s.next(&x);
    if (!r.is_ok()) return r.status();
    if (!*r) break;
    HDL_FUZZ_CHECK(!x.key.empty() && !x.fields.empty(), "an empty sample");
    out.push_back(std::move(x));
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  members(bytes, false);
  members(bytes, true);
  MemoryFile file(bytes);
  auto index = build_shard_index(file, "f.tar", limits());
  auto streamed = stream(bytes, ShardCompression::kNone);
  if (!streamed.is_ok()) check_error(streamed.status());
  if (!index.is_ok()) {
    check_error(index.status());
  } else {
    const std::string enc = encode_shard_index(*index);
    auto back = parse_shard_index(enc, "f.tar", "f.tar.idx", limits());
    HDL_FUZZ_CHECK(back.is_ok(), "a built index that does not parse back");
    HDL_FUZZ_CHECK(encode_shard_index(*back) == enc, "an index that does not round-trip");
    HDL_FUZZ_CHECK(back->samples.size() == index->samples.size(), "samples lost in the round trip");
    for (const auto& s : index->samples)
      for (const auto& f : s.fields)
        HDL_FUZZ_CHECK(f.offset + f.size <= int64_t(size), "an indexed field past the input");
    if (streamed.is_ok()) {
      HDL_FUZZ_CHECK(streamed->size() == index->samples.size(), "streaming and the index disagree on samples");
      for (size_t i = 0; i < streamed->size(); ++i) {
        const auto& a = (*streamed)[i];
        const auto& b = index->samples[i];
        HDL_FUZZ_CHECK(a.key == b.key && a.fields.size() == b.fields.size(), "a sample differs");
        for (size_t j = 0; j < a.fields.size(); ++j) {
          const auto& fa = a.fields[j];
          const auto& fb = b.fields[j];
          HDL_FUZZ_CHECK(fa.ext == fb.ext && fa.data_offset == fb.offset &&
                             int64_t(fa.data.size()) == fb.size &&
                             same_bytes(fa.data.data(), data + fb.offset, fa.data.size()),
                         "a field differs between streaming and the index");
        }
      }
    }
  }
  auto compressed = stream(bytes, ShardCompression::kCompressed);
  if (!compressed.is_ok()) check_error(compressed.status());
  return 0;
}
