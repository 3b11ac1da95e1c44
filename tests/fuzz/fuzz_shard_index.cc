// fuzz_shard_index: arbitrary bytes as a shard index file (pipeline/readers/tar/shard_index:
// parse_shard_index, what load_or_build_index reads from a sidecar). Checks: errors carry a
// message naming the index; an accepted index has non-empty samples with keys, block-aligned
// ascending non-overlapping fields within the stamped shard size and the size limit, and its
// encoding parses back to the same encoding.
#include <string>

#include "pipeline/readers/tar/shard_index.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hdl;
  TarLimits limits;
  limits.max_member_bytes = int64_t(1) << 40;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto index = parse_shard_index(bytes, "f.tar", "f.idx", limits);
  if (!index.is_ok()) {
    HDL_FUZZ_CHECK(index.status().message().find("shard index \"f.idx\"") != std::string::npos,
                   "an error that does not name the index");
    return 0;
  }
  int64_t end = 0;
  for (const auto& s : index->samples) {
    HDL_FUZZ_CHECK(!s.key.empty() && !s.fields.empty(), "an empty sample");
    for (const auto& f : s.fields) {
      HDL_FUZZ_CHECK(f.offset % kTarBlockSize == 0 && f.offset >= end + kTarBlockSize, "a bad offset");
      HDL_FUZZ_CHECK(f.size >= 0 && f.size <= limits.max_member_bytes, "a bad size");
      HDL_FUZZ_CHECK(!index->stamped || f.offset + f.size <= index->shard_size, "a field past the shard");
      end = f.offset + f.size;
    }
  }
  const std::string enc = encode_shard_index(*index);
  auto back = parse_shard_index(enc, "f.tar", "f.idx", limits);
  HDL_FUZZ_CHECK(back.is_ok(), "an accepted index whose encoding does not parse");
  HDL_FUZZ_CHECK(encode_shard_index(*back) == enc, "an encoding that does not round-trip");
  return 0;
}
