#include "pipeline/readers/tar/shard_sample.h"

#include <algorithm>
#include <charconv>

#include "pipeline/readers/tar/tar_archive.h"

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

std::vector<std::string> split_field_names(std::string_view s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t end = std::min(s.find(';', start), s.size());
    if (end > start) out.push_back(field_name(s.substr(start, end - start)));
    start = end + 1;
  }
  return out;
}

Result<int64_t> parse_class_index(std::string_view t, std::string_view field, int64_t offset) {
  const std::string at = offset >= 0 ? " at byte " + std::to_string(offset) : "";
  if (t.size() > 64)
    return Status::invalid_data("field \"" + std::string(field) + "\"" + at + " holds " + std::to_string(t.size()) +
                                " bytes: not a class index");
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!t.empty() && space(t.front())) t.remove_prefix(1);
  while (!t.empty() && space(t.back())) t.remove_suffix(1);
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || end != t.data() + t.size())
    return Status::invalid_data("field \"" + std::string(field) + "\"" + at + " is not a decimal integer: \"" +
                                std::string(t.substr(0, 32)) + "\"");
  return v;
}

}  // namespace hdl
