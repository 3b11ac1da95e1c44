// fuzz_video_metadata: the video metadata cache's file parser (pipeline/readers/
// video_metadata_cache: parse_video_metadata) over arbitrary bytes, the way
// VideoMetadataCache::load reads a cache file. Checks: it returns a Status, never crashes
// or allocates past the input's size; an accepted file's entries hold VideoInfos that probe()
// could make (at least one frame, strictly ascending timestamps and keyframes below the frame
// count, positive sizes and time base, a right-angle rotation, non-empty keys) and re-encode
// to exactly the input's bytes (one encoding per content: shortest varints, a checksum). Each
// input is parsed as it is and with its checksum fixed up, so that mutations reach the entries.
#include <string>
#include <vector>

#include "pipeline/decode/video_metadata_cache.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

void check(const uint8_t* data, size_t size) {
  using namespace hdl;
  const Result<std::vector<VideoMetadataEntry>> parsed = parse_video_metadata({data, size});
  if (!parsed.is_ok()) {
    HDL_FUZZ_CHECK(!parsed.status().message().empty(), "an error without a message");
    return;
  }
  std::vector<const VideoMetadataEntry*> entries;
  for (const VideoMetadataEntry& e : *parsed) {
    const VideoInfo& v = e.info;
    HDL_FUZZ_CHECK(!e.key.empty() && e.key.size() <= 4095, "a key of a bad length");
    HDL_FUZZ_CHECK(v.num_frames() >= 1, "an entry without frames");
    for (size_t i = 1; i < v.pts.size(); ++i) HDL_FUZZ_CHECK(v.pts[i] > v.pts[i - 1], "timestamps not ascending");
    HDL_FUZZ_CHECK(!v.keyframes.empty() && v.keyframes.front() >= 0, "no keyframe");
    for (size_t i = 1; i < v.keyframes.size(); ++i)
      HDL_FUZZ_CHECK(v.keyframes[i] > v.keyframes[i - 1], "keyframes not ascending");
    HDL_FUZZ_CHECK(v.keyframes.back() < v.num_frames(), "a keyframe past the last frame");
    HDL_FUZZ_CHECK(v.width > 0 && v.height > 0 && v.time_base_num > 0 && v.time_base_den > 0, "a bad size or time base");
    HDL_FUZZ_CHECK(v.rotation % 90 == 0 && v.rotation >= 0 && v.rotation < 360, "a bad rotation");
    HDL_FUZZ_CHECK(v.last_frame_duration >= 0 && e.stamp.size >= 0, "a negative duration or size");
    (void)v.duration();  // what the samplers compute from it
    entries.push_back(&e);
  }
  const std::string again = encode_video_metadata(entries);
  HDL_FUZZ_CHECK(again.size() == size && again.compare(0, size, reinterpret_cast<const char*>(data), size) == 0,
                 "an accepted file does not re-encode to its bytes");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  check(data, size);
  // The same bytes with the checksum they need: most mutations would otherwise stop at the
  // checksum and never reach the entries' parser.
  if (size >= 32) {
    std::vector<uint8_t> fixed(data, data + size);
    uint64_t sum = hdl::video_metadata_checksum({fixed.data(), size - 8});
    for (size_t i = 0; i < 8; ++i) fixed[size - 8 + i] = static_cast<uint8_t>(sum >> (8 * i));
    check(fixed.data(), size);
  }
  return 0;
}
