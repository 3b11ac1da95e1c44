// Private to the remote file systems: the parsers of what a server sends back, kept apart so
// that they can be fuzzed alone (tests/fuzz/fuzz_http_response.cc): response header lines
// (http_client.cc's header callback) and S3's XML bodies (errors and ListObjectsV2 pages,
// s3_file_system.cc). Servers are not trusted: a number that is not a non-negative decimal
// integer is ignored, entities other than XML's five are kept as they are, nothing is assumed
// about lengths.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "media/api.h"
#include "media/status.h"

HDL_API_BEGIN  // exported for the fuzz target
namespace hdl::detail {

struct HttpResponse;

/// One header line as libcurl hands it over ("Content-Length: 12\r\n", with its line end) into
/// *r: Content-Length, Content-Range's total ("bytes a-b/N"), Last-Modified, ETag,
/// x-amz-bucket-region. A status line ("HTTP/1.1 302 Found") starts a new response (after a 100
/// or a redirect) and clears them.
void parse_response_header(std::string_view line, HttpResponse* r);

/// A non-negative decimal integer (at most 18 digits), else -1.
int64_t parse_count(std::string_view text);

/// The text of the first <tag>...</tag> of xml at or after *from (then moved past it), with
/// XML's five entities decoded; "" when absent.
std::string xml_text(std::string_view xml, std::string_view tag, size_t* from = nullptr);

/// S3's error body: <Error><Code>..</Code><Message>..</Message></Error>.
struct S3Error {
  std::string code, message;
};
S3Error parse_s3_error(std::string_view xml);

/// One page of ListObjectsV2.
struct S3Listing {
  std::vector<std::pair<std::string, int64_t>> objects;  ///< (key, size), in the page's order
  bool truncated = false;
  std::string next_token;  ///< NextContinuationToken
};
/// kInvalidData when an object has no key or no valid size, or a truncated page no token.
Result<S3Listing> parse_s3_listing(std::string_view xml);

}  // namespace hdl::detail
HDL_API_END
