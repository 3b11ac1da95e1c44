// fuzz_http_response: what an HTTP server or S3 store sends back, parsed as the remote file
// systems parse it (media/detail/response_parse.h): the input's lines up to the first empty
// one are response header lines (as libcurl hands them over, one at a time), the rest is an
// XML body read as S3's error and as a ListObjectsV2 page. Checks: no crash, no sanitizer
// report; sizes are -1 (unknown) or non-negative; a status line clears what earlier lines set;
// an accepted listing has keys and non-negative sizes, and a truncated one a token;
// xml_text's walk always moves forward; printable() of anything parsed is idempotent.
#include <string>
#include <string_view>

#include "media/detail/http_client.h"
#include "media/detail/response_parse.h"
#include "media/text.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hdl;
  using namespace hdl::detail;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t blank = in.find("\n\n");
  const std::string_view head = in.substr(0, blank), body = blank == std::string_view::npos ? "" : in.substr(blank + 2);
  HttpResponse r;
  for (size_t at = 0; at < head.size();) {
    size_t end = head.find('\n', at);
    end = end == std::string_view::npos ? head.size() : end + 1;
    const std::string_view line = head.substr(at, end - at);
    parse_response_header(line, &r);
    HDL_FUZZ_CHECK(r.content_length >= -1 && r.total_size >= -1, "a negative size from a header");
    HDL_FUZZ_CHECK(r.modified_s >= 0, "a negative Last-Modified");
    if (line.size() >= 5 && (line.substr(0, 5) == "HTTP/" || line.substr(0, 5) == "http/"))
      HDL_FUZZ_CHECK(r.content_length == -1 && r.total_size == -1 && r.etag.empty() && r.bucket_region.empty(),
                     "a status line did not start a new response");
    at = end;
  }
  const S3Error e = parse_s3_error(body);
  HDL_FUZZ_CHECK(printable(printable(e.code + e.message)) == printable(e.code + e.message), "printable() is not idempotent");
  Result<S3Listing> page = parse_s3_listing(body);
  if (page.is_ok()) {
    for (const auto& [key, n] : page->objects) HDL_FUZZ_CHECK(!key.empty() && n >= 0, "an accepted object without a key or size");
    HDL_FUZZ_CHECK(!page->truncated || !page->next_token.empty(), "a truncated page without a token");
  }
  size_t from = 0;
  for (int i = 0; i < 64; ++i) {
    const size_t before = from;
    xml_text(body, "Contents", &from);
    if (from == before) break;
    HDL_FUZZ_CHECK(from > before && from <= body.size(), "xml_text's walk did not move forward within the body");
  }
  return 0;
}
