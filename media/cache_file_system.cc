// cached_file_system(), CacheOptions and parse_byte_size() (media/cache_file_system.h); the
// directory's protocol is media/detail/cache_dir.cc.
#include "media/cache_file_system.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <stdexcept>

#include "media/detail/cache_dir.h"
#include "media/detail/http_client.h"
#include "media/url_file_system.h"

namespace hdl {
namespace {

constexpr int64_t kSmallRead = 1024;  // tar headers, labels: never worth a whole download

// A remote object read through the cache: from its entry once there is one (fd_ >= 0, a shared
// flock held until destruction), else from the remote file.
class CachedFile final : public RandomAccessFile {
 public:
  CachedFile(std::shared_ptr<detail::CacheDir> dir, std::unique_ptr<RandomAccessFile> remote, std::string name, int fd)
      : dir_(std::move(dir)), remote_(std::move(remote)), name_(std::move(name)), size_(remote_->size()), fd_(fd) {}
  ~CachedFile() override {
    if (const int fd = fd_.load(); fd >= 0) ::close(fd);
  }
  CachedFile(const CachedFile&) = delete;
  CachedFile& operator=(const CachedFile&) = delete;

  int64_t size() const override { return size_; }
  int64_t modified_ns() const override { return remote_->modified_ns(); }
  std::string version() const override { return remote_->version(); }
  // Only an object that streams (never cached) is worth prefetching: the rest are read whole
  // into the cache, or already are.
  void will_need(int64_t offset, int64_t n) const override {
    bool streaming;
    {
      std::lock_guard lock(mu_);
      streaming = streaming_;
    }
    if (streaming && fd_.load(std::memory_order_acquire) < 0) remote_->will_need(offset, n);
  }

  Result<int64_t> read(int64_t offset, int64_t n, void* dst) const override {
    if (offset < 0 || n < 0) return Status::invalid_argument("negative offset or length");
    if (offset >= size_ || n == 0) return int64_t{0};
    n = std::min(n, size_ - offset);
    int fd = fd_.load(std::memory_order_acquire);
    if (fd < 0) fd = try_entry(n > kSmallRead || (offset == 0 && n == size_));
    if (fd < 0) return remote_->read(offset, n, dst);
    for (;;) {
      const ssize_t got = ::pread(fd, dst, size_t(n), off_t(offset));
      if (got >= 0) {
        dir_->counters().bytes_read.fetch_add(got, std::memory_order_relaxed);
        return int64_t(got);
      }
      if (errno != EINTR) return errno_status(errno).with_context("cache entry \"" + dir_->dir() + "/" + name_ + "\"");
    }
  }

 private:
  // The entry's descriptor, found (another file object or process downloaded it) or, when
  // `download`, downloaded; -1 when this read goes to the remote: a small read before any
  // download was asked for, another thread of this file downloading, another file object or
  // process downloading it (then every later read looks for the entry again: a failed openat
  // is one system call, a remote read a round trip), or the object is streamed.
  int try_entry(bool download) const {
    {
      std::lock_guard lock(mu_);
      if (const int fd = fd_.load(); fd >= 0) return fd;
      if (filling_ || streaming_ || (!download && !busy_)) return -1;
      filling_ = true;
    }
    int fd = dir_->open_entry(name_, size_);
    detail::CacheDir::Fill r = fd >= 0 ? detail::CacheDir::Fill::kDone : detail::CacheDir::Fill::kBusy;
    Status error;
    if (fd < 0 && download) r = dir_->fill(*remote_, name_, &fd, &error);
    std::lock_guard lock(mu_);
    filling_ = false;
    switch (r) {
      case detail::CacheDir::Fill::kDone: fd_.store(fd, std::memory_order_release); return fd;
      case detail::CacheDir::Fill::kBusy: busy_ = true; return -1;
      case detail::CacheDir::Fill::kNoRoom:
      case detail::CacheDir::Fill::kFailed:
        // A failed download leaves nothing behind; its reads go to the remote, which reports
        // its own error if it still has one.
        streaming_ = true;
        dir_->counters().streamed.fetch_add(1, std::memory_order_relaxed);
        return -1;
    }
    return -1;
  }

