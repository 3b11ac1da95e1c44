// WebDataset's sample conventions, shared by the indexed and the streaming modes: which tar
// members belong to a sample, under which key and field name, and the key checks.
//
// A member named "dir/n01.seg.JPG" is field "seg.jpg" of the sample with key "dir/n01": the key
// is the path up to the first dot of the file NAME and the field the rest, lower-cased
// (webdataset's base_plus_ext, regex `^((?:.*/|)[^.]+)[.]([^/]*)$`, with group_by_keys'
// lcase=True). Members whose name does not match (no dot in the file name, a name starting
// with a dot) and webdataset's metadata members (a first path component "__...__", e.g.
// "__index__") belong to no sample and are skipped, as webdataset.WebDataset skips them.
// Consecutive members with the same key form one sample. Unlike webdataset, a key that comes
// back after another key is an error here (two samples would share a key), as is a field
// repeated inside one sample (webdataset raises on that one too).
//
// Thread safety: the functions are pure; a SampleGrouper is used by one thread at a time.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "media/api.h"
#include "media/status.h"

HDL_API_BEGIN
namespace hdl {

/// Splits a member name into the sample key and the field name (lower-cased ASCII). False when
/// the member belongs to no sample (see the file comment); *key and *ext are then unspecified.
bool split_member_name(std::string_view name, std::string* key, std::string* ext);

/// A field name as samples are keyed by it: `s` with ASCII letters lower-cased (webdataset's
/// lcase; other bytes as they are). For names a user gives (e.g. "JPG;PNG").
std::string field_name(std::string_view s);

/// Field names a user lists as ';'-separated alternatives ("jpg;JPEG;png"), each through
/// field_name(), empty parts dropped.
std::vector<std::string> split_field_names(std::string_view alternatives);

/// A class index as webdataset decodes a "cls" field: decimal text, surrounding whitespace
/// allowed. kInvalidData naming `field` and byte `offset` (omitted when < 0) otherwise, or when
/// the text is over 64 bytes.
Result<int64_t> parse_class_index(std::string_view text, std::string_view field, int64_t offset);

/// Follows the members of one shard, in order, and says where each one goes.
class SampleGrouper {
 public:
  enum class Step {
    kSkip,        ///< belongs to no sample
    kNewSample,   ///< starts a sample (the first member, or a key other than the last)
    kSameSample,  ///< one more field of the current sample
  };

  /// `shard_name` is used in messages only.
  explicit SampleGrouper(std::string shard_name) : shard_(std::move(shard_name)) {}

  /// Where the member `name`, whose header (or data) is at byte `offset`, goes; its key and
  /// field name in *key and *ext. Errors (kInvalidData, naming shard, key and offset): the key
  /// already had a sample earlier in the shard; the field is already in the current sample.
  Result<Step> add(std::string_view name, int64_t offset, std::string* key, std::string* ext);

 private:
  std::string shard_;
  std::string current_;              // key of the current sample ("" before the first)
  std::vector<std::string> fields_;  // its fields so far
  std::unordered_set<std::string> finished_;  // keys of the samples before it
};

}  // namespace hdl
HDL_API_END
