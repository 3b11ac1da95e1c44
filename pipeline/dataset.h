// Dataset: the list of samples a reader walks (paths, labels and, for videos, optional
// segments), kept compact.
//
// Paths live in one packed buffer (no string per sample), so ImageNet's 1.28 M files cost
// about 50 MB, and nothing is read from the files until a worker needs them.
//
// Thread safety: immutable after construction.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "media/api.h"

HDL_API_BEGIN
namespace hdl {

/// torchvision's IMG_EXTENSIONS.
const std::vector<std::string>& default_image_extensions();
/// Video file name endings: .mp4 .avi .mkv .webm .mov .m4v .mpg .mpeg .ogv .flv .wmv .3gp .ts.
const std::vector<std::string>& default_video_extensions();

/// A part of a video: the instants t (seconds from its first frame) with start <= t < end;
/// end = +infinity runs to the video's end. Values as listed: a segment that is empty or lies
/// outside its video is the reader's to report, per sample (pipeline/decode/clip_sampler.h).
struct Segment {
  double start = 0;
  double end = std::numeric_limits<double>::infinity();
};

/// What a file list's lines hold: "path label", or "path label start end" (a segment of the
/// video in seconds; end "-" runs to the video's end). The path is everything before the
/// last one or three whitespace-separated tokens, so it may contain spaces.
enum class FileListFormat { kPathLabel, kPathLabelStartEnd };
/// Parses "path label" and "path label start end"; throws ConfigError otherwise.
FileListFormat parse_file_list_format(const std::string& name);

class Dataset {
 public:
  Dataset() = default;

  /// An ImageFolder tree, exactly as torchvision.datasets.ImageFolder sees it: classes are the
  /// sorted names of root's subdirectories (symlinks followed); each class's files are found by
  /// a recursive walk, sorted by directory then file name; a file counts if its name ends with
  /// one of `extensions` (case-insensitive). Throws ConfigError if root is not a directory, has
  /// no class folders, or (unless allow_empty_classes) a class has no valid file — as
  /// torchvision does.
  static Dataset image_folder(const std::string& root, const std::vector<std::string>& extensions,
                              bool allow_empty_classes = false);

  /// A text file of "relative/path label" lines (the label is the last whitespace-separated
  /// token, so paths may contain spaces; blank lines and lines starting with # are skipped;
  /// LF or CRLF line ends; a UTF-8 byte order mark is skipped). Paths are relative to `root`
  /// (default: the list's directory). Throws ConfigError naming the list and the line (its
  /// bytes shown escaped and cut to 80) for: a line without a label, a label that is not a
  /// decimal integer or is outside int64, a NUL byte, a CR inside a line (CR line endings), a
  /// line over kMaxListLineBytes, a path over kMaxListPathBytes. Accepted as they are:
  /// negative labels (e.g. -1 for unlabelled samples), paths that are not valid UTF-8 or hold
  /// other control bytes (Linux file names are bytes). Linear time; memory about the paths'
  /// bytes plus 16 bytes per entry.
  /// With FileListFormat::kPathLabelStartEnd every line is "path label start end": start a
  /// decimal number, end a decimal number or "-" (open); ConfigError naming the line for a
  /// missing field or one that is not a finite number. Whether a segment makes sense (end >
  /// start, within the video) is not checked here: see Segment.
  static Dataset file_list(const std::string& list_path, const std::string& root = "",
                           FileListFormat format = FileListFormat::kPathLabel);
  /// file_list's limits: the longest line, and the longest path (PATH_MAX less its NUL).
  static constexpr size_t kMaxListLineBytes = size_t(64) << 10;
  static constexpr size_t kMaxListPathBytes = 4095;
  /// The same parser over a list's text already in memory (e.g. a sample list handed over from
  /// Python). `list_name` names the list in messages; paths are relative to `root` as given.
  static Dataset file_list_from_text(std::string_view text, const std::string& list_name,
                                     const std::string& root,
                                     FileListFormat format = FileListFormat::kPathLabel);

  /// Samples handed over in memory (Python's `fn.file_reader(files=..., labels=...)`, the
  /// loader's sample list): `paths[i]` relative to `root` (or as given when root is empty),
  /// with `labels[i]`; no labels: each sample's label is its index. Throws ConfigError naming
  /// the entry for an empty path, a NUL byte, a path over kMaxListPathBytes, or label and path
  /// counts that differ. No text in between: paths may hold any other byte, newlines too.
  /// `segments`: none, or one per path (ConfigError otherwise, or for a NaN or an infinite
  /// start).
  static Dataset from_samples(const std::vector<std::string>& paths, const std::vector<int64_t>& labels,
                              const std::string& root = "", const std::vector<Segment>& segments = {});

  int64_t size() const { return static_cast<int64_t>(labels_.size()); }
  const std::string& root() const { return root_; }
  /// Path relative to root().
  std::string_view relative_path(int64_t i) const {
    return {names_.data() + offsets_[i], static_cast<size_t>(offsets_[i + 1] - offsets_[i])};
  }
  /// root() joined with relative_path(i); a URL (http://, https://, s3://: a file list's line)
  /// as it is.
  std::string path(int64_t i) const;
  int64_t label(int64_t i) const { return labels_[i]; }
  /// True when every entry has a segment (a "path label start end" list, or samples given with
  /// segments); false when entries are whole files.
  bool has_segments() const { return !segments_.empty(); }
  /// Entry i's segment; the whole file (0, +infinity) when has_segments() is false.
  Segment segment(int64_t i) const { return segments_.empty() ? Segment{} : segments_[i]; }
  /// Where entry i was listed, for messages: `file_list "a.txt" line 17` or `samples[3]`.
  std::string source(int64_t i) const;
  /// Class names by index (ImageFolder), empty for file lists.
  const std::vector<std::string>& classes() const { return classes_; }
  std::map<std::string, int64_t> class_to_idx() const;

 private:
  void add(std::string_view relative_path, int64_t label);
  void add_list_line(std::string_view line, const std::string& list_path, int64_t line_no, FileListFormat format);
  // `size_hint`: the list's size in bytes if known (0: unknown), to reserve the paths' buffer.
  static Dataset parse_file_list(std::istream& in, const std::string& list_name, std::string root,
                                 uintmax_t size_hint, FileListFormat format);

  std::string root_;
  std::vector<char> names_;
  std::vector<uint64_t> offsets_{0};
  std::vector<int64_t> labels_;
  std::vector<std::string> classes_;
  std::vector<Segment> segments_;     // one per entry, or none
  std::vector<int64_t> lines_;        // a file list's line of each entry (segments only)
  std::string list_name_;             // the file list, for source(); empty: samples in memory
};

}  // namespace hdl
HDL_API_END
