// FileSystem: the seam through which sample files are read (the pipeline's readers, and the
// video decoder, which reads a clip's bytes through a RandomAccessFile). It lives in media/
// because both layers use it.
//
// Modelled on LevelDB's Env: readers never call open()/pread() themselves but go through an
// abstract FileSystem, so a test (or a user with an object store, a FUSE mount that needs
// special handling, a read-ahead cache) can put another implementation underneath without
// touching an operator. PipelineOptions::file_system picks one; null means posix_file_system().
// The fault-injection tests (tests/pipeline/fault_injection_test.cc) wrap the real one to
// return EIO, short reads, vanishing, shrinking and unreadable files.
//
// Errors are Status values (never exceptions), with the operating system's words ("Input/output
// error", "Permission denied"); the path is not repeated, because the executor puts operator,
// sample index and path in front of every message.
//
// Thread safety: FileSystem::open may be called concurrently from any number of threads, on
// the same or different paths. A RandomAccessFile's read() is const and may be called
// concurrently (it is a pread, with no shared file offset); the object itself must outlive
// its calls and is owned by whoever opened it. Implementations must keep these guarantees.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "media/api.h"
#include "media/status.h"

HDL_API_BEGIN
namespace hdl {

/// An open file, read at explicit offsets (non-owning of any caller memory).
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  /// The file's size in bytes when it was opened (it may change later; read() tells).
  virtual int64_t size() const = 0;
  /// The file's last modification time when it was opened, in nanoseconds since the Unix
  /// epoch; 0 when the file system does not say (the default). Caches of per-file facts (the
  /// video metadata cache) use it, with the size and a hash of some bytes, to tell a file
  /// that changed.
  virtual int64_t modified_ns() const { return 0; }
  /// What names the file's content when it was opened, and changes when the content does: an
  /// object store's ETag (media/remote_file_system.h); "" when the file system has none (the
  /// default; a local file). Caches of remote objects key their entries by it.
  virtual std::string version() const { return ""; }
  /// Reads up to `n` bytes at `offset` into `dst` (which has room for n), like pread: returns
  /// the number of bytes read, which may be fewer than n (a short read is legal; callers loop)
  /// and is 0 only at or past the end of the file. An error is a Status (kIoError, ...).
  virtual Result<int64_t> read(int64_t offset, int64_t n, void* dst) const = 0;
  /// A hint: bytes [offset, offset + n) will be read soon. A remote file starts fetching them
  /// in the background (media/remote_file_system.h, RemoteOptions::max_in_flight), and a later
  /// read() inside the range is served from that; a local one does nothing (the default).
  /// Never an error, never required: a hint that cannot be followed is dropped.
  virtual void will_need(int64_t /*offset*/, int64_t /*n*/) const {}
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;
  /// Opens `path` (a regular file) for reading. Errors: kNotFound when it does not exist,
  /// kIoError for anything else (permission, not a regular file, ...).
  virtual Result<std::unique_ptr<RandomAccessFile>> open(const std::string& path) = 0;
  /// What the file system has counted so far, as (name, value) pairs for the pipeline's stats
  /// (the readers add them to theirs): requests and retries of a remote one; none for a local
  /// one (the default). Thread-safe.
  virtual std::vector<std::pair<std::string, int64_t>> counters() const { return {}; }
};

/// The real file system: open(2) with O_CLOEXEC, fstat for the size, pread(2) (EINTR retried).
/// One shared instance; never null.
std::shared_ptr<FileSystem> posix_file_system();

/// The Status for an errno value as the real file system reports it: ENOENT is kNotFound,
/// anything else kIoError, with strerror's words as the message.
Status errno_status(int err);

/// Reads exactly `n` bytes at `offset` into `dst`, looping over short reads. A read that
/// returns 0 before `n` bytes is the file having shrunk: kIoError "file shrank while being
/// read (got X of N bytes)".
Status read_exactly(const RandomAccessFile& file, int64_t offset, int64_t n, void* dst);

}  // namespace hdl
HDL_API_END
