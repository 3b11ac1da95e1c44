#include "pipeline/readers/shard_sample.h"

#include <algorithm>

#include "pipeline/readers/tar_archive.h"

namespace hdl {
namespace {

bool starts_ends_dunder(std::string_view s, size_t min_len) {
  return s.size() >= min_len && s.substr(0, 2) == "__" && s.substr(s.size() - 2) == "__";
}

// webdataset's tar_file_iterator: a name without '/' that starts and ends with "__", or whose
// first path component matches `__[^/]*__` (skip_meta), is metadata.
bool is_meta_member(std::string_view name) {
  if (name.find('/') == std::string_view::npos && starts_ends_dunder(name, 2)) return true;
  return starts_ends_dunder(name.substr(0, name.find('/')), 4);
}

}  // namespace

bool split_member_name(std::string_view name, std::string* key, std::string* ext) {
  if (is_meta_member(name)) return false;
  size_t slash = name.rfind('/');
  size_t base = slash == std::string_view::npos ? 0 : slash + 1;
  // In the regex, `.*/` does not cross a newline: a directory part with one cannot match.
  if (name.substr(0, base).find('\n') != std::string_view::npos) return false;
  size_t dot = name.find('.', base);
  if (dot == std::string_view::npos || dot == base) return false;  // `[^.]+` needs one char
  key->assign(name.substr(0, dot));
  *ext = field_name(name.substr(dot + 1));
  return true;
}

std::string field_name(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

Result<SampleGrouper::Step> SampleGrouper::add(std::string_view name, int64_t offset,
                                               std::string* key, std::string* ext) {
  if (!split_member_name(name, key, ext)) return Step::kSkip;
  if (!current_.empty() && *key == current_) {
    if (std::find(fields_.begin(), fields_.end(), *ext) != fields_.end())
      return tar_error(StatusCode::kInvalidData, shard_, *key, offset,
                       "field \"" + *ext + "\" appears twice in one sample (member \"" +
                           std::string(name) + "\")");
    fields_.push_back(*ext);
    return Step::kSameSample;
  }
  if (finished_.count(*key))
    return tar_error(StatusCode::kInvalidData, shard_, *key, offset,
                     "duplicate key: it already had a sample earlier in the shard (its members "
                     "must be consecutive)");
  if (!current_.empty()) finished_.insert(std::move(current_));
  current_ = *key;
  fields_.assign(1, *ext);
  return Step::kNewSample;
}

}  // namespace hdl
