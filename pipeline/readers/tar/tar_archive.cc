#include "pipeline/readers/tar/tar_archive.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "media/file_system.h"
#include "media/url_file_system.h"
#include "pipeline/readers/tar/shard_sample.h"

namespace hdl {
namespace {

// ustar header fields: offset, length.
constexpr int kName = 0, kNameLen = 100;
constexpr int kSize = 124, kSizeLen = 12;
constexpr int kChksum = 148, kChksumLen = 8;
constexpr int kType = 156;
constexpr int kMagic = 257;
constexpr int kPrefix = 345, kPrefixLen = 155;

int64_t padded(int64_t n) { return (n + kTarBlockSize - 1) / kTarBlockSize * kTarBlockSize; }

std::string field_string(const uint8_t* p, int len) {
  const void* nul = std::memchr(p, 0, len);
  return std::string(reinterpret_cast<const char*>(p),
                     nul ? static_cast<const uint8_t*>(nul) - p : len);
}

// An octal number (leading spaces, digits, then NUL/space/end) or GNU base-256 (first byte
// 0x80 positive, 0xff negative). False when malformed or over 2^62.
bool parse_number(const uint8_t* p, int len, int64_t* out) {
  if (p[0] & 0x80) {
    if (p[0] == 0xff) return false;  // negative: never a valid size
    if (p[0] != 0x80) return false;
    uint64_t v = 0;
    for (int i = 1; i < len; ++i) {
      if (v >> 54) return false;
      v = (v << 8) | p[i];
    }
    if (v >> 62) return false;
    *out = int64_t(v);
    return true;
  }
  int i = 0;
  while (i < len && p[i] == ' ') ++i;
  uint64_t v = 0;
  int digits = 0;
  for (; i < len && p[i] >= '0' && p[i] <= '7'; ++i, ++digits) {
    if (v >> 59) return false;
    v = v * 8 + (p[i] - '0');
  }
  if (i < len && p[i] != 0 && p[i] != ' ') return false;
  for (; i < len; ++i)  // after the terminator only NULs and spaces
    if (p[i] != 0 && p[i] != ' ') return false;
  if (digits == 0) return false;
  *out = int64_t(v);
  return true;
}

bool all_zero(const uint8_t* b) {
  for (int i = 0; i < kTarBlockSize; ++i)
    if (b[i]) return false;
  return true;
}

// True when the stored checksum equals the unsigned or the signed sum (chksum as spaces).
bool checksum_ok(const uint8_t* b, int64_t* stored, int64_t* computed) {
  int64_t u = 0, s = 0;
  for (int i = 0; i < kTarBlockSize; ++i) {
    uint8_t c = (i >= kChksum && i < kChksum + kChksumLen) ? ' ' : b[i];
    u += c;
    s += static_cast<int8_t>(c);
  }
  *computed = u;
  if (!parse_number(b + kChksum, kChksumLen, stored)) {
    *stored = -1;
    return false;
  }
  return *stored == u || *stored == s;
}

// The compression a stream starts with, for a clear message when one reaches the plain parser.
const char* compression_magic(const uint8_t* b) {
  if (b[0] == 0x1f && b[1] == 0x8b) return "gzip";
  if (b[0] == 'B' && b[1] == 'Z' && b[2] == 'h') return "bzip2";
  if (!std::memcmp(b, "\xfd" "7zXZ", 5)) return "xz";
  if (!std::memcmp(b, "\x28\xb5\x2f\xfd", 4)) return "zstd";
  return nullptr;
}

// PAX records: "<len> <key>=<value>\n", len counting the whole record. False when malformed.
bool parse_pax(const std::string& data, std::unordered_map<std::string, std::string>* out) {
  size_t pos = 0;
  while (pos < data.size()) {
    if (data[pos] == 0) break;  // some writers pad the records with NULs
    size_t sp = pos;
    uint64_t len = 0;
    while (sp < data.size() && data[sp] >= '0' && data[sp] <= '9') {
      if (len > data.size()) return false;
      len = len * 10 + (data[sp] - '0');
      ++sp;
    }
    if (sp == pos || sp >= data.size() || data[sp] != ' ') return false;
    if (len > data.size() - pos || len < sp - pos + 3) return false;  // "<len> k=\n" at least
    size_t end = pos + len;                                            // one past the '\n'
    if (data[end - 1] != '\n') return false;
    std::string_view rec(data.data() + sp + 1, end - 1 - (sp + 1));
    size_t eq = rec.find('=');
    if (eq == std::string_view::npos || eq == 0) return false;
    (*out)[std::string(rec.substr(0, eq))] = std::string(rec.substr(eq + 1));
    pos = end;
  }
  return true;
}

class FileByteSource : public ByteSource {
 public:
  FileByteSource(const RandomAccessFile& f, int64_t offset) : file_(f), pos_(offset) {}
  Result<int64_t> read(void* dst, int64_t n) override {
    int64_t got = 0;
    while (got < n) {
      auto r = file_.read(pos_, n - got, static_cast<uint8_t*>(dst) + got);
      if (!r.is_ok()) return r.status();
      if (*r == 0) break;
      got += *r;
      pos_ += *r;
    }
    return got;
  }
  Result<int64_t> skip(int64_t n) override {
    int64_t left = std::max<int64_t>(0, file_.size() - pos_);
    int64_t k = std::min(n, left);
    pos_ += k;
    return k;
  }
  // The next n bytes will be read soon (RandomAccessFile::will_need).
  void will_need(int64_t n) const { file_.will_need(pos_, n); }

