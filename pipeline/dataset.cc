#include "pipeline/dataset.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <system_error>

#include "media/url_file_system.h"
#include "pipeline/errors.h"

namespace hdl {
namespace fs = std::filesystem;

const std::vector<std::string>& default_image_extensions() {
  static const std::vector<std::string> ext = {".jpg", ".jpeg", ".png", ".ppm", ".bmp",
                                               ".pgm", ".tif",  ".tiff", ".webp"};
  return ext;
}

const std::vector<std::string>& default_video_extensions() {
  static const std::vector<std::string> ext = {".mp4", ".avi", ".mkv", ".webm", ".mov", ".m4v", ".mpg",
                                               ".mpeg", ".ogv", ".flv", ".wmv", ".3gp", ".ts"};
  return ext;
}

namespace {

bool has_extension(std::string_view name, const std::vector<std::string>& lowered) {
  for (const auto& e : lowered) {
    if (name.size() < e.size()) continue;
    bool match = true;
    for (size_t i = 0; i < e.size() && match; ++i)
      match = std::tolower(static_cast<unsigned char>(name[name.size() - e.size() + i])) == e[i];
    if (match) return true;
  }
  return false;
}

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);  // follows symlinks, as os.scandir's entry.is_dir() does
}

// os.walk(top, followlinks=True) flattened to (directory, sorted files), sorted by directory
// path string, as torchvision's make_dataset iterates sorted(os.walk(...)).
void walk(const fs::path& dir, std::vector<std::pair<std::string, std::vector<std::string>>>& out) {
  std::vector<std::string> files;
  std::vector<fs::path> subdirs;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (is_dir(it->path())) subdirs.push_back(it->path());
    else files.push_back(it->path().filename().string());
  }
  std::sort(files.begin(), files.end());
  out.emplace_back(dir.string(), std::move(files));
  for (const auto& s : subdirs) walk(s, out);
}

}  // namespace

Dataset Dataset::image_folder(const std::string& root, const std::vector<std::string>& extensions,
                              bool allow_empty_classes) {
  if (!is_dir(root)) throw ConfigError("file_root \"" + root + "\" is not a directory");
  std::vector<std::string> lowered;
  for (auto e : extensions) {
    std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return std::tolower(c); });
    lowered.push_back(e);
  }
  Dataset d;
  d.root_ = root;
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec))
    if (is_dir(it->path())) d.classes_.push_back(it->path().filename().string());
  if (ec) throw ConfigError("cannot list file_root \"" + root + "\": " + ec.message());
  std::sort(d.classes_.begin(), d.classes_.end());
  if (d.classes_.empty())
    throw ConfigError("file_root \"" + root + "\" has no class folders (ImageFolder expects root/<class>/<files>)");

  std::vector<std::string> empty;
  for (size_t label = 0; label < d.classes_.size(); ++label) {
    const fs::path class_dir = fs::path(root) / d.classes_[label];
    std::vector<std::pair<std::string, std::vector<std::string>>> dirs;
    walk(class_dir, dirs);
    std::sort(dirs.begin(), dirs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    const size_t before = d.labels_.size();
    for (const auto& [dir, files] : dirs) {
      const std::string rel_dir = fs::path(dir).lexically_relative(root).string();
      for (const auto& f : files)
        if (has_extension(f, lowered)) d.add(rel_dir + "/" + f, static_cast<int64_t>(label));
    }
    if (d.labels_.size() == before) empty.push_back(d.classes_[label]);
  }
  if (!empty.empty() && !allow_empty_classes) {
    std::string names;
    for (const auto& c : empty) names += (names.empty() ? "" : ", ") + c;
    std::string exts;
    for (const auto& e : extensions) exts += (exts.empty() ? "" : ", ") + e;
    throw ConfigError("file_root \"" + root + "\": found no valid file for the classes " + names +
                      ". Supported extensions are: " + exts);
  }
  return d;
}

