#include "media/detail/cache_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

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
  std::filesystem::create_directories(dir_, ec);
  if (ec) throw std::invalid_argument("cache_dir \"" + dir_ + "\": cannot create it: " + ec.message());
  dir_fd_ = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd_ < 0) throw std::invalid_argument("cache_dir \"" + dir_ + "\": cannot open it: " + std::strerror(errno));
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
  if (st.st_size != size) return -1;  // truncated or changed by hand: a miss, replaced by its download
  (void)::futimens(fd.fd, nullptr);    // most recently used (best effort: another user's entry stays old)
  return fd.release();
}

int CacheDir::lock_index() {
  const int fd = ::openat(dir_fd_, ".lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
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
  FdCloser fd{::openat(dir_fd_, part.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644)};
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
    if (index.fd < 0 || !make_room(size, name)) {
      abandon();
      return Fill::kNoRoom;
    }
    if (::ftruncate(fd.fd, off_t(size)) != 0) {  // the reservation other scans count
      *error = Status::io_error("cache_dir \"" + dir_ + "\": cannot reserve " + std::to_string(size) +
                                " bytes: " + std::strerror(errno));
      abandon();
      return Fill::kFailed;
    }
  }
  std::vector<char> buffer(size_t(std::min(size, kChunk)));
  for (int64_t at = 0; at < size; at += kChunk) {
    const int64_t n = std::min(kChunk, size - at);
    Status st = read_exactly(remote, at, n, buffer.data());
    if (st.is_ok()) st = pwrite_all(fd.fd, buffer.data(), n, at);
    if (!st.is_ok()) {
      *error = st;
      abandon();
      return Fill::kFailed;
    }
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
  *out = fd.release();
  return Fill::kDone;
}

}  // namespace hdl::detail
