// Streaming mode: a shard's members and samples front to back, for storage where seeks cost and
// for compressed shards, which are read this way only.
//
// Plain tar goes through our parser (tar_archive.h); compressed tar (.tar.gz, .tgz, and the
// other filters libarchive knows: .tar.bz2, .tar.xz, .tar.zst) through libarchive, which
// decompresses and understands the same tar variants. libarchive does not say where a
// member's data lies in the file, so its members have data_offset -1. libarchive types stay
// in tar_stream.cc.
//
// Samples are grouped as shard_sample.h says; every field's bytes are read into the sample.
// Errors are the parsers' (tar_archive.h) and the grouper's, each naming shard, key and byte
// offset; libarchive's messages are passed on after "libarchive: ", with the offset in the
// decompressed tar where it stopped and how many compressed bytes had been read.
//
// Thread safety: a MemberStream or SampleStream is used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "media/api.h"
#include "media/status.h"
#include "pipeline/readers/tar/shard_sample.h"
#include "pipeline/readers/tar/tar_archive.h"

HDL_API_BEGIN
namespace hdl {

enum class ShardCompression {
  kNone,        ///< plain tar: our parser; indexed or streamed
  kCompressed,  ///< decompressed by libarchive; streamed only
};

/// By the name: kCompressed for .tar.gz, .tgz, .tar.bz2, .tar.xz, .tar.zst (any case), else
/// kNone; a URL's query string and fragment are not part of its name. A compressed stream under a plain name is refused by the parser with a message
/// saying so.
ShardCompression shard_compression(std::string_view shard_name);

/// A shard's regular members in archive order (TarReader's contract).
class MemberStream {
 public:
  virtual ~MemberStream() = default;
  /// The next regular member (valid until the next call), or null at the end.
  virtual Result<const TarMember*> next() = 0;
  /// Reads the current member's data (member.size bytes) into `dst`; at most once per member.
  virtual Status read_data(void* dst) = 0;
  /// The limits the stream was opened with.
  virtual const TarLimits& limits() const = 0;
};

/// The members of the shard read from `source`, parsed by us (kNone) or libarchive
/// (kCompressed). `shard_name` appears in messages.
std::unique_ptr<MemberStream> open_member_stream(std::unique_ptr<ByteSource> source,
                                                 std::string shard_name, ShardCompression compression,
                                                 const TarLimits& limits = {});

/// One field of a streamed sample.
struct StreamedField {
  std::string ext;          ///< field name, lower-case ("jpg", "seg.png", "cls")
  std::string member_name;  ///< the member's full name in the archive
  int64_t data_offset = -1; ///< in the file; -1 for compressed shards
  std::vector<uint8_t> data;
};

/// One sample: webdataset's dict with "__key__" and "__url__".
struct StreamedSample {
  std::string key;  ///< "__key__"
  std::string url;  ///< "__url__": the shard's path or URL
  std::vector<StreamedField> fields;
  /// The field named `ext` (lower-case), or null.
  const StreamedField* find(std::string_view ext) const;
};

struct SampleStreamOptions {
  /// Fields to keep (lower-case names); others are skipped without reading their bytes, as
  /// webdataset's group_by_keys(suffixes=...). Empty (the default): every field.
  std::vector<std::string> fields;
  /// False: the kept fields are listed (ext, member name, offset) with empty data and their
  /// bytes are skipped (counting a shard's samples). Can be changed between next() calls.
  bool read_data = true;
};

/// Samples from a MemberStream. A sample whose kept fields hold more than the stream's
/// TarLimits::max_sample_bytes fails the shard (kResourceExhausted, naming shard, key and the
/// limit) before the member that would pass it is read.
class SampleStream {
 public:
  /// Reads `members` (owned) of the shard `url`.
  SampleStream(std::unique_ptr<MemberStream> members, std::string url, SampleStreamOptions options = {});

  /// The next sample into *out (replacing its contents): true, or false at the end of the
  /// shard. After an error the stream is finished.
  Result<bool> next(StreamedSample* out);

  /// Whether the following next() calls read the fields' bytes (SampleStreamOptions::read_data).
  void set_read_data(bool read) { options_.read_data = read; }

 private:
  Status read_field(const TarMember& m, const std::string& ext, StreamedSample* into);

  std::unique_ptr<MemberStream> members_;
  std::string url_;
  SampleStreamOptions options_;
  SampleGrouper grouper_;
  StreamedSample pending_;  // the sample started by the member read after the last one returned
  bool have_pending_ = false;
  bool done_ = false;
  Status error_;
};

}  // namespace hdl
HDL_API_END