namespace {

constexpr size_t kListChunk = size_t(1) << 20;  // bytes read at a time

// Bytes of a list line quoted in a message: non-printable bytes as \xNN, cut at 80.
std::string shown(std::string_view s) {
  constexpr size_t kShown = 80;
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < kShown; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  out += "\"";
  if (s.size() > kShown) out += "... (" + std::to_string(s.size()) + " bytes)";
  return out;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

}  // namespace

namespace {

// Splits the last whitespace-separated token off `line` (already trimmed at its end): returns
// it and leaves in `line` what is before it, trailing whitespace removed. Empty when the line
// has a single token (nothing before it).
std::string_view pop_last_token(std::string_view& line) {
  const size_t sep = line.find_last_of(" \t");
  if (sep == std::string_view::npos) return {};
  const std::string_view token = line.substr(sep + 1);
  size_t end = sep;
  while (end > 0 && is_space(line[end - 1])) --end;
  line = line.substr(0, end);
  return token;
}

// A finite decimal number, all of `text`; nullopt otherwise.
std::optional<double> parse_seconds(std::string_view text) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace

FileListFormat parse_file_list_format(const std::string& name) {
  if (name == "path label") return FileListFormat::kPathLabel;
  if (name == "path label start end") return FileListFormat::kPathLabelStartEnd;
  throw ConfigError("file_list_format must be \"path label\" or \"path label start end\", got \"" + name + "\"");
}

void Dataset::add_list_line(std::string_view line, const std::string& list_path, int64_t line_no,
                            FileListFormat format) {
  const auto where = [&] { return "file_list \"" + list_path + "\" line " + std::to_string(line_no); };
  if (line.size() > kMaxListLineBytes)
    throw ConfigError(where() + ": line is longer than the limit of " + std::to_string(kMaxListLineBytes) +
                      " bytes (not a file list?)");
  if (line_no == 1 && line.substr(0, 3) == "\xEF\xBB\xBF") line.remove_prefix(3);  // UTF-8 byte order mark
  while (!line.empty() && is_space(line.back())) line.remove_suffix(1);
  while (!line.empty() && is_space(line.front())) line.remove_prefix(1);
  if (line.empty() || line.front() == '#') return;
  // A NUL cannot be in a file name (the path would be cut there when opened); a CR inside a
  // line is a file with CR line endings read as one line (one sample instead of thousands).
  // Other bytes are a file name's business: Linux names are bytes, not text.
  if (line.find('\0') != std::string_view::npos)
    throw ConfigError(where() + ": NUL byte in " + shown(line) + " (a binary file?)");
  if (line.find('\r') != std::string_view::npos)
    throw ConfigError(where() + ": CR byte inside " + shown(line) + " (CR line endings? lines must end in LF or CRLF)");
  const bool segmented = format == FileListFormat::kPathLabelStartEnd;
  std::string_view rest = line;
  Segment segment;
  if (segmented) {
    const std::string_view end_text = pop_last_token(rest);
    const std::string_view start_text = end_text.empty() ? std::string_view() : pop_last_token(rest);
    if (start_text.empty() || rest.find_first_of(" \t") == std::string_view::npos)
      throw ConfigError(where() + ": expected \"path label start end\" (times in seconds, end - for the video's end), got " +
                        shown(line));
    const std::optional<double> start = parse_seconds(start_text);
    if (!start) throw ConfigError(where() + ": start " + shown(start_text) + " is not a number of seconds");
    segment.start = *start;
    if (end_text != "-") {
      const std::optional<double> end = parse_seconds(end_text);
      if (!end) throw ConfigError(where() + ": end " + shown(end_text) + " is not a number of seconds or - (the video's end)");
      segment.end = *end;
    }
  }
  const std::string_view label_text = pop_last_token(rest);
  if (label_text.empty())
    throw ConfigError(where() + ": expected \"path label\", got " + shown(line));
  const size_t path_end = rest.size();
  int64_t label = 0;
  const auto [end, ec] = std::from_chars(label_text.data(), label_text.data() + label_text.size(), label);
  if (ec == std::errc::result_out_of_range)
    throw ConfigError(where() + ": label " + shown(label_text) + " is out of range (int64)");
  if (ec != std::errc() || end != label_text.data() + label_text.size())
    throw ConfigError(where() + ": label " + shown(label_text) + " is not an integer");
  if (path_end > kMaxListPathBytes)
    throw ConfigError(where() + ": path is " + std::to_string(path_end) + " bytes, longer than PATH_MAX (" +
                      std::to_string(kMaxListPathBytes) + ")");
  add(rest, label);
  if (segmented) {
    segments_.push_back(segment);
    lines_.push_back(line_no);
  }
}

Dataset Dataset::file_list(const std::string& list_path, const std::string& root, FileListFormat format) {
  std::ifstream in(list_path, std::ios::binary);
  if (!in) throw ConfigError("file_list \"" + list_path + "\" cannot be opened");
  std::error_code ec;
  const uintmax_t bytes = fs::file_size(list_path, ec);
  return parse_file_list(in, list_path, root.empty() ? fs::path(list_path).parent_path().string() : root,
                         ec ? 0 : bytes, format);
}

Dataset Dataset::file_list_from_text(std::string_view text, const std::string& list_name, const std::string& root,
                                     FileListFormat format) {
  std::istringstream in{std::string(text)};
  return parse_file_list(in, list_name, root, text.size(), format);
}

Dataset Dataset::parse_file_list(std::istream& in, const std::string& list_path, std::string root,
                                 uintmax_t size_hint, FileListFormat format) {
  Dataset d;
  d.root_ = std::move(root);
  d.list_name_ = list_path;
  // The paths take fewer bytes than the list.
  d.names_.reserve(static_cast<size_t>(std::min<uintmax_t>(size_hint, uintmax_t(1) << 30)));
  // Read in chunks and split at LF: no per-line allocation, and a line is never longer than
  // kMaxListLineBytes in memory however long it is in the file. A list smaller than a chunk
  // (by its size) is read whole into a buffer of its size; the buffer grows to the full chunk
  // only if the list turns out longer (a file that grew, a size unknown).
  const size_t full = kListChunk + kMaxListLineBytes + 1;
  std::vector<char> buf(size_hint < kListChunk ? static_cast<size_t>(size_hint) + 1 : full);
  size_t have = 0;
  int64_t line_no = 0;
  for (bool eof = false; !eof;) {
    in.read(buf.data() + have, static_cast<std::streamsize>(buf.size() - have));
    have += static_cast<size_t>(in.gcount());
    eof = !in;
    if (in.bad()) throw ConfigError("file_list \"" + list_path + "\": read error");
    size_t pos = 0;
    while (const void* nl = std::memchr(buf.data() + pos, '\n', have - pos)) {
      const size_t end = static_cast<const char*>(nl) - buf.data();
      d.add_list_line(std::string_view(buf.data() + pos, end - pos), list_path, ++line_no, format);
      pos = end + 1;
    }
    if (eof && pos < have) d.add_list_line(std::string_view(buf.data() + pos, have - pos), list_path, ++line_no, format);
    if (!eof && have - pos > kMaxListLineBytes)  // throws: too long
      d.add_list_line(std::string_view(buf.data() + pos, have - pos), list_path, line_no + 1, format);
    std::memmove(buf.data(), buf.data() + pos, have - pos);
    have -= pos;
    if (!eof && buf.size() < full) buf.resize(full);
  }
  if (d.size() == 0) throw ConfigError("file_list \"" + list_path + "\" lists no files");
  // names_ keeps its capacity: the pages reserved past its end were never touched, so cost
  // no memory, and shrinking would copy every path (a peak of twice the paths' bytes).
  d.offsets_.shrink_to_fit();
  d.labels_.shrink_to_fit();
  d.segments_.shrink_to_fit();
  d.lines_.shrink_to_fit();
  return d;
}

Dataset Dataset::from_samples(const std::vector<std::string>& paths, const std::vector<int64_t>& labels,
                              const std::string& root, const std::vector<Segment>& segments) {
  if (!labels.empty() && labels.size() != paths.size())
    throw ConfigError("samples: " + std::to_string(paths.size()) + " files and " + std::to_string(labels.size()) +
                      " labels (give one label per file, or none)");
  if (!segments.empty() && segments.size() != paths.size())
    throw ConfigError("samples: " + std::to_string(paths.size()) + " files and " + std::to_string(segments.size()) +
                      " segments (give one segment per file, or none)");
  for (size_t i = 0; i < segments.size(); ++i)
    if (!std::isfinite(segments[i].start) || std::isnan(segments[i].end))
      throw ConfigError("samples: segments[" + std::to_string(i) + "] is [" + std::to_string(segments[i].start) + ", " +
                        std::to_string(segments[i].end) + "): start must be a finite number of seconds, end a number or "
                        "infinity (the video's end)");
  Dataset d;
  d.root_ = root;
  size_t bytes = 0;
  for (const std::string& p : paths) bytes += p.size();
  d.names_.reserve(bytes);
  d.offsets_.reserve(paths.size() + 1);
  d.labels_.reserve(paths.size());
  for (size_t i = 0; i < paths.size(); ++i) {
    const std::string& p = paths[i];
    auto where = [&] { return "samples: files[" + std::to_string(i) + "]"; };
    if (p.empty()) throw ConfigError(where() + " is empty");
    if (p.find('\0') != std::string::npos) throw ConfigError(where() + " holds a NUL byte");
    if (p.size() > kMaxListPathBytes)
      throw ConfigError(where() + " is " + std::to_string(p.size()) + " bytes, longer than PATH_MAX (" +
                        std::to_string(kMaxListPathBytes) + ")");
    d.add(p, labels.empty() ? static_cast<int64_t>(i) : labels[i]);
  }
  d.segments_ = segments;
  return d;
}

void Dataset::add(std::string_view rel, int64_t label) {
  names_.insert(names_.end(), rel.begin(), rel.end());
  offsets_.push_back(names_.size());
  labels_.push_back(label);
}

std::string Dataset::path(int64_t i) const {
  if (is_remote_url(relative_path(i))) return std::string(relative_path(i));  // a URL is whole
  std::string p = root_;
  if (!p.empty() && p.back() != '/') p += '/';
  p += relative_path(i);
  return p;
}

std::string Dataset::source(int64_t i) const {
  if (!list_name_.empty() && static_cast<size_t>(i) < lines_.size())
    return "file_list \"" + list_name_ + "\" line " + std::to_string(lines_[static_cast<size_t>(i)]);
  if (!list_name_.empty()) return "file_list \"" + list_name_ + "\" entry " + std::to_string(i);
  if (!classes_.empty()) return "file_root \"" + root_ + "\" entry " + std::to_string(i);
  return "samples[" + std::to_string(i) + "]";
}

std::map<std::string, int64_t> Dataset::class_to_idx() const {
  std::map<std::string, int64_t> m;
  for (size_t i = 0; i < classes_.size(); ++i) m[classes_[i]] = static_cast<int64_t>(i);
  return m;
}

}  // namespace hdl
