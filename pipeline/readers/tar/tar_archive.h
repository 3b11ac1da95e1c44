// Tar archives, parsed by us: the members of a plain (uncompressed) tar shard, each with the
// byte offset of its DATA in the file.
//
// Why our own parser and not libarchive for plain tar: the indexed mode reads any sample with
// one pread at a member's data offset (and will hand those bytes on without a copy), and
// libarchive does not expose where in the file a member's data starts. Compressed shards,
// which can only be read front to back anyway, go through libarchive (tar_stream.h).
//
// What is understood (the variants webdataset's TarWriter, Python's tarfile and GNU tar
// write): ustar (name + prefix), GNU long names and long link names ('L', 'K'), PAX extended
// headers ('x': path and size override the header's; 'g': global records, applied under the
// 'x' ones as Python's tarfile does), octal and base-256 numbers, the header checksum as the
// unsigned or the historic signed byte sum. Regular members ('0', '\0', '7') are returned;
// links, directories, devices and FIFOs are skipped (their size is not data, as in tarfile);
// unknown types are skipped with their data. GNU sparse members are refused (kUnsupported).
// The archive ends at a zero block (the first of the customary two, as tarfile and GNU tar
// stop there) or at end of file on a block boundary; an empty file is an empty archive.
//
// Errors are Status values, never exceptions, each naming the shard, the member's key when its
// name is known, and the byte offset: `tar shard "a.tar": key "x/y": byte 1536: ...`.
// kInvalidData: truncated header or data, bad checksum, not a tar file, malformed PAX or
// numbers; kResourceExhausted: a member or name over TarLimits; kUnsupported: sparse members,
// a gzip/bzip2/xz/zstd stream given to the plain parser.
//
// Thread safety: a TarReader and a ByteSource are used by one thread at a time; distinct
// objects are independent. file_byte_source's file may be shared (its read() is a pread).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "media/api.h"
#include "media/status.h"

HDL_API_BEGIN
namespace hdl {

class RandomAccessFile;  // media/file_system.h

/// Bounds on what one shard may ask of us (every field from the untrusted archive is checked).
struct TarLimits {
  int64_t max_member_bytes = int64_t(1) << 30;  ///< 1 GiB: a larger member is kResourceExhausted
  int64_t max_name_bytes = 64 << 10;            ///< 64 KiB: GNU 'L' / PAX path length
  int64_t max_pax_bytes = 1 << 20;              ///< 1 MiB: one PAX header's records
  /// Streaming (tar_stream.h): a sample's fields together; a larger one fails its shard with
  /// kResourceExhausted before its bytes are read (a .tar.gz of six 1000 MiB members under one
  /// key would otherwise hold 6 GB).
  int64_t max_sample_bytes = int64_t(2) << 30;    ///< 2 GiB
  /// Streaming (shard_stream.h): the bytes a stream's shuffle buffer holds at most; past it,
  /// fewer samples are buffered (the order stays a function of the shards' contents).
  int64_t max_buffered_bytes = int64_t(2) << 30;  ///< 2 GiB
};

constexpr int64_t kTarBlockSize = 512;

/// One regular member.
struct TarMember {
  std::string name;            ///< full path inside the archive (long name / PAX path applied)
  int64_t header_offset = -1;  ///< first header block of the member (its 'L'/'x' blocks included)
  int64_t data_offset = -1;    ///< where its data starts in the file; -1 when unknown (libarchive)
  int64_t size = 0;            ///< data bytes
};

/// Bytes read front to back. A seekable file and a decompressor both fit.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  /// Reads up to `n` bytes into `dst`: the count read, 0 only at the end. Errors: the
  /// source's (kIoError, ...).
  virtual Result<int64_t> read(void* dst, int64_t n) = 0;
  /// Skips up to `n` bytes: the count skipped, fewer only at the end. The default reads and
  /// discards; a seekable source overrides it to read nothing.
  virtual Result<int64_t> skip(int64_t n);
};

/// A ByteSource over `file` from `offset` (non-owning: `file` must outlive it). skip() moves
/// without reading, bounded by file.size(), so parsing a shard reads only its header blocks.
/// `read_ahead` > 0: reads go to the file in blocks of at least that many bytes, kept in a
/// buffer that later reads and skips consume (a read as large as a block goes straight to the
/// caller's memory): the whole-shard read-ahead a remote shard read front to back needs, one
/// range GET per block instead of one per member (a skip past the buffer still reads nothing).
/// Each full block read hints the next (RandomAccessFile::will_need), so a remote file fetches
/// it in the background while this one is parsed (double buffering; RemoteOptions::max_in_flight).
std::unique_ptr<ByteSource> file_byte_source(const RandomAccessFile& file, int64_t offset = 0,
                                             int64_t read_ahead = 0);

/// The read-ahead file_byte_source uses for a shard read front to back: 8 MiB for a URL (a
/// remote store's cost is per request), 0 for a local path (the kernel reads ahead).
int64_t stream_read_ahead(std::string_view shard_path);

/// A ByteSource over memory (non-owning): tests and the fuzz targets.
std::unique_ptr<ByteSource> memory_byte_source(std::string_view bytes);

/// The plain-tar parser over a ByteSource.
class TarReader {
 public:
  /// Reads `source` (non-owning: it must outlive the reader) as the shard `shard_name` (used in
  /// messages only).
  TarReader(ByteSource& source, std::string shard_name, TarLimits limits = {});

  /// The next regular member, skipping the rest of the current one's data: a pointer valid
  /// until the next call, or null at the end of the archive. After an error the reader is
  /// finished (every later call returns the same error).
  Result<const TarMember*> next();

  /// Reads the current member's data (all member.size bytes) into `dst`. At most once per
  /// member, before the next next(). Errors: kInvalidData when the data runs past the end.
  Status read_data(void* dst);

  const std::string& shard_name() const { return shard_; }

 private:
  Status fail(Status s);
  Status read_block(uint8_t* block, bool* at_end);
  Status read_extension(int64_t size, int64_t limit, std::string* out);
  Status skip_data(int64_t padded);
  Status error(StatusCode code, const std::string& name, int64_t offset, const std::string& what);

  ByteSource& source_;
  std::string shard_;
  TarLimits limits_;
  int64_t pos_ = 0;         // bytes consumed from the source
  int64_t pending_ = 0;     // data + padding of the current member not yet consumed
  bool data_read_ = true;   // the current member's data has been consumed
  bool done_ = false;
  Status error_;
  TarMember member_;
  std::unordered_map<std::string, std::string> global_pax_;
};

/// The error text every reader layer uses: `tar shard "<shard>": key "<key>": byte <offset>:
/// <what>`, without the key part when `key` is empty and the offset part when it is negative.
Status tar_error(StatusCode code, std::string_view shard, std::string_view key, int64_t offset,
                 std::string_view what);

}  // namespace hdl
HDL_API_END
