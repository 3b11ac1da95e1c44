#include "media/detail/response_parse.h"

#include <curl/curl.h>

#include <cctype>

#include "media/detail/http_client.h"

namespace hdl::detail {
namespace {

bool starts_with_ci(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}

std::string trimmed(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == '\r' || v.back() == '\n' || v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return std::string(v);
}

}  // namespace

int64_t parse_count(std::string_view text) {
  const std::string t = trimmed(text);
  if (t.empty() || t.size() > 18) return -1;
  int64_t v = 0;
  for (char c : t) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

void parse_response_header(std::string_view line, HttpResponse* r) {
  if (starts_with_ci(line, "http/")) {  // a new response (after a redirect or a 100): start over
    r->content_length = r->total_size = -1, r->modified_s = 0, r->etag.clear(), r->bucket_region.clear();
  } else if (starts_with_ci(line, "content-length:")) {
    r->content_length = parse_count(line.substr(15));
  } else if (starts_with_ci(line, "content-range:")) {
    const std::string v = trimmed(line.substr(14));
    const size_t slash = v.rfind('/');
    if (slash != std::string::npos) r->total_size = parse_count(std::string_view(v).substr(slash + 1));
  } else if (starts_with_ci(line, "last-modified:")) {
    const time_t t = curl_getdate(trimmed(line.substr(14)).c_str(), nullptr);
    r->modified_s = t > 0 ? int64_t(t) : 0;
  } else if (starts_with_ci(line, "etag:")) {
    r->etag = trimmed(line.substr(5));
  } else if (starts_with_ci(line, "x-amz-bucket-region:")) {
    r->bucket_region = trimmed(line.substr(20));
  }
}

std::string xml_text(std::string_view xml, std::string_view tag, size_t* from) {
  const std::string open = "<" + std::string(tag) + ">", close = "</" + std::string(tag) + ">";
  const size_t a = xml.find(open, from ? *from : 0);
  if (a == std::string_view::npos) return "";
  const size_t b = xml.find(close, a + open.size());
  if (b == std::string_view::npos) return "";
  if (from) *from = b + close.size();
  const std::string_view raw = xml.substr(a + open.size(), b - a - open.size());
  std::string out;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '&') {
      out += raw[i];
      continue;
    }
    const size_t semi = raw.find(';', i);
    const std::string_view e = semi == std::string_view::npos ? std::string_view() : raw.substr(i + 1, semi - i - 1);
    const char* rep = e == "amp" ? "&" : e == "lt" ? "<" : e == "gt" ? ">" : e == "quot" ? "\"" : e == "apos" ? "'" : nullptr;
    if (rep) out += rep, i = semi;
    else out += '&';
  }
  return out;
}

S3Error parse_s3_error(std::string_view xml) { return {xml_text(xml, "Code"), xml_text(xml, "Message")}; }

Result<S3Listing> parse_s3_listing(std::string_view xml) {
  S3Listing page;
  size_t at = 0;
  for (;;) {
    const size_t before = at;
    const std::string item = xml_text(xml, "Contents", &at);
    if (at == before) break;  // no more <Contents> elements
    const std::string key = xml_text(item, "Key");
    const int64_t size = parse_count(xml_text(item, "Size"));
    if (key.empty() || size < 0)
      return Status::invalid_data("ListObjectsV2: an object without a key or a valid size (\"" +
                                  item.substr(0, 200) + "\")");
    page.objects.emplace_back(key, size);
  }
  page.truncated = xml_text(xml, "IsTruncated") == "true";
  page.next_token = xml_text(xml, "NextContinuationToken");
  if (page.truncated && page.next_token.empty())
    return Status::invalid_data("ListObjectsV2: a truncated page without a NextContinuationToken");
  return page;
}

}  // namespace hdl::detail
