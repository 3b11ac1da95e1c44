#include "media/detail/cache_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "media/detail/crc32c.h"
#include "media/detail/sha256.h"

namespace hdl::detail {
namespace {

constexpr size_t kHash = 64, kStamp = 16;
constexpr int64_t kChunk = int64_t(8) << 20;  // download in 8 MiB range reads
constexpr const char* kPart = ".part";

bool is_hex(const std::string& s, size_t from, size_t n) {
  for (size_t i = from; i < from + n; ++i)
    if (!std::isxdigit(static_cast<unsigned char>(s[i])) || std::isupper(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

int flock_retry(int fd, int op) {
  int r;
  do r = ::flock(fd, op);
  while (r != 0 && errno == EINTR);
  return r;
}

// Closes a descriptor on every return path.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
  int release() { return std::exchange(fd, -1); }
};

constexpr char kMagic[8] = {'h', 'd', 'l', '-', 'c', 'r', 'c', '1'};

void put_le(unsigned char* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
uint64_t get_le(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

// The footer of an entry of `size` bytes whose CRC-32C is `crc` (cache_dir.h).
std::array<unsigned char, kCacheFooterBytes> footer(int64_t size, uint32_t crc) {
  std::array<unsigned char, kCacheFooterBytes> f{};
  std::memcpy(f.data(), kMagic, 8);
  put_le(f.data() + 8, uint64_t(size), 8);
  put_le(f.data() + 16, crc, 4);
  put_le(f.data() + 20, crc32c(f.data(), 20), 4);
  return f;
}

Status pwrite_all(int fd, const char* p, int64_t n, int64_t offset) {
  while (n > 0) {
    const ssize_t w = ::pwrite(fd, p, size_t(n), off_t(offset));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return Status::io_error(std::string("cannot write a cache entry: ") + std::strerror(w < 0 ? errno : ENOSPC));
    p += w, n -= w, offset += w;
  }
  return Status::ok();
}

}  // namespace

CacheDir::CacheDir(std::string dir, int64_t limit_bytes, bool fsync)
    : dir_(std::move(dir)), limit_(limit_bytes), fsync_(fsync) {
  if (limit_ <= 0) throw std::invalid_argument("cache_limit must be a positive number of bytes, got " + std::to_string(limit_));
  std::error_code ec;
  const std::filesystem::path path(dir_);
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  // The cache itself is created for this user alone (private objects are read into it).
  if (!ec && ::mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST) ec = std::error_code(errno, std::generic_category());
  if (ec) throw std::invalid_argument("cache_dir \"" + dir_ + "\": cannot create it: " + ec.message());
  dir_fd_ = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (dir_fd_ < 0) throw std::invalid_argument("cache_dir \"" + dir_ + "\": cannot open it: " + std::strerror(errno));
  struct stat st {};
  const auto refuse = [&](const std::string& why) {
    ::close(dir_fd_);
    dir_fd_ = -1;
    throw std::invalid_argument("cache_dir \"" + dir_ + "\": " + why);
  };
  if (::fstat(dir_fd_, &st) != 0) refuse(std::string("cannot stat it: ") + std::strerror(errno));
  if (st.st_uid != ::geteuid())
    refuse("it belongs to uid " + std::to_string(st.st_uid) + ", not to this user (uid " + std::to_string(::geteuid()) +
           "): another user could put files under the names the cache reads; use a directory of your own");
  if (st.st_mode & 0022)
    refuse("others may write to it (mode " + std::to_string((st.st_mode >> 6) & 7) + std::to_string((st.st_mode >> 3) & 7) +
           std::to_string(st.st_mode & 7) + "): they could put files under the names the cache reads; chmod 700 it, or "
           "use another directory");
  if ((st.st_mode & 0077) && ::fchmod(dir_fd_, 0700) != 0)  // an older cache's 0755: made private
    refuse(std::string("cannot make it private (chmod 700): ") + std::strerror(errno));
  // File times come from the kernel's coarse clock: compare them with the same clock.
  ::clock_gettime(CLOCK_REALTIME_COARSE, &created_);
  if (::faccessat(dir_fd_, ".", W_OK, 0) != 0) {
    const int err = errno;
    ::close(dir_fd_);
    throw std::invalid_argument("cache_dir \"" + dir_ + "\": cannot write to it: " + std::strerror(err));
  }
}

CacheDir::~CacheDir() {
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

std::string CacheDir::entry_name(const std::string& url, int64_t stamp) {
  std::string canonical = url.substr(0, url.find_first_of("?#"));
  const size_t scheme = canonical.find("://");
  const size_t host_end = scheme == std::string::npos ? 0 : canonical.find('/', scheme + 3);
  for (size_t i = 0; i < std::min(host_end, canonical.size()); ++i)
    canonical[i] = char(std::tolower(static_cast<unsigned char>(canonical[i])));
  std::string segment = canonical.substr(canonical.find_last_of('/') + 1);
  if (segment.size() > 64) segment = segment.substr(segment.size() - 64);  // the end holds the extension
  for (char& c : segment)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  char stamp_hex[kStamp + 1];
  std::snprintf(stamp_hex, sizeof stamp_hex, "%016llx", static_cast<unsigned long long>(stamp));
  return sha256_hex(canonical) + "-" + stamp_hex + "-" + segment;
}

bool CacheDir::is_entry_name(const std::string& name) {
  return name.size() >= kHash + kStamp + 2 && is_hex(name, 0, kHash) && name[kHash] == '-' &&
         is_hex(name, kHash + 1, kStamp) && name[kHash + 1 + kStamp] == '-';
}

int CacheDir::open_entry(const std::string& name, int64_t size) {
  FdCloser fd{::openat(dir_fd_, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)};
  if (fd.fd < 0) return -1;
  // Blocks only while an eviction holds it (a directory scan's unlink), never for a download.
  if (flock_retry(fd.fd, LOCK_SH) != 0) return -1;
  struct stat st {};
  // Unlinked after we opened it (evicted, or replaced by a fresher download): not the entry.
  if (::fstat(fd.fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink == 0) return -1;
  // Truncated or changed by hand: a miss, replaced by its download. Not this user's: never
  // served (nor touched).
  if (st.st_size != size + kCacheFooterBytes || st.st_uid != ::geteuid()) return -1;
  if (!verified(fd.fd, size)) {
    // Its bytes are not what was written (a region zeroed by a crash, a planted file): a miss,
    // removed when nobody else has it open, downloaded again.
    counters_.corrupt.fetch_add(1, std::memory_order_relaxed);
    if (flock_retry(fd.fd, LOCK_EX | LOCK_NB) == 0) ::unlinkat(dir_fd_, name.c_str(), 0);
    return -1;
  }
  if (st.st_mode & 0077) (void)::fchmod(fd.fd, 0600);  // an older cache's 0644 entry: made private
  (void)::futimens(fd.fd, nullptr);    // most recently used
  return fd.release();
}

bool CacheDir::verified(int fd, int64_t size) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return false;
  const std::pair<uint64_t, uint64_t> id{uint64_t(st.st_dev), uint64_t(st.st_ino)};
  {
    std::lock_guard lock(verified_mu_);
    if (verified_.count(id)) return true;
  }
  std::array<unsigned char, kCacheFooterBytes> f{};
  if (::pread(fd, f.data(), f.size(), off_t(size)) != ssize_t(f.size())) return false;
  const uint32_t crc = uint32_t(get_le(f.data() + 16, 4));
  if (f != footer(size, crc)) return false;  // magic, size and the footer's own CRC
  std::vector<char> buffer(size_t(std::min<int64_t>(size, int64_t(1) << 20)) + 1);
  uint32_t c = 0;
  for (int64_t at = 0; at < size;) {
    const ssize_t got = ::pread(fd, buffer.data(), size_t(std::min<int64_t>(int64_t(buffer.size()), size - at)), off_t(at));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    c = crc32c(buffer.data(), size_t(got), c);
    at += got;
  }
  if (c != crc) return false;
  std::lock_guard lock(verified_mu_);
  verified_.insert(id);
  return true;
}

int CacheDir::lock_index() {
  const int fd = ::openat(dir_fd_, ".lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd >= 0 && flock_retry(fd, LOCK_EX) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool CacheDir::make_room(int64_t bytes, const std::string& name) {
  struct Item {
    std::string name;
    int64_t size;
    struct timespec mtime;
    ino_t ino;
    bool stale;  // another stamp of the object being downloaded: evicted first
    bool ours;   // used since this cache was made: this job's working set, kept
  };
  std::vector<Item> items;
  int64_t used = 0;
  const int scan_fd = ::dup(dir_fd_);
  DIR* d = scan_fd >= 0 ? ::fdopendir(scan_fd) : nullptr;
  if (!d) {
    if (scan_fd >= 0) ::close(scan_fd);
    return false;
  }
  ::rewinddir(d);
  while (const dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    struct stat st {};
    if (!is_entry_name(n) || ::fstatat(dir_fd_, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
      continue;
    used += st.st_size;
    const bool stale = n.compare(0, kHash, name, 0, kHash) == 0 && n.compare(0, name.size(), name) != 0;
    const bool ours = st.st_mtim.tv_sec > created_.tv_sec ||
                      (st.st_mtim.tv_sec == created_.tv_sec && st.st_mtim.tv_nsec >= created_.tv_nsec);
    items.push_back({n, int64_t(st.st_size), st.st_mtim, st.st_ino, stale, ours && !stale});
  }
  ::closedir(d);
  if (used + bytes <= limit_) return true;
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    if (a.stale != b.stale) return a.stale;
    if (a.mtime.tv_sec != b.mtime.tv_sec) return a.mtime.tv_sec < b.mtime.tv_sec;
    return a.mtime.tv_nsec < b.mtime.tv_nsec;
  });
  for (const Item& it : items) {
    if (used + bytes <= limit_) break;
    if (it.ours) continue;
    FdCloser fd{::openat(dir_fd_, it.name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)};
    if (fd.fd < 0) continue;
    // In use (a reader's shared lock, a download's exclusive one): kept.
    if (flock_retry(fd.fd, LOCK_EX | LOCK_NB) != 0) continue;
    struct stat st {};
    if (::fstat(fd.fd, &st) != 0 || st.st_ino != it.ino || st.st_nlink == 0) continue;
    if (::unlinkat(dir_fd_, it.name.c_str(), 0) != 0) continue;
    used -= it.size;
    counters_.evictions.fetch_add(1, std::memory_order_relaxed);
  }
  return used + bytes <= limit_;
}

CacheDir::Fill CacheDir::fill(const RandomAccessFile& remote, const std::string& name, int* out, Status* error) {
  const int64_t size = remote.size();
  if (size > limit_) return Fill::kNoRoom;
  const std::string part = name + kPart;
  FdCloser fd{::openat(dir_fd_, part.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)};
  if (fd.fd < 0) {
    *error = Status::io_error("cache_dir \"" + dir_ + "\": cannot create " + part + ": " + std::strerror(errno));
    return Fill::kFailed;
  }
  if (flock_retry(fd.fd, LOCK_EX | LOCK_NB) != 0) return Fill::kBusy;  // someone is downloading it
  // The lock is ours, but is the file still the one at that name? (Its download may have just
  // been renamed into place, or abandoned and removed.)
  struct stat mine {}, named {};
  if (::fstat(fd.fd, &mine) != 0 || ::fstatat(dir_fd_, part.c_str(), &named, AT_SYMLINK_NOFOLLOW) != 0 ||
      mine.st_ino != named.st_ino || mine.st_dev != named.st_dev)
    return Fill::kBusy;
  auto abandon = [&] { ::unlinkat(dir_fd_, part.c_str(), 0); };  // while locked: nobody else uses it
  if (const int entry = open_entry(name, size); entry >= 0) {  // finished while we looked
    abandon();
    *out = entry;
    return Fill::kDone;
  }
  {
    FdCloser index{lock_index()};
    if (index.fd < 0 || !make_room(size + kCacheFooterBytes, name)) {
      abandon();
      return Fill::kNoRoom;
    }
    if (::ftruncate(fd.fd, off_t(size + kCacheFooterBytes)) != 0) {  // the reservation other scans count
      *error = Status::io_error("cache_dir \"" + dir_ + "\": cannot reserve " + std::to_string(size) +
                                " bytes: " + std::strerror(errno));
      abandon();
      return Fill::kFailed;
    }
  }
  std::vector<char> buffer(size_t(std::min(size, kChunk)));
  uint32_t crc = 0;
  for (int64_t at = 0; at < size; at += kChunk) {
    const int64_t n = std::min(kChunk, size - at);
    Status st = read_exactly(remote, at, n, buffer.data());
    if (st.is_ok()) st = pwrite_all(fd.fd, buffer.data(), n, at);
    if (!st.is_ok()) {
      *error = st;
      abandon();
      return Fill::kFailed;
    }
    crc = crc32c(buffer.data(), size_t(n), crc);
  }
  const auto f = footer(size, crc);
  if (Status st = pwrite_all(fd.fd, reinterpret_cast<const char*>(f.data()), kCacheFooterBytes, size); !st.is_ok()) {
    *error = st;
    abandon();
    return Fill::kFailed;
  }
  if (fsync_ && ::fdatasync(fd.fd) != 0) {
    *error = Status::io_error("cache_dir \"" + dir_ + "\": fdatasync: " + std::strerror(errno));
    abandon();
    return Fill::kFailed;
  }
  counters_.bytes_written.fetch_add(size, std::memory_order_relaxed);
  // Renamed and downgraded to a reader's shared lock under the index lock, so that no eviction
  // can slip into the moment the lock is converted.
  FdCloser index{lock_index()};
  if (::renameat(dir_fd_, part.c_str(), dir_fd_, name.c_str()) != 0) {
    *error = Status::io_error("cache_dir \"" + dir_ + "\": cannot rename " + part + ": " + std::strerror(errno));
    abandon();
    return Fill::kFailed;
  }
  (void)::futimens(fd.fd, nullptr);
  if (flock_retry(fd.fd, LOCK_SH) != 0) return Fill::kFailed;  // (the entry stays, complete)
  if (struct stat st {}; ::fstat(fd.fd, &st) == 0) {  // its CRC was computed from the bytes written
    std::lock_guard lock(verified_mu_);
    verified_.insert({uint64_t(st.st_dev), uint64_t(st.st_ino)});
  }
  *out = fd.release();
  return Fill::kDone;
}

}  // namespace hdl::detail
