#include "pipeline/decode/video_metadata_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "media/file_system.h"
#include "pipeline/errors.h"
#include "pipeline/random.h"

namespace hdl {
namespace {

constexpr char kMagic[8] = {'H', 'D', 'L', 'V', 'M', 'E', 'T', 'A'};
constexpr size_t kHeaderBytes = 24;   // magic, version, flags, entry count
constexpr size_t kTrailerBytes = 8;   // checksum
constexpr size_t kMaxString = 256;    // container, codec, pixel format
constexpr size_t kMaxKey = 4095;      // PATH_MAX less its NUL
constexpr uint64_t kMaxSide = uint64_t(1) << 30;

uint64_t load_le(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

// A 64-bit hash of bytes (not cryptographic: it detects corruption and changed files).
uint64_t hash_bytes(std::span<const uint8_t> b, uint64_t h) {
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  size_t i = 0;
  for (; i + 8 <= b.size(); i += 8) {
    h = (h ^ load_le(b.data() + i, 8)) * kMul;
    h ^= h >> 29;
  }
  if (i < b.size()) h = (h ^ load_le(b.data() + i, b.size() - i) ^ (uint64_t(b.size() - i) << 56)) * kMul;
  return mix64(h ^ b.size());
}

uint64_t checksum(std::span<const uint8_t> b) { return hash_bytes(b, 0x243F6A8885A308D3ull); }

uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void put_fixed(std::string& out, uint64_t v, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}
void put_string(std::string& out, const std::string& s) {
  put_varint(out, s.size());
  out += s;
}

void encode_info(std::string& out, const VideoInfo& v) {
  put_string(out, v.container);
  put_string(out, v.codec);
  put_string(out, v.pixel_format);
  for (int64_t x : {int64_t(v.stream_index), v.width, v.height, int64_t(v.rotation), v.time_base_num, v.time_base_den})
    put_varint(out, static_cast<uint64_t>(x));
  out.push_back(v.sequential ? 1 : 0);
  put_varint(out, static_cast<uint64_t>(v.last_frame_duration));
  put_varint(out, v.pts.size());
  for (size_t i = 0; i < v.pts.size(); ++i)
    put_varint(out, i == 0 ? zigzag(v.pts[0]) : static_cast<uint64_t>(v.pts[i] - v.pts[i - 1]));
  put_varint(out, v.keyframes.size());
  for (size_t i = 0; i < v.keyframes.size(); ++i)
    put_varint(out, static_cast<uint64_t>(i == 0 ? v.keyframes[0] : v.keyframes[i] - v.keyframes[i - 1]));
}

// Bounds-checked reading of a cache file; the first problem is kept and every later read
// fails, so callers check ok() once per entry.
class Reader {
 public:
  Reader(const uint8_t* begin, const uint8_t* end) : begin_(begin), p_(begin), end_(end) {}

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  size_t left() const { return ok() ? static_cast<size_t>(end_ - p_) : 0; }
  size_t offset() const { return static_cast<size_t>(p_ - begin_); }
  bool fail(const std::string& what) {
    if (ok()) error_ = what + " at byte " + std::to_string(offset());
    p_ = end_;
    return false;
  }

  // LEB128, shortest form only, at most 64 bits.
  bool varint(uint64_t* v) {
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) return fail("truncated number");
      const uint8_t b = *p_++;
      if (shift == 63 && b > 1) return fail("number out of range");
      x |= uint64_t(b & 0x7F) << shift;
      if (!(b & 0x80)) {
        if (b == 0 && shift > 0) return fail("number not in its shortest form");
        *v = x;
        return true;
      }
    }
    return fail("number out of range");
  }
  // A varint in [lo, hi].
  bool number(uint64_t lo, uint64_t hi, const char* what, uint64_t* v) {
    if (!varint(v)) return false;
    if (*v < lo || *v > hi) return fail(std::string(what) + " " + std::to_string(*v) + " out of range");
    return true;
  }
  bool fixed(size_t bytes, uint64_t* v) {
    if (left() < bytes) return fail("truncated");
    *v = load_le(p_, bytes);
    p_ += bytes;
    return true;
  }
  bool skip(size_t n) {
    if (left() < n) return fail("truncated");
    p_ += n;
    return true;
  }
  bool byte(uint8_t* v) {
    if (left() < 1) return fail("truncated");
    *v = *p_++;
    return true;
  }
  bool string(size_t max, const char* what, std::string* s) {
    uint64_t n = 0;
    if (!number(0, max, what, &n)) return false;
    if (left() < n) return fail(std::string("truncated ") + what);
    s->assign(reinterpret_cast<const char*>(p_), static_cast<size_t>(n));
    p_ += n;
    return true;
  }
  // Restricts reading to the next n bytes (an entry's payload); false if there are fewer.
  bool narrow(uint64_t n, const uint8_t** saved_end) {
    if (left() < n) return fail("truncated entry");
    *saved_end = end_;
    end_ = p_ + n;
    return true;
  }
  bool widen(const uint8_t* saved_end) {
    if (!ok()) return false;
    if (p_ != end_) return fail("entry longer than its payload");
    end_ = saved_end;
    return true;
  }