 private:
  const RandomAccessFile& file_;
  int64_t pos_;
};

class MemoryByteSource : public ByteSource {
 public:
  explicit MemoryByteSource(std::string_view b) : bytes_(b) {}
  Result<int64_t> read(void* dst, int64_t n) override {
    int64_t k = std::min<int64_t>(n, int64_t(bytes_.size() - pos_));
    if (k > 0) std::memcpy(dst, bytes_.data() + pos_, size_t(k));
    pos_ += size_t(k);
    return k;
  }
  Result<int64_t> skip(int64_t n) override {
    int64_t k = std::min<int64_t>(n, int64_t(bytes_.size() - pos_));
    pos_ += size_t(k);
    return k;
  }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

}  // namespace

Result<int64_t> ByteSource::skip(int64_t n) {
  std::vector<uint8_t> scratch(size_t(std::min<int64_t>(n, 1 << 16)));
  int64_t done = 0;
  while (done < n) {
    auto r = read(scratch.data(), std::min<int64_t>(n - done, int64_t(scratch.size())));
    if (!r.is_ok()) return r.status();
    if (*r == 0) break;
    done += *r;
  }
  return done;
}

// FileByteSource with a buffer of whole blocks in front of it.
class ReadAheadByteSource : public ByteSource {
 public:
  ReadAheadByteSource(const RandomAccessFile& f, int64_t offset, int64_t block)
      : file_(f, offset), block_(block) {}
  Result<int64_t> read(void* dst, int64_t n) override {
    int64_t got = take(dst, n);
    if (got == n) return got;
    if (n - got >= block_) {  // a large read: no copy through the buffer
      HDL_ASSIGN_OR_RETURN(int64_t direct, file_.read(static_cast<uint8_t*>(dst) + got, n - got));
      return got + direct;
    }
    HDL_RETURN_IF_ERROR(refill());
    return got + take(static_cast<uint8_t*>(dst) + got, n - got);
  }
  Result<int64_t> skip(int64_t n) override {
    const int64_t buffered = std::min(n, int64_t(buffer_.size() - at_));
    at_ += size_t(buffered);
    if (buffered == n) return n;
    HDL_ASSIGN_OR_RETURN(int64_t skipped, file_.skip(n - buffered));
    return buffered + skipped;
  }

 private:
  int64_t take(void* dst, int64_t n) {
    const int64_t k = std::min(n, int64_t(buffer_.size() - at_));
    if (k > 0) std::memcpy(dst, buffer_.data() + at_, size_t(k));
    at_ += size_t(k);
    return k;
  }
  Status refill() {
    buffer_.resize(size_t(block_));
    at_ = 0;
    Result<int64_t> got = file_.read(buffer_.data(), block_);
    if (!got.is_ok()) {
      buffer_.clear();
      return got.status();
    }
    buffer_.resize(size_t(*got));
    // Double buffering: a remote file fetches the next block while this one is parsed.
    if (*got == block_) file_.will_need(block_);
    return Status::ok();
  }

