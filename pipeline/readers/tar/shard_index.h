// Indexed mode: a per-shard index gives every sample's fields with the offset of their DATA and
// their size, so any sample is read with one pread per field and no header parsing.
//
// Index file: DALI's webdataset index, version "v1.2" (tools/wds2idx.py; parsed by
// dali/operators/reader/loader/webdataset_loader.cc), text, one line per sample:
//   v1.2 <sample count> hdl1 <shard size> <shard mtime ns>
//   <ext> <data offset> <size> <member name> [<ext> <data offset> <size> <member name> ...]
// DALI reads the version and the count from the first line and ignores the rest of it, so our
// stamp ("hdl1", the shard's size in bytes and modification time in ns, 0 when the file
// system does not say) rides there and DALI still reads the file; an index DALI wrote (no
// stamp) parses here too, but load_or_build_index rebuilds it, since nothing says it matches
// its shard. Offsets are of the data (multiples of 512), ext is the member's suffix as in the
// archive (DALI lower-cases it itself), tokens are separated by one space. Bytes that would
// break DALI's whitespace tokenizer (bytes <= 0x20, 0x7f) and '%' are written %XX; a '%' not
// followed by two hex digits reads as itself; the empty suffix of a name such as "x." is "%". Only members that belong to a sample
// (shard_sample.h) are listed. DALI's older v1.0/v1.1 files lack member names (hence keys):
// kUnsupported. An empty shard is "v1.2 0 ..." (DALI refuses those; its tool never writes one).
//
// The sidecar sits next to the shard as "<shard>.idx" unless IndexOptions says otherwise. For a
// URL shard (s3://, http(s)://) a sidecar published next to it is read (checked by the shard's
// size: an object's modification time is its upload's), but none is written there: without
// IndexOptions::index_path the index is then built in memory.
// It is written through POSIX (a temporary file, flushed, renamed over it), not through the
// FileSystem seam, which has no writes; it is read through the seam.
//
// Thread safety: the functions are pure or touch only their own files; concurrent
// load_or_build_index calls on one shard (DDP ranks) each write a whole file, the last wins.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "media/api.h"
#include "media/status.h"
#include "pipeline/readers/tar/tar_archive.h"

HDL_API_BEGIN
namespace hdl {

class FileSystem;  // media/file_system.h

struct IndexedField {
  std::string ext;          ///< field name, lower-case
  std::string member_name;  ///< the member's full name ("key." + the suffix as archived)
  int64_t offset = 0;       ///< of the data in the shard
  int64_t size = 0;
};

struct IndexedSample {
  std::string key;  ///< "__key__"
  std::vector<IndexedField> fields;
};

struct ShardIndex {
  std::string url;                ///< "__url__": the shard's path or URL (not stored in the file)
  bool stamped = false;           ///< the file had our stamp (always true for a built index)
  int64_t shard_size = -1;        ///< stamp: the shard's size in bytes
  int64_t shard_modified_ns = 0;  ///< stamp: its modification time; 0 when unknown
  std::vector<IndexedSample> samples;
};

/// Reads every header of the plain tar `file` (data is skipped, not read) and groups the members
/// into samples. The stamp is the file's size() and modified_ns(). Errors: TarReader's and
/// SampleGrouper's (each naming `shard_name`, the key and the offset), kUnsupported for a
/// compressed shard.
Result<ShardIndex> build_shard_index(const RandomAccessFile& file, std::string_view shard_name,
                                     const TarLimits& limits = {});

/// The index file's bytes (with the stamp line only when index.stamped).
std::string encode_shard_index(const ShardIndex& index);

/// Parses an index file's bytes, checking everything: the header line, the count, four tokens
/// per field, offsets multiples of 512 and ascending with room for a header between fields,
/// sizes within limits.max_member_bytes, extents within the stamped shard size, ext tokens that
/// match their member names, keys as SampleGrouper checks them. `shard_url` becomes
/// index.url; `index_name` is used in messages. Errors: kInvalidData naming the index, the line
/// and, when known, the key; kUnsupported for DALI's older versions.
Result<ShardIndex> parse_shard_index(std::string_view bytes, std::string_view shard_url,
                                     std::string_view index_name, const TarLimits& limits = {});

/// Writes encode_shard_index(index) to `path` atomically (temporary file, fsync, rename).
/// Errors: kIoError naming the file and the system's words.
Status write_shard_index(const std::string& path, const ShardIndex& index);

enum class IndexCachePolicy {
  kReadWrite,  ///< use a valid sidecar; else build and write one (the default)
  kReadOnly,   ///< use a valid sidecar; else build in memory (read-only dataset folders)
  kRebuild,    ///< always build, and write the sidecar
  kNone,       ///< always build in memory; never touch a sidecar
};

struct IndexOptions {
  IndexCachePolicy policy = IndexCachePolicy::kReadWrite;  ///< see IndexCachePolicy
  std::string index_path;                   ///< sidecar; empty (the default): "<shard>.idx"
  int64_t max_index_bytes = int64_t(256) << 20;  ///< 256 MiB: a larger sidecar is rebuilt
  TarLimits limits;                         ///< for the shard and the index
};

/// The shard's index: the sidecar when it parses and its stamp matches the shard's size and
/// modification time, else built from the shard (and written, per the policy). A sidecar that
/// does not parse, has no stamp or a stale one, and a failed write do not fail the call: they
/// set *warning (one sentence naming the file; empty when all went well) for the caller to
/// show once. Errors: the shard's open and read errors, build_shard_index's.
Result<ShardIndex> load_or_build_index(FileSystem& fs, const std::string& shard_path,
                                       const IndexOptions& options, std::string* warning);

}  // namespace hdl
HDL_API_END
