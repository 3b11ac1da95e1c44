// Shard specs: the strings that name a dataset's shards, expanded as webdataset expands them
// (its expand_urls: split on "::", then the braceexpand package on each part).
//
//   "train-{000000..001023}.tar"   1024 names, zero padding kept (a bound with a leading zero
//                                  pads every number to the longer bound's width)
//   "{a,b}/part-{0..9..3}.tar"     lists and ranges with a step (0, 3, 6, 9), in product order
//   "{z..a}", "{10..1}"            character ranges and descending ranges
//   "x-{1..2}.tar::y.tar"          several specs joined with "::"
//   "a\{b\}.tar"                   a backslash escapes the next character
// Braces nest ("{a,b{1..2}}"); a brace group with neither a comma nor a valid range is kept
// literally with its braces ("{abc}"), as braceexpand does. Unbalanced braces are an error.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "media/api.h"
#include "media/status.h"

HDL_API_BEGIN
namespace hdl {

/// Most names one spec may expand to (a typo such as {0..99999999999} fails instead of
/// exhausting memory).
constexpr int64_t kMaxShardNames = int64_t(1) << 22;

/// Every shard name of `spec` in order. Errors: kInvalidArgument for unbalanced braces, an empty
/// spec or part, or more than kMaxShardNames names (the message quotes the spec). Callers
/// holding a user's configuration turn the error into a ConfigError.
Result<std::vector<std::string>> expand_shard_spec(std::string_view spec);

/// The concatenation of each spec's expansion, in order.
Result<std::vector<std::string>> expand_shard_specs(const std::vector<std::string>& specs);

}  // namespace hdl
HDL_API_END
