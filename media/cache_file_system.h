// A local disk cache of remote objects behind the FileSystem seam (issue 24): a decorator over
// a RemoteFileSystem (media/remote_file_system.h) that keeps whole objects in a directory,
// shared by every process and rank of the machine that names the same directory.
//
// What it does, per open(path) of an http(s):// or s3:// URL (other paths go to the inner file
// system untouched):
// - open asks the remote as before (a HEAD: size and stamp, a hash of the ETag, else
//   Last-Modified), so a changed object is never served stale: an entry is named by the SHA-256 of the
//   URL (less its query string and fragment, scheme and host lower-cased), the stamp, and the
//   URL's last path segment reduced to [A-Za-z0-9._-] ("<64 hex>-<16 hex>-shard-000.tar"); no
//   URL can name a path outside the directory. An entry whose size is not the remote's (plus
//   its footer), or whose bytes fail their CRC (truncated, corrupted, planted), is a miss and
//   is replaced.
// - a hit reads the entry (pread); no range GET is sent. A miss reads through the remote until
//   the first read of more than 1 KiB, or of the whole object (so that building a shard's
//   index from its tar headers sends no whole-object download), which downloads the whole
//   object into "<entry>.part" (8 MiB range reads through the remote file, so retries apply),
//   fsyncs it (CacheOptions::fsync) and renames it into place; every read of that file is then
//   local. Other threads reading the same file meanwhile go to the remote and do not wait.
// - an object larger than limit_bytes, or one there is no room for because every entry is in
//   use, is streamed: read from the remote, never cached (counted as cache_streamed). Nothing
//   ever waits for room, so there is no deadlock, and a working set larger than the cache
//   keeps what fits instead of evicting in turn (no thrash).
//
// Sharing between processes and threads (flock(2), advisory, on a local file system):
// - every open entry holds a shared lock on its file for as long as the RandomAccessFile lives;
// - a download holds an exclusive lock on its ".part" file; a second process (or thread) that
//   misses the same object finds it locked and streams its reads until the entry appears (it
//   looks for it again on each read), so an object is downloaded once, or at worst twice;
//   never is a partly written file visible under an entry's name (rename is atomic);
// - room is made under an exclusive lock on "<dir>/.lock" (held for a directory scan, never
//   across a download): the entries by least recent use (mtime, set on every open that hits),
//   each removed only if an exclusive non-blocking lock on it succeeds, so an entry being read
//   is never deleted; ".part" files of a crashed process (unlocked) are removed the same way.
//   Only files whose names have the entry pattern are ever counted or removed.
// - what a cache has used since it was made (the entries this job and its other ranks have
//   opened or written: mtime since then) it never evicts, except another version of the object
//   being downloaded: an epoch over a data set larger than the cache then keeps what fits and
//   streams the rest, where plain LRU would evict every shard before its next use (a cyclic
//   scan, LRU's worst case) and download the data set into the cache again every epoch. LRU
//   order applies to the entries of earlier jobs, which make room for this one's.
//
// Counters (counters(), in pipe.stats() through the reader's): the inner file system's, then
// cache_hits and cache_misses (opens of remote objects), cache_bytes_read (served from
// entries), cache_bytes_written (downloaded into entries), cache_evictions, cache_streamed,
// cache_corrupt (entries whose bytes did not match their CRC-32C, or with no valid footer:
// removed and downloaded again).
//
// Privacy and integrity (media/detail/cache_dir.h): the directory is this user's alone (0700,
// entries 0600; one owned by another user or writable by others is refused), and each entry
// carries the CRC-32C of its bytes in a 24-byte footer, checked before a process first serves
// it: a zeroed region or a file planted under an entry's name is never served as data.
//
// Thread safety: as FileSystem; everything may be called from any number of threads and
// processes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "media/api.h"
#include "media/remote_file_system.h"

HDL_API_BEGIN
namespace hdl {

/// Where and how much to cache. Every field has its default in the comment.
struct CacheOptions {
  std::string dir;                            ///< "": no cache; created (with parents) if missing
  int64_t limit_bytes = int64_t(10) << 30;    ///< the most the entries may hold: 10 GiB
  bool fsync = true;                          ///< fsync an entry before it is renamed into place

  /// CacheOptions from the environment: HDL_CACHE_DIR (unset or "": no cache) and
  /// HDL_CACHE_LIMIT (parse_byte_size). A bad value is a std::invalid_argument naming it.
  static CacheOptions from_environment();
};

/// Bytes from "1073741824", "500M", "10G", "1.5T" (K, M, G, T are powers of 1024; "KB",
/// "KiB", ... and lower case are accepted). A value that is not a positive size is a
/// std::invalid_argument naming `what` ("cache_limit").
int64_t parse_byte_size(std::string_view text, std::string_view what);

/// `inner` under a cache in options.dir; `inner` itself when options.dir is "". Throws
/// std::invalid_argument naming the directory when it cannot be created or written, or when
/// limit_bytes is not positive.
std::shared_ptr<RemoteFileSystem> cached_file_system(std::shared_ptr<RemoteFileSystem> inner,
                                                     const CacheOptions& options);

/// default_file_system() with `cache` in place of the environment's cache: the same remote
/// clients (connection pools) under a cache in cache.dir, or default_file_system() itself when
/// cache.dir is "". What a pipeline reads through when PipelineOptions::cache names a directory.
std::shared_ptr<RemoteFileSystem> default_file_system(const CacheOptions& cache);

}  // namespace hdl
HDL_API_END