 private:
  const uint8_t* begin_;
  const uint8_t* p_;
  const uint8_t* end_;
  std::string error_;
};

bool read_info(Reader& r, VideoInfo* v) {
  uint64_t x[6] = {};
  if (!r.string(kMaxString, "container name", &v->container) || !r.string(kMaxString, "codec name", &v->codec) ||
      !r.string(kMaxString, "pixel format", &v->pixel_format) ||
      !r.number(0, INT32_MAX, "stream index", &x[0]) || !r.number(1, kMaxSide, "width", &x[1]) ||
      !r.number(1, kMaxSide, "height", &x[2]) || !r.number(0, 270, "rotation", &x[3]) ||
      !r.number(1, INT32_MAX, "time base numerator", &x[4]) || !r.number(1, INT32_MAX, "time base denominator", &x[5]))
    return false;
  if (x[3] % 90 != 0) return r.fail("rotation " + std::to_string(x[3]) + " is not a multiple of 90");
  v->stream_index = static_cast<int>(x[0]);
  v->width = static_cast<int64_t>(x[1]);
  v->height = static_cast<int64_t>(x[2]);
  v->rotation = static_cast<int>(x[3]);
  v->time_base_num = static_cast<int64_t>(x[4]);
  v->time_base_den = static_cast<int64_t>(x[5]);
  uint8_t flags = 0;
  if (!r.byte(&flags)) return false;
  if (flags > 1) return r.fail("unknown flags");
  v->sequential = flags == 1;
  uint64_t last = 0, frames = 0;
  if (!r.number(0, INT64_MAX, "last frame duration", &last)) return false;
  v->last_frame_duration = static_cast<int64_t>(last);
  // Each frame takes at least one byte: a count past the bytes left is corrupt (and never
  // allocated).
  if (!r.number(1, r.left(), "frame count", &frames)) return false;
  v->pts.resize(static_cast<size_t>(frames));
  uint64_t first = 0;
  if (!r.varint(&first)) return false;
  v->pts[0] = unzigzag(first);
  for (size_t i = 1; i < v->pts.size(); ++i) {
    uint64_t d = 0;
    if (!r.number(1, INT64_MAX, "timestamp step", &d)) return false;
    if (__builtin_add_overflow(v->pts[i - 1], static_cast<int64_t>(d), &v->pts[i])) return r.fail("timestamp overflow");
  }
  uint64_t keys = 0;
  if (!r.number(1, std::min<uint64_t>(frames, r.left()), "keyframe count", &keys)) return false;
  v->keyframes.resize(static_cast<size_t>(keys));
  for (size_t i = 0; i < v->keyframes.size(); ++i) {
    uint64_t d = 0;
    const int64_t prev = i == 0 ? 0 : v->keyframes[i - 1];
    if (!r.number(i == 0 ? 0 : 1, frames - 1 - static_cast<uint64_t>(prev), "keyframe", &d)) return false;
    v->keyframes[i] = prev + static_cast<int64_t>(d);
  }
  return true;
}

std::string errno_text(int err) { return std::strerror(err); }

// Writes all of `bytes` to fd.
bool write_all(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

Result<FileStamp> stamp_file(const RandomAccessFile& file) {
  FileStamp s;
  s.size = file.size();
  s.modified_ns = file.modified_ns();
  const int64_t head = std::min(s.size, kStampBytes);
  const int64_t tail_from = std::max(head, s.size - kStampBytes);
  std::vector<uint8_t> bytes(static_cast<size_t>(head + (s.size - tail_from)));
  HDL_RETURN_IF_ERROR(read_exactly(file, 0, head, bytes.data()));
  HDL_RETURN_IF_ERROR(read_exactly(file, tail_from, s.size - tail_from, bytes.data() + head));
  s.fingerprint = hash_bytes(bytes, 0x13198A2E03707344ull ^ static_cast<uint64_t>(s.size));
  return s;
}

uint64_t video_metadata_checksum(std::span<const uint8_t> bytes) { return checksum(bytes); }

std::string encode_video_metadata(std::span<const VideoMetadataEntry* const> entries) {
  std::string out(kMagic, sizeof kMagic);
  put_fixed(out, kVideoMetadataVersion, 4);
  put_fixed(out, 0, 4);
  put_fixed(out, entries.size(), 8);
  std::string payload;
  for (const VideoMetadataEntry* e : entries) {
    put_string(out, e->key);
    put_varint(out, static_cast<uint64_t>(e->stamp.size));
    put_varint(out, zigzag(e->stamp.modified_ns));
    put_fixed(out, e->stamp.fingerprint, 8);
    payload.clear();
    encode_info(payload, e->info);
    put_varint(out, payload.size());
    out += payload;
  }
  put_fixed(out, checksum({reinterpret_cast<const uint8_t*>(out.data()), out.size()}), 8);
  return out;
}

Result<std::vector<VideoMetadataEntry>> parse_video_metadata(std::span<const uint8_t> bytes) {
  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    return Status::invalid_argument("not a video metadata cache (it does not start with \"HDLVMETA\")");
  if (bytes.size() < kHeaderBytes + kTrailerBytes)
    return Status::invalid_data("truncated (" + std::to_string(bytes.size()) + " bytes)");
  const uint32_t version = static_cast<uint32_t>(load_le(bytes.data() + 8, 4));
  if (version != kVideoMetadataVersion)
    return Status::unsupported("format version " + std::to_string(version) + ", this build reads version " +
                               std::to_string(kVideoMetadataVersion));
  const size_t body = bytes.size() - kTrailerBytes;
  if (checksum(bytes.first(body)) != load_le(bytes.data() + body, 8))
    return Status::invalid_data("checksum mismatch (truncated or overwritten)");
  if (load_le(bytes.data() + 12, 4) != 0) return Status::invalid_data("unknown header flags");
  const uint64_t count = load_le(bytes.data() + 16, 8);
  Reader r(bytes.data(), bytes.data() + body);
  (void)r.skip(kHeaderBytes);  // checked above
  // An entry takes at least 20 bytes: a larger count is corrupt (and never reserved).
  if (count > r.left() / 20) return Status::invalid_data("entry count " + std::to_string(count) + " past the file's end");
  std::vector<VideoMetadataEntry> entries(static_cast<size_t>(count));
  for (VideoMetadataEntry& e : entries) {
    uint64_t size = 0, mtime = 0, payload = 0;
    const uint8_t* saved = nullptr;
    if (!r.string(kMaxKey, "key", &e.key)) break;
    if (e.key.empty()) {
      r.fail("empty key");
      break;
    }
    if (!r.number(0, INT64_MAX, "file size", &size) || !r.varint(&mtime) || !r.fixed(8, &e.stamp.fingerprint) ||
        !r.varint(&payload) || !r.narrow(payload, &saved) || !read_info(r, &e.info) || !r.widen(saved))
      break;
    e.stamp.size = static_cast<int64_t>(size);
    e.stamp.modified_ns = unzigzag(mtime);
  }
  if (r.ok() && r.left() != 0) r.fail("bytes after the last entry");
  if (!r.ok()) return Status::invalid_data("corrupt: " + r.error());
  return entries;
}

VideoMetadataCache::VideoMetadataCache(std::string path) : path_(std::move(path)) {}

std::unique_ptr<VideoMetadataCache> VideoMetadataCache::load(const std::string& path, std::string* note) {
  auto cache = std::make_unique<VideoMetadataCache>(path);
  const auto where = [&] { return "metadata_cache \"" + path + "\""; };
  std::error_code dir_ec;
  if (std::filesystem::is_directory(path, dir_ec)) throw ConfigError(where() + " is a folder; name a file in it");
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec) && !ec) return cache;  // first run
    throw ConfigError(where() + " cannot be read: " + errno_text(errno));
  }
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw ConfigError(where() + " cannot be read (read error)");
  if (bytes.empty()) return cache;
  Result<std::vector<VideoMetadataEntry>> parsed = parse_video_metadata(bytes);
  if (!parsed.is_ok()) {
    const Status& st = parsed.status();
    const bool cut_magic = bytes.size() < sizeof kMagic && std::memcmp(bytes.data(), kMagic, bytes.size()) == 0;
    if (st.code() == StatusCode::kInvalidArgument && !cut_magic)
      throw ConfigError(where() + " exists and is not a video metadata cache (it does not start with \"HDLVMETA\"); "
                        "refusing to overwrite it: delete it or name another file");
    if (note) {
      *note = st.code() == StatusCode::kUnsupported ? "of another format (" + st.message() + "); rebuilding it"
                                                    : "corrupt (" + (cut_magic ? "truncated" : st.message()) +
                                                          "); rebuilding it";
    }
    return cache;
  }
  cache->entries_.reserve(parsed->size());
  for (VideoMetadataEntry& e : *parsed)
    cache->entries_[std::move(e.key)] = Entry{e.stamp, std::make_shared<const VideoInfo>(std::move(e.info))};
  return cache;
}