  std::shared_ptr<detail::CacheDir> dir_;
  std::unique_ptr<RandomAccessFile> remote_;
  std::string name_;
  int64_t size_;
  mutable std::atomic<int> fd_;
  mutable std::mutex mu_;
  mutable bool filling_ = false, streaming_ = false, busy_ = false;
};

class CachingFileSystem final : public RemoteFileSystem {
 public:
  CachingFileSystem(std::shared_ptr<RemoteFileSystem> inner, const CacheOptions& o)
      : inner_(std::move(inner)), dir_(std::make_shared<detail::CacheDir>(o.dir, o.limit_bytes, o.fsync)) {}

  Result<std::unique_ptr<RandomAccessFile>> open(const std::string& path) override {
    HDL_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> remote, inner_->open(path));
    if (!is_remote_url(path)) return remote;  // a local file: nothing to cache
    std::string name = detail::CacheDir::entry_name(path, detail::object_stamp(remote->version(), remote->modified_ns()));
    const int fd = dir_->open_entry(name, remote->size());
    (fd >= 0 ? dir_->counters().hits : dir_->counters().misses).fetch_add(1, std::memory_order_relaxed);
    return std::unique_ptr<RandomAccessFile>(std::make_unique<CachedFile>(dir_, std::move(remote), std::move(name), fd));
  }
  RemoteStats stats() const override { return inner_->stats(); }
  Result<std::vector<RemoteObject>> list(const std::string& prefix) override { return inner_->list(prefix); }
  std::vector<std::pair<std::string, int64_t>> counters() const override {
    std::vector<std::pair<std::string, int64_t>> c = inner_->counters();
    const detail::CacheCounters& k = dir_->counters();
    c.insert(c.end(), {{"cache_hits", k.hits.load()},
                       {"cache_misses", k.misses.load()},
                       {"cache_bytes_read", k.bytes_read.load()},
                       {"cache_bytes_written", k.bytes_written.load()},
                       {"cache_evictions", k.evictions.load()},
                       {"cache_streamed", k.streamed.load()},
                       {"cache_corrupt", k.corrupt.load()}});
    return c;
  }
  const std::shared_ptr<RemoteFileSystem>& inner() const { return inner_; }

 private:
  std::shared_ptr<RemoteFileSystem> inner_;
  std::shared_ptr<detail::CacheDir> dir_;
};

}  // namespace

int64_t parse_byte_size(std::string_view text, std::string_view what) {
  const std::string s(text);
  auto bad = [&]() -> std::invalid_argument {
    return std::invalid_argument(std::string(what) + ": \"" + s + "\" is not a size (bytes, or a number with K, M, G "
                                 "or T: \"500M\", \"10G\")");
  };
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(s.c_str(), &end);
  if (s.empty() || end == s.c_str() || errno != 0 || !std::isfinite(x) || x <= 0 || !std::isdigit(static_cast<unsigned char>(s[0])))
    throw bad();
  std::string unit(end);
  for (char& c : unit) c = char(std::toupper(static_cast<unsigned char>(c)));
  double scale = 1;
  if (!unit.empty()) {
    const size_t k = std::string("KMGT").find(unit[0]);
    if (k == std::string::npos) {
      if (unit != "B") throw bad();
    } else {
      scale = std::ldexp(1.0, 10 * int(k + 1));
      const std::string rest = unit.substr(1);
      if (!rest.empty() && rest != "B" && rest != "I" && rest != "IB") throw bad();
    }
  }
  const double bytes = x * scale;
  if (bytes < 1 || bytes > 9.0e18) throw bad();
  return int64_t(bytes);
}

CacheOptions CacheOptions::from_environment() {
  CacheOptions o;
  if (const char* d = std::getenv("HDL_CACHE_DIR"); d && *d) o.dir = d;
  if (const char* l = std::getenv("HDL_CACHE_LIMIT"); l && *l) o.limit_bytes = parse_byte_size(l, "HDL_CACHE_LIMIT");
  return o;
}

std::shared_ptr<RemoteFileSystem> cached_file_system(std::shared_ptr<RemoteFileSystem> inner, const CacheOptions& options) {
  if (options.dir.empty()) return inner;
  return std::make_shared<CachingFileSystem>(std::move(inner), options);
}

std::shared_ptr<RemoteFileSystem> default_file_system(const CacheOptions& cache) {
  std::shared_ptr<RemoteFileSystem> base = default_file_system();
  if (cache.dir.empty()) return base;
  if (const auto* cached = dynamic_cast<const CachingFileSystem*>(base.get())) base = cached->inner();
  return cached_file_system(std::move(base), cache);
}

}  // namespace hdl
