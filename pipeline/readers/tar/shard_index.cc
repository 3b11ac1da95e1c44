#include "pipeline/readers/tar/shard_index.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>

#include "media/file_system.h"
#include "media/url_file_system.h"
#include "pipeline/readers/tar/shard_sample.h"

namespace hdl {
namespace {

constexpr std::string_view kVersion = "v1.2";
constexpr std::string_view kStampTag = "hdl1";

bool needs_escape(unsigned char c) { return c <= 0x20 || c == 0x7f || c == '%'; }

void append_escaped(std::string* out, std::string_view s) {
  static const char* hex = "0123456789ABCDEF";
  for (unsigned char c : s) {
    if (needs_escape(c)) {
      out->push_back('%');
      out->push_back(hex[c >> 4]);
      out->push_back(hex[c & 15]);
    } else {
      out->push_back(char(c));
    }
  }
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
      out.push_back(char(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// Whitespace-separated tokens of one line (DALI reads them with operator>>).
std::vector<std::string_view> tokens(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

// A non-negative decimal that fits in int64_t.
bool parse_int(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 19) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + uint64_t(c - '0');  // 19 digits cannot overflow uint64_t
  }
  if (v > uint64_t(INT64_MAX)) return false;
  *out = int64_t(v);
  return true;
}

int64_t padded(int64_t n) { return (n + kTarBlockSize - 1) / kTarBlockSize * kTarBlockSize; }

}  // namespace

Result<ShardIndex> build_shard_index(const RandomAccessFile& file, std::string_view shard_name,
                                     const TarLimits& limits) {
  ShardIndex index;
  index.url = std::string(shard_name);
  index.stamped = true;
  index.shard_size = file.size();
  index.shard_modified_ns = file.modified_ns();
  auto source = file_byte_source(file);
  TarReader reader(*source, index.url, limits);
  SampleGrouper grouper(index.url);
  std::string key, ext;
  for (;;) {
    HDL_ASSIGN_OR_RETURN(const TarMember* m, reader.next());
    if (!m) break;
    HDL_ASSIGN_OR_RETURN(auto step, grouper.add(m->name, m->header_offset, &key, &ext));
    if (step == SampleGrouper::Step::kSkip) continue;
    if (step == SampleGrouper::Step::kNewSample) index.samples.push_back(IndexedSample{key, {}});
    index.samples.back().fields.push_back(IndexedField{ext, m->name, m->data_offset, m->size});
  }
  return index;
}

std::string encode_shard_index(const ShardIndex& index) {
  std::string out;
  out += std::string(kVersion) + " " + std::to_string(index.samples.size());
  if (index.stamped)  // an index parsed from a stamp-less (DALI) file stays stamp-less
    out += " " + std::string(kStampTag) + " " + std::to_string(index.shard_size) + " " +
           std::to_string(index.shard_modified_ns);
  out += "\n";
  for (const auto& s : index.samples) {
    bool first = true;
    for (const auto& f : s.fields) {
      if (!first) out.push_back(' ');
      first = false;
      // The suffix as archived (the member name after the key and its dot).
      std::string_view suffix = std::string_view(f.member_name).substr(
          std::min(f.member_name.size(), s.key.size() + 1));
      if (suffix.empty()) out.push_back('%');  // "x." has field "": a lone '%' says so
      else append_escaped(&out, suffix);
      out.push_back(' ');
      out += std::to_string(f.offset);
      out.push_back(' ');
      out += std::to_string(f.size);
      out.push_back(' ');
      append_escaped(&out, f.member_name);
    }
    out.push_back('\n');
  }
  return out;
}

Result<ShardIndex> parse_shard_index(std::string_view bytes, std::string_view shard_url,
                                     std::string_view index_name, const TarLimits& limits) {
  int64_t line_no = 0;
  auto bad = [&](std::string_view key, const std::string& what) {
    std::string m = "shard index \"" + std::string(index_name) + "\": line " + std::to_string(line_no);
    if (!key.empty()) m += ": key \"" + std::string(key) + "\"";
    return Status::invalid_data(m + ": " + what);
  };
  size_t pos = 0;
  auto next_line = [&](std::string_view* line) {
    if (pos >= bytes.size()) return false;
    size_t nl = bytes.find('\n', pos);
    if (nl == std::string_view::npos) nl = bytes.size();
    *line = bytes.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    return true;
  };
  ShardIndex index;
  index.url = std::string(shard_url);
  std::string_view line;
  if (!next_line(&line)) return bad("", "empty file: no version line");
  auto head = tokens(line);
  if (head.empty() || head[0].empty() || head[0][0] != 'v')
    return bad("", "not a webdataset index (no version such as \"v1.2\" at the start)");
  if (head[0] != kVersion) {
    if (head[0] == "v1.0" || head[0] == "v1.1")
      return Status::unsupported("shard index \"" + std::string(index_name) + "\": version " +
                                 std::string(head[0]) + " has no member names; rebuild it");
    return bad("", "unsupported index version \"" + std::string(head[0]) + "\"");
  }
  int64_t count = 0;
  if (head.size() < 2 || !parse_int(head[1], &count)) return bad("", "no sample count");
  if (head.size() >= 3 && head[2] == kStampTag) {
    if (head.size() != 5 || !parse_int(head[3], &index.shard_size) ||
        !parse_int(head[4], &index.shard_modified_ns))
      return bad("", "malformed stamp (want \"hdl1 <size> <mtime ns>\")");
    index.stamped = true;
  }
  // Each sample line has at least 8 bytes ("e 0 0 k.e"): bounds the reservation.
  if (count > int64_t(bytes.size() / 8) + 1)
    return bad("", "sample count " + std::to_string(count) + " is more than the file can hold");
  index.samples.reserve(size_t(count));
  SampleGrouper grouper(index.url);
  std::string key, ext;
  int64_t next_free = 0;  // the first offset a field may start at (a header block before it)
  for (int64_t i = 0; i < count; ++i) {
    if (!next_line(&line))
      return bad("", "the file ends after " + std::to_string(i) + " of " + std::to_string(count) +
                         " samples");
    auto tok = tokens(line);
    if (tok.empty() || tok.size() % 4 != 0)
      return bad("", "want groups of four tokens \"<ext> <offset> <size> <name>\", got " +
                         std::to_string(tok.size()) + " tokens");
    bool started = false;
    for (size_t t = 0; t < tok.size(); t += 4) {
      std::string name = unescape(tok[t + 3]);
      if (int64_t(name.size()) > limits.max_name_bytes) return bad("", "member name too long");
      int64_t offset = 0, size = 0;
      if (!parse_int(tok[t + 1], &offset) || !parse_int(tok[t + 2], &size))
        return bad(name, "malformed offset or size");
      if (offset % kTarBlockSize != 0)
        return bad(name, "offset " + std::to_string(offset) + " is not a multiple of 512");
      if (offset < next_free + kTarBlockSize)
        return bad(name, "offset " + std::to_string(offset) +
                             " overlaps the previous member or leaves no room for a header");
      if (size > limits.max_member_bytes)
        return Status::resource_exhausted("shard index \"" + std::string(index_name) + "\": line " +
                                          std::to_string(line_no) + ": member \"" + name + "\" of " +
                                          std::to_string(size) + " bytes is over the limit");
      if (index.stamped && offset + size > index.shard_size)
        return bad(name, "member data ends past the shard's size " + std::to_string(index.shard_size));
      next_free = offset + padded(size);
      auto step = grouper.add(name, offset, &key, &ext);
      if (!step.is_ok()) return bad("", step.status().message());
      if (*step == SampleGrouper::Step::kSkip) continue;  // DALI's tool lists "__meta__" members
      std::string token_ext = unescape(tok[t]);
      if (field_name(token_ext) != ext && !(tok[t] == "%" && ext.empty()))
        return bad(key, "ext \"" + token_ext + "\" does not match member \"" + name + "\"");
      if (*step == SampleGrouper::Step::kNewSample) {
        if (started) return bad(key, "one line holds two samples");
        index.samples.push_back(IndexedSample{key, {}});
        started = true;
      } else if (!started) {
        return bad(key, "a sample is split over two lines");
      }
      index.samples.back().fields.push_back(IndexedField{ext, std::move(name), offset, size});
    }
  }
  while (next_line(&line))
    if (!tokens(line).empty()) return bad("", "more sample lines than the count says");
  return index;
}

Status write_shard_index(const std::string& path, const ShardIndex& index) {
  const std::string bytes = encode_shard_index(index);
  std::random_device rd;
  char suffix[64];
  std::snprintf(suffix, sizeof suffix, ".tmp.%d.%08x%08x", static_cast<int>(::getpid()), rd(),
                unsigned(std::chrono::steady_clock::now().time_since_epoch().count()));
  const std::string tmp = path + suffix;
  auto failed = [&](const std::string& what, int fd) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    return Status::io_error("shard index \"" + path + "\": " + what + ": " + std::strerror(err));
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return Status::io_error("shard index \"" + path + "\": cannot create \"" + tmp +
                            "\": " + std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return failed("cannot write \"" + tmp + "\"", fd);
    done += size_t(w);
  }
  if (::fsync(fd) != 0) return failed("cannot flush \"" + tmp + "\"", fd);
  if (::close(fd) != 0) return failed("cannot close \"" + tmp + "\"", -1);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return failed("cannot rename \"" + tmp + "\" over it", -1);
  return Status::ok();
}

Result<ShardIndex> load_or_build_index(FileSystem& fs, const std::string& shard_path,
                                       const IndexOptions& options, std::string* warning) {
  warning->clear();
  const std::string index_path = options.index_path.empty() ? shard_path + ".idx" : options.index_path;
  auto opened = fs.open(shard_path);
  if (!opened.is_ok()) return opened.status().with_context("tar shard \"" + shard_path + "\"");
  const RandomAccessFile& shard = **opened;
  // An object's modification time is when it was uploaded, not the file's that the stamp
  // recorded: a sidecar published next to a URL shard is checked by the shard's size (and,
  // as every index, by parsing: extents within that size, names that match their fields).
  const bool remote = is_remote_url(shard_path);
  const bool read_cache = options.policy == IndexCachePolicy::kReadWrite ||
                          options.policy == IndexCachePolicy::kReadOnly;
  // A sidecar cannot be written next to a URL: one published there is read, else the index is
  // built in memory.
  const bool write_cache = (options.policy == IndexCachePolicy::kReadWrite ||
                            options.policy == IndexCachePolicy::kRebuild) &&
                           !(options.index_path.empty() && remote);
  if (read_cache) {
    auto idx = fs.open(index_path);
    if (idx.is_ok()) {
      std::string why;
      const int64_t n = (*idx)->size();
      if (n > options.max_index_bytes) {
        why = "is larger than IndexOptions::max_index_bytes";
      } else {
        std::string bytes(size_t(n), '\0');
        Status read = read_exactly(**idx, 0, n, bytes.data());
        if (!read.is_ok()) {
          why = "cannot be read (" + read.message() + ")";
        } else {
          auto parsed = parse_shard_index(bytes, shard_path, index_path, options.limits);
          if (!parsed.is_ok()) {
            why = "does not parse (" + parsed.status().message() + ")";
          } else if (!parsed->stamped) {
            why = "has no size/mtime stamp (made by another tool?)";
          } else if (parsed->shard_size != shard.size() ||
                     (parsed->shard_modified_ns != shard.modified_ns() && !remote)) {
            why = "is stale (it describes a shard of " + std::to_string(parsed->shard_size) +
                  " bytes modified at " + std::to_string(parsed->shard_modified_ns) +
                  " ns; the shard has " + std::to_string(shard.size()) + " bytes, modified at " +
                  std::to_string(shard.modified_ns()) + " ns)";
          } else {
            return std::move(parsed).value();
          }
        }
      }
      *warning = "shard index \"" + index_path + "\" " + why + "; rebuilt it from the shard";
    } else if (idx.status().code() != StatusCode::kNotFound) {
      *warning = "shard index \"" + index_path + "\" cannot be opened (" + idx.status().message() +
                 "); rebuilt it from the shard";
    }
  }
  HDL_ASSIGN_OR_RETURN(ShardIndex built, build_shard_index(shard, shard_path, options.limits));
  if (write_cache) {
    if (Status s = write_shard_index(index_path, built); !s.is_ok()) {
      if (!warning->empty()) *warning += "; ";
      *warning += "could not save it: " + s.message();
    }
  }
  return built;
}

}  // namespace hdl