  FileByteSource file_;
  int64_t block_;
  std::vector<uint8_t> buffer_;
  size_t at_ = 0;
};

std::unique_ptr<ByteSource> file_byte_source(const RandomAccessFile& file, int64_t offset, int64_t read_ahead) {
  if (read_ahead > 0) return std::make_unique<ReadAheadByteSource>(file, offset, read_ahead);
  return std::make_unique<FileByteSource>(file, offset);
}

int64_t stream_read_ahead(std::string_view shard_path) {
  return is_remote_url(shard_path) ? int64_t{8} << 20 : 0;
}

std::unique_ptr<ByteSource> memory_byte_source(std::string_view bytes) {
  return std::make_unique<MemoryByteSource>(bytes);
}

Status tar_error(StatusCode code, std::string_view shard, std::string_view key, int64_t offset,
                 std::string_view what) {
  std::string m = "tar shard \"" + std::string(shard) + "\"";
  if (!key.empty()) m += ": key \"" + std::string(key) + "\"";
  if (offset >= 0) m += ": byte " + std::to_string(offset);
  m += ": ";
  m += what;
  return Status(code, std::move(m));
}

TarReader::TarReader(ByteSource& source, std::string shard_name, TarLimits limits)
    : source_(source), shard_(std::move(shard_name)), limits_(limits) {}

Status TarReader::fail(Status s) {
  done_ = true;
  error_ = s;
  return s;
}

Status TarReader::error(StatusCode code, const std::string& name, int64_t offset,
                        const std::string& what) {
  std::string key, ext;
  if (!name.empty() && !split_member_name(name, &key, &ext)) key = name;  // no key: the name
  return fail(tar_error(code, shard_, key, offset, what));
}

// Reads one block; *at_end when the source ended exactly at the block boundary.
Status TarReader::read_block(uint8_t* block, bool* at_end) {
  auto r = source_.read(block, kTarBlockSize);
  if (!r.is_ok()) return fail(r.status().with_context("tar shard \"" + shard_ + "\": byte " +
                                                      std::to_string(pos_)));
  *at_end = *r == 0;
  if (*r != 0 && *r != kTarBlockSize)
    return error(StatusCode::kInvalidData, "", pos_,
                 "truncated tar: header cut short (" + std::to_string(*r) + " of 512 bytes)");
  pos_ += *r;
  return Status::ok();
}

Status TarReader::skip_data(int64_t n) {
  auto r = source_.skip(n);
  if (!r.is_ok()) return fail(r.status());
  pos_ += *r;
  return Status::ok();
}

// The data of an 'L', 'K', 'x' or 'g' member, bounded by `limit`.
Status TarReader::read_extension(int64_t size, int64_t limit, std::string* out) {
  out->resize(size_t(size));
  auto r = source_.read(out->data(), size);
  if (!r.is_ok()) return fail(r.status());
  if (*r != size)
    return error(StatusCode::kInvalidData, "", pos_,
                 "truncated tar: extended header data past the end of the file");
  pos_ += size;
  return skip_data(padded(size) - size);
}

Result<const TarMember*> TarReader::next() {
  if (done_) {
    if (!error_.is_ok()) return error_;
    return static_cast<const TarMember*>(nullptr);
  }
  if (pending_ > 0) {  // the rest of the current member (all of it when read_data was not called)
    int64_t start = pos_;
    HDL_RETURN_IF_ERROR(skip_data(pending_));
    // A member whose data ends at the end of the file without its padding is accepted (as
    // tarfile does); data itself cut short is not.
    int64_t unpadded = data_read_ ? 0 : member_.size;
    if (pos_ - start < unpadded)
      return error(StatusCode::kInvalidData, member_.name, member_.data_offset,
                   "truncated tar: member data (" + std::to_string(member_.size) +
                       " bytes) runs past the end of the file");
    pending_ = 0;
  }
  std::string long_name;
  bool have_long_name = false;
  std::unordered_map<std::string, std::string> pax;
  int64_t header_start = pos_;
  uint8_t b[kTarBlockSize];
  for (;;) {
    int64_t at = pos_;
    bool at_end = false;
    HDL_RETURN_IF_ERROR(read_block(b, &at_end));
    if (at_end || all_zero(b)) {
      if (have_long_name || !pax.empty())
        return error(StatusCode::kInvalidData, long_name, at,
                     "truncated tar: an extended header is not followed by its member");
      done_ = true;
      return static_cast<const TarMember*>(nullptr);
    }
    int64_t stored = 0, computed = 0;
    if (!checksum_ok(b, &stored, &computed)) {
      if (at == 0) {
        if (const char* c = compression_magic(b))
          return error(StatusCode::kUnsupported, "", 0,
                       std::string("a ") + c + " stream, not a plain tar: name the shard .tar.gz "
                       "(or .tgz) to read it compressed");
        if (std::memcmp(b + kMagic, "ustar", 5) != 0)
          return error(StatusCode::kInvalidData, "", 0,
                       "not a tar file (no ustar magic and no valid header checksum)");
      }
      return error(StatusCode::kInvalidData, field_string(b + kName, kNameLen), at,
                   "bad tar header checksum (stored " +
                       (stored < 0 ? std::string("unreadable") : std::to_string(stored)) +
                       ", computed " + std::to_string(computed) + ")");
    }
    const bool posix = std::memcmp(b + kMagic, "ustar\0", 6) == 0;
    std::string name = field_string(b + kName, kNameLen);
    if (posix && b[kPrefix] != 0) name = field_string(b + kPrefix, kPrefixLen) + "/" + name;
    char type = char(b[kType]);
    int64_t size = 0;
    if (!parse_number(b + kSize, kSizeLen, &size))
      return error(StatusCode::kInvalidData, name, at, "malformed size field in tar header");
    // Extended headers describe the next member.
    if (type == 'L' || type == 'K' || type == 'x' || type == 'g') {
      const bool is_pax = type == 'x' || type == 'g';
      int64_t limit = is_pax ? limits_.max_pax_bytes : limits_.max_name_bytes;
      if (size > limit)
        return error(StatusCode::kResourceExhausted, "", at,
                     std::string("tar extended header '") + type + "' of " + std::to_string(size) +
                         " bytes is over the limit of " + std::to_string(limit));
      std::string data;
      HDL_RETURN_IF_ERROR(read_extension(size, limit, &data));
      if (type == 'L') {
        long_name = data.substr(0, data.find('\0'));
        have_long_name = true;
      } else if (is_pax) {
        auto& into = type == 'x' ? pax : global_pax_;
        if (!parse_pax(data, &into))
          return error(StatusCode::kInvalidData, "", at, "malformed PAX extended header");
      }
      continue;  // 'K' (a long link name) is read and dropped: links are skipped anyway
    }
    // PAX records: global ones under the member's own (tarfile's order).
    auto pax_value = [&](const std::string& key) -> const std::string* {
      if (auto it = pax.find(key); it != pax.end()) return &it->second;
      if (auto it = global_pax_.find(key); it != global_pax_.end()) return &it->second;
      return nullptr;
    };
    if (have_long_name) name = long_name;
    if (const std::string* p = pax_value("path")) name = *p;
    if (const std::string* s = pax_value("size")) {
      const std::string& v = *s;
      if (v.empty() || v.size() > 18 || v.find_first_not_of("0123456789") != std::string::npos)
        return error(StatusCode::kInvalidData, name, at, "malformed PAX size \"" + v + "\"");
      size = std::stoll(v);
    }
    if (pax_value("GNU.sparse.major") || pax_value("GNU.sparse.size") ||
        pax_value("GNU.sparse.map") || type == 'S')
      return error(StatusCode::kUnsupported, name, at, "GNU sparse tar members are not supported");
    if (type == '\0' && !name.empty() && name.back() == '/') type = '5';  // old-style directory
    const bool regular = type == '0' || type == '\0' || type == '7';
    // tarfile: links, devices, directories and FIFOs carry no data whatever their size says.
    const bool no_data = type >= '1' && type <= '6';
    if (regular && size > limits_.max_member_bytes)
      return error(StatusCode::kResourceExhausted, name, at,
                   "tar member of " + std::to_string(size) + " bytes is over the limit of " +
                       std::to_string(limits_.max_member_bytes) + " (TarLimits::max_member_bytes)");
    if (!regular) {
      if (!no_data) {
        int64_t start = pos_;
        HDL_RETURN_IF_ERROR(skip_data(padded(size)));
        if (pos_ - start < size)
          return error(StatusCode::kInvalidData, name, at,
                       "truncated tar: member data runs past the end of the file");
      }
      have_long_name = false;
      pax.clear();
      header_start = pos_;
      continue;
    }
    member_.name = std::move(name);
    member_.header_offset = header_start;
    member_.data_offset = pos_;
    member_.size = size;
    pending_ = padded(size);
    data_read_ = false;
    return static_cast<const TarMember*>(&member_);
  }
}

Status TarReader::read_data(void* dst) {
  if (done_ && !error_.is_ok()) return error_;
  if (data_read_) return Status::internal("TarReader::read_data called twice for one member");
  data_read_ = true;
  auto r = source_.read(dst, member_.size);
  if (!r.is_ok()) return fail(r.status());
  pos_ += *r;
  if (*r != member_.size)
    return error(StatusCode::kInvalidData, member_.name, member_.data_offset,
                 "truncated tar: member data (" + std::to_string(member_.size) +
                     " bytes) runs past the end of the file (got " + std::to_string(*r) + ")");
  pending_ = padded(member_.size) - member_.size;
  return Status::ok();
}

}  // namespace hdl
