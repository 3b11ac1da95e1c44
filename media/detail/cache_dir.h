// Private to media/cache_file_system.cc: the cache's directory on disk (entry names, the
// flock protocol, room-making by LRU eviction, downloads written atomically). The protocol is
// described in media/cache_file_system.h.
//
// Thread safety: every method may be called concurrently, from threads and from processes
// sharing the directory; the counters are relaxed atomics.
#pragma once

#include "media/api.h"
#include <atomic>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include <time.h>

#include "media/file_system.h"
#include "media/status.h"

HDL_API_BEGIN  // exported for the tests (tests/media/cache_file_system_test.cc)
namespace hdl::detail {

struct CacheCounters {
  std::atomic<int64_t> hits{0}, misses{0}, bytes_read{0}, bytes_written{0}, evictions{0}, streamed{0}, corrupt{0};
};

/// Every entry ends with this footer after the object's bytes (little-endian): the magic
/// "hdl-crc1", the object's size (u64), the CRC-32C of its bytes (u32, media/detail/crc32c.h)
/// and the CRC-32C of the 20 bytes before it (u32).
constexpr int64_t kCacheFooterBytes = 24;

/// The directory is this user's alone: created 0700 (an existing one of this user's with group
/// or other bits is made 0700), entries and the lock file 0600; a directory owned by another
/// user, or writable by others, is refused. An entry is served only when it is a regular file
/// of this user's, of the object's size plus its footer, whose footer and CRC-32C agree with
/// its bytes (read once per entry file per CacheDir): anything else (a region zeroed by a
/// crash, a file planted under the predictable name) is a miss, removed and downloaded again
/// (counted as cache_corrupt).
class CacheDir {
 public:
  /// Creates `dir` (with parents) when missing. Throws std::invalid_argument naming it when it
  /// cannot be created, opened or written, when it belongs to another user or others may
  /// write to it, or when limit_bytes <= 0.
  CacheDir(std::string dir, int64_t limit_bytes, bool fsync);
  ~CacheDir();
  CacheDir(const CacheDir&) = delete;
  CacheDir& operator=(const CacheDir&) = delete;

  /// The entry name of `url` (query and fragment dropped, scheme and host lower-cased) at
  /// `stamp`: "<sha256 hex>-<stamp as 16 hex>-<last path segment, [A-Za-z0-9._-] only>".
  static std::string entry_name(const std::string& url, int64_t stamp);
  /// True for names entry_name() makes (and those names + ".part"): all the cache ever
  /// counts or removes.
  static bool is_entry_name(const std::string& name);

  /// The entry `name` when it is there, linked, this user's, and holds exactly `size` bytes of
  /// the object whose footer checks out: a read-only descriptor holding a shared flock (its
  /// mtime set to now: most recently used); else -1 (a corrupt one is removed).
  int open_entry(const std::string& name, int64_t size);

  enum class Fill { kDone, kBusy, kNoRoom, kFailed };
  /// Downloads `remote` (all remote.size() bytes) into the entry `name`: kDone with *fd as
  /// open_entry() gives it; kBusy when another thread or process is downloading it; kNoRoom
  /// when it is larger than the limit or the entries that could be evicted do not make room;
  /// kFailed with *error (a read or a write failed; nothing is left behind).
  Fill fill(const RandomAccessFile& remote, const std::string& name, int* fd, Status* error);

  const std::string& dir() const { return dir_; }
  int64_t limit_bytes() const { return limit_; }
  CacheCounters& counters() { return counters_; }

 private:
  int lock_index();  // the directory-wide lock (blocking); returns its fd, closed to release
  bool make_room(int64_t bytes, const std::string& name);  // under lock_index()
  // Whether the entry open as `fd` (of `size` object bytes) has its footer and its CRC; each
  // entry file (device, inode) is read once by this CacheDir.
  bool verified(int fd, int64_t size);

  std::string dir_;
  int64_t limit_;
  bool fsync_;
  int dir_fd_ = -1;
  struct timespec created_ {};  // entries used since (mtime >= created_) are never evicted by this cache
  CacheCounters counters_;
  std::mutex verified_mu_;
  std::set<std::pair<uint64_t, uint64_t>> verified_;  // (st_dev, st_ino) of entries whose CRC was checked
};

}  // namespace hdl::detail
HDL_API_END
