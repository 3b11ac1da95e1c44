// fuzz_file_list: the file-list parser of pipeline/dataset (Dataset::file_list) over
// arbitrary text, parsed from memory (Dataset::file_list_from_text, the same parser), as
// "path label" lines and as "path label start end" lines (video segments). Checks: only
// ConfigError escapes; an accepted list has entries whose paths are non-empty, hold no line
// break and no surrounding whitespace, and whose joined path is root + "/" + path; segments
// exist exactly in the segment format, with a finite start, an end that is a number or +inf,
// and the line they came from.
#include <cctype>
#include <cmath>
#include <string>

#include "pipeline/dataset.h"
#include "pipeline/errors.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hdl;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const FileListFormat format : {FileListFormat::kPathLabel, FileListFormat::kPathLabelStartEnd}) {
    Dataset d;
    try {
      d = Dataset::file_list_from_text(text, "fuzz.txt", "root", format);
    } catch (const ConfigError&) {
      continue;
    }
    const bool segmented = format == FileListFormat::kPathLabelStartEnd;
    HDL_FUZZ_CHECK(d.size() > 0, "an accepted list with no entries");
    HDL_FUZZ_CHECK(d.has_segments() == segmented, "segments in the wrong format");
    for (int64_t i = 0; i < d.size(); ++i) {
      const std::string_view p = d.relative_path(i);
      HDL_FUZZ_CHECK(!p.empty(), "an empty path");
      HDL_FUZZ_CHECK(p.find('\n') == std::string_view::npos, "a path with a line break");
      HDL_FUZZ_CHECK(!std::isspace(static_cast<unsigned char>(p.front())) &&
                         !std::isspace(static_cast<unsigned char>(p.back())),
                     "a path with surrounding whitespace");
      HDL_FUZZ_CHECK(d.path(i) == "root/" + std::string(p), "path() is not root/relative_path()");
      if (!segmented) continue;
      const Segment s = d.segment(i);
      HDL_FUZZ_CHECK(std::isfinite(s.start), "a segment start that is not finite");
      HDL_FUZZ_CHECK(std::isfinite(s.end) || s.end == INFINITY, "a segment end that is NaN or -inf");
      HDL_FUZZ_CHECK(d.source(i).rfind("file_list \"fuzz.txt\" line ", 0) == 0, "a segment without its line");
    }
  }
  return 0;
}