VideoMetadataCache::Info VideoMetadataCache::find(const std::string& key, const FileStamp& stamp) {
  {
    std::lock_guard lock(mu_);
    const auto it = entries_.find(key);
    if (it != entries_.end() && it->second.stamp == stamp) {
      hits_.fetch_add(1, std::memory_order_relaxed);
      return it->second.info;
    }
  }
  misses_.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

void VideoMetadataCache::put(const std::string& key, const FileStamp& stamp, Info info) {
  std::lock_guard lock(mu_);
  entries_[key] = Entry{stamp, std::move(info)};
  changed_ = true;
}

Result<VideoMetadataCache::Info> VideoMetadataCache::get_or_probe(const std::string& key, const RandomAccessFile& file,
                                                                  VideoDecoder& decoder, bool* probed) {
  if (probed) *probed = false;
  HDL_ASSIGN_OR_RETURN(const FileStamp stamp, stamp_file(file));
  {
    std::lock_guard lock(mu_);
    const auto it = entries_.find(key);
    // An entry over this decoder's pixel limit is probed again, which reports the limit.
    if (it != entries_.end() && it->second.stamp == stamp &&
        it->second.info->width * it->second.info->height <= decoder.options().max_frame_pixels) {
      hits_.fetch_add(1, std::memory_order_relaxed);
      return it->second.info;
    }
  }
  misses_.fetch_add(1, std::memory_order_relaxed);
  HDL_ASSIGN_OR_RETURN(VideoInfo info, decoder.probe(file));
  if (probed) *probed = true;
  auto shared = std::make_shared<const VideoInfo>(std::move(info));
  put(key, stamp, shared);
  return Info(shared);
}

bool VideoMetadataCache::changed() const {
  std::lock_guard lock(mu_);
  return changed_;
}

int64_t VideoMetadataCache::size() const {
  std::lock_guard lock(mu_);
  return static_cast<int64_t>(entries_.size());
}

Status VideoMetadataCache::save() const {
  std::string bytes;
  {
    std::lock_guard lock(mu_);
    std::vector<VideoMetadataEntry> copies;  // sorted by key: the same entries, the same file
    copies.reserve(entries_.size());
    for (const auto& [key, e] : entries_) copies.push_back({key, e.stamp, *e.info});
    std::sort(copies.begin(), copies.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
    std::vector<const VideoMetadataEntry*> ptrs;
    ptrs.reserve(copies.size());
    for (const auto& c : copies) ptrs.push_back(&c);
    bytes = encode_video_metadata(ptrs);
  }
  // A name no other process or thread uses: pid, time and a random number.
  std::random_device rd;
  char suffix[64];
  std::snprintf(suffix, sizeof suffix, ".tmp.%d.%016llx", static_cast<int>(::getpid()),
                static_cast<unsigned long long>(
                    mix64((uint64_t(rd()) << 32) ^ rd() ^
                          uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()))));
  const std::string tmp = path_ + suffix;
  const auto failed = [&](const std::string& what) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return Status::io_error("metadata_cache \"" + path_ + "\": " + what + ": " + errno_text(err));
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return Status::io_error("metadata_cache \"" + path_ + "\": cannot create \"" + tmp + "\": " + errno_text(errno));
  if (!write_all(fd, bytes)) {
    const Status st = failed("cannot write \"" + tmp + "\"");
    ::close(fd);
    return st;
  }
  if (::fsync(fd) != 0) {
    const Status st = failed("cannot flush \"" + tmp + "\"");
    ::close(fd);
    return st;
  }
  if (::close(fd) != 0) return failed("cannot close \"" + tmp + "\"");
  if (::rename(tmp.c_str(), path_.c_str()) != 0) return failed("cannot rename \"" + tmp + "\" over it");
  // The rename itself survives a crash once the folder is flushed (best effort).
  const std::string dir = std::filesystem::path(path_).parent_path().string();
  if (const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
  return Status::ok();
}

}  // namespace hdl
