// s3_file_system() and s3_config_from_environment() (media/s3_file_system.h): S3's REST API
// (HEAD / range GET of an object, ListObjectsV2) over media/detail/http_client.cc, signed by
// libcurl's AWS Signature V4 (CURLOPT_AWS_SIGV4); no hand-written signing.
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>

#include "media/detail/remote_file.h"
#include "media/detail/response_parse.h"
#include "media/s3_file_system.h"

namespace hdl {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.erase(s.begin());
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.pop_back();
  return s;
}

// The keys of section [section] of an INI file (~/.aws/credentials, ~/.aws/config); false when
// the file or the section is missing.
bool read_ini_section(const std::string& path, const std::string& section,
                      std::vector<std::pair<std::string, std::string>>* out) {
  std::ifstream in(path);
  if (!in) return false;
  bool found = false, inside = false;
  for (std::string line; std::getline(in, line);) {
    line = trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      inside = trim(line.substr(1, line.size() - 2)) == section;
      found = found || inside;
      continue;
    }
    const size_t eq = line.find('=');
    if (inside && eq != std::string::npos) out->emplace_back(trim(line.substr(0, eq)), trim(line.substr(eq + 1)));
  }
  return found;
}

std::string get(const std::vector<std::pair<std::string, std::string>>& kv, const std::string& key) {
  for (const auto& [k, v] : kv)
    if (k == key) return v;
  return "";
}

// Percent-encodes a key for a URL path (S3's rules: unreserved characters and '/' stay).
std::string encode(std::string_view s, bool keep_slash) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) out += char(c);
    else out += '%', out += hex[c >> 4], out += hex[c & 15];
  }
  return out;
}

struct S3Location {
  std::string bucket, key;
};

Result<S3Location> parse_s3_url(const std::string& url) {
  const std::string rest = url.substr(5);  // after "s3://"
  const size_t slash = rest.find('/');
  S3Location loc{rest.substr(0, slash), slash == std::string::npos ? "" : rest.substr(slash + 1)};
  if (loc.bucket.empty()) return Status::invalid_argument("no bucket in \"" + url + "\" (s3://bucket/key)");
  return loc;
}

class S3Reader final : public detail::ObjectReader {
 public:
  S3Reader(S3Config c, const RemoteOptions& o) : ObjectReader(o), config(std::move(c)) {
    while (!config.endpoint.empty() && config.endpoint.back() == '/') config.endpoint.pop_back();
    // A user part ("http://user:password@host") is not how S3 authenticates (the keys sign each
    // request), and libcurl would sign with it instead of the keys: dropped.
    if (const size_t scheme = config.endpoint.find("://"); scheme != std::string::npos) {
      const size_t host = scheme + 3, end = config.endpoint.find_first_of("/?#", host);
      const size_t at = config.endpoint.rfind('@', end == std::string::npos ? std::string::npos : end);
      if (at != std::string::npos && at >= host) config.endpoint.erase(host, at + 1 - host);
    }
  }

  // The region requests for `bucket` are addressed and signed for: the configured one, until
  // S3 said the bucket is elsewhere (relocated()).
  std::string region_of(const std::string& bucket) const {
    std::lock_guard lock(mu_);
    const auto it = regions_.find(bucket);
    return it == regions_.end() ? config.region : it->second;
  }

  std::string http_url(const S3Location& loc, const std::string& query = "") const {
    std::string base = config.endpoint.empty()
                           ? "https://" + loc.bucket + ".s3." + region_of(loc.bucket) + ".amazonaws.com/" + encode(loc.key, true)
                           : config.endpoint + "/" + loc.bucket + "/" + encode(loc.key, true);
    return query.empty() ? base : base + "?" + query;
  }

  detail::HttpRequest request(const S3Location& loc, const std::string& shown, const std::string& query = "") const {
    detail::HttpRequest q;
    q.url = http_url(loc, query);
    q.shown = shown + " (" + detail::strip_query(q.url) + ")";
    if (!config.access_key_id.empty()) {
      q.aws_sigv4 = "aws:amz:" + region_of(loc.bucket) + ":s3";
      q.userpwd = config.access_key_id + ":" + config.secret_access_key;
      // S3 requires it on every SigV4 request and libcurl 7.88 does not add it; given, libcurl
      // signs with it as the payload's hash. Our requests have no body to sign.
      q.headers.push_back("x-amz-content-sha256: UNSIGNED-PAYLOAD");
      if (!config.session_token.empty()) q.credential_headers.push_back("x-amz-security-token: " + config.session_token);
    }
    return q;
  }

  // An error status as a Status: the S3 code and message from the XML body, where the
  // credentials came from for authentication errors.
  Status status_for(const detail::HttpRequest& q, const detail::HttpResponse& r) const override {
    const auto [code, message] = detail::parse_s3_error(r.body);
    std::string detail = code.empty() ? "" : ", S3 error " + code + (message.empty() ? "" : ": " + message);
    const bool auth = r.status == 401 || r.status == 403 || code == "InvalidAccessKeyId" ||
                      code == "SignatureDoesNotMatch" || code == "ExpiredToken" || code == "InvalidToken" ||
                      code == "AccessDenied";
    const std::string region = parse_s3_url(q.shown).is_ok() ? region_of(parse_s3_url(q.shown)->bucket) : config.region;
    if (auth) detail += " (credentials: " + config.credentials_source + ", region " + region + ")";
    if (!r.bucket_region.empty() && r.bucket_region != config.region)
      detail += " (the bucket is in region " + r.bucket_region + ": set AWS_REGION=" + r.bucket_region + ")";
    const std::string m = detail::HttpClient::describe(q, r, detail);
    if (r.status == 404 || code == "NoSuchKey" || code == "NoSuchBucket") return Status::not_found(m);
    return Status::io_error(m);
  }

  Result<detail::HttpRequest> range_request(const std::string& url, int64_t offset, int64_t n, void* dst) const override {
    HDL_ASSIGN_OR_RETURN(S3Location loc, parse_s3_url(url));
    detail::HttpRequest q = request(loc, url);
    q.begin = offset, q.length = n, q.dst = dst;
    return q;
  }

  // S3 answers a request signed for the wrong region with its error (301 PermanentRedirect,
  // 400 AuthorizationHeaderMalformed, ...) and the bucket's region in x-amz-bucket-region: the
  // bucket's requests are then addressed and signed for that region (as boto3 does).
  bool relocated(const std::string& url, const detail::HttpResponse& r) override {
    Result<S3Location> loc = parse_s3_url(url);
    if (!loc.is_ok() || r.bucket_region.empty() || r.bucket_region == region_of(loc->bucket)) return false;
    if (r.status != 301 && r.status != 307 && r.status != 400 && r.status != 403) return false;
    for (char c : r.bucket_region)  // it becomes part of a host name and of the signature
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
    std::lock_guard lock(mu_);
    regions_[loc->bucket] = r.bucket_region;
    return true;
  }

  S3Config config;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::string> regions_;  // buckets found in another region than config's
};

class S3FileSystem final : public RemoteFileSystem {
 public:
  S3FileSystem(const S3Config& c, const RemoteOptions& o) : reader_(std::make_shared<S3Reader>(c, o)) {}

  Result<std::unique_ptr<RandomAccessFile>> open(const std::string& path) override {
    if (path.compare(0, 5, "s3://") != 0) return Status::invalid_argument("not an s3:// URL: \"" + path + "\"");
    HDL_ASSIGN_OR_RETURN(S3Location loc, parse_s3_url(path));
    detail::HttpRequest q;
    detail::HttpResponse r;
    for (bool again = true;; again = false) {
      q = reader_->request(loc, path);
      q.head = true;
      HDL_ASSIGN_OR_RETURN(r, reader_->client.perform(q));
      if (r.status / 100 == 2 || !again || !reader_->relocated(path, r)) break;
    }
    if (r.status / 100 != 2) {
      // A HEAD's error has no body: ask again with a GET of one byte for S3's code.
      detail::HttpRequest g = reader_->request(loc, path);
      g.begin = 0, g.length = 1;
      char byte;
      g.dst = &byte;
      Result<detail::HttpResponse> e = reader_->client.perform(g);
      if (e.is_ok() && e->status / 100 != 2) return reader_->status_for(g, *e);
      return reader_->status_for(q, r);
    }
    if (r.content_length < 0) return Status::io_error(detail::HttpClient::describe(q, r, ": no Content-Length"));
    return std::unique_ptr<RandomAccessFile>(
        std::make_unique<detail::RemoteFile>(reader_, path, r));
  }

  RemoteStats stats() const override { return reader_->client.stats(); }

  Result<std::vector<RemoteObject>> list(const std::string& prefix) override {
    if (prefix.compare(0, 5, "s3://") != 0) return Status::invalid_argument("not an s3:// URL: \"" + prefix + "\"");
    HDL_ASSIGN_OR_RETURN(S3Location loc, parse_s3_url(prefix));
    std::vector<RemoteObject> out;
    std::string token;
    for (;;) {
      // Query parameters in name order (part of the signed canonical request).
      std::string query;
      if (!token.empty()) query += "continuation-token=" + encode(token, false) + "&";
      query += "list-type=2&prefix=" + encode(loc.key, false);
      detail::HttpRequest q;
      detail::HttpResponse r;
      for (bool again = true;; again = false) {
        q = reader_->request({loc.bucket, ""}, "s3://" + loc.bucket + "/ (list \"" + loc.key + "\")", query);
        HDL_ASSIGN_OR_RETURN(r, reader_->client.perform(q));
        if (r.status / 100 == 2 || !again || !reader_->relocated(prefix, r)) break;
      }
      if (r.status / 100 != 2) return reader_->status_for(q, r);
      Result<detail::S3Listing> page = detail::parse_s3_listing(r.body);
      if (!page.is_ok()) return page.status().with_context("GET " + q.shown);
      for (auto& [key, size] : page->objects) out.push_back({"s3://" + loc.bucket + "/" + key, size});
      if (!page->truncated) break;
      token = page->next_token;
    }
    return out;
  }

 private:
  std::shared_ptr<S3Reader> reader_;
};

}  // namespace

Result<S3Config> s3_config_from_environment() {
  S3Config c;
  const char* home = env("HOME");
  const std::string aws_dir = std::string(home ? home : "") + "/.aws/";
  const std::string profile = env("AWS_PROFILE") ? env("AWS_PROFILE") : "default";
  const std::string cred_file = env("AWS_SHARED_CREDENTIALS_FILE") ? env("AWS_SHARED_CREDENTIALS_FILE") : aws_dir + "credentials";
  const std::string config_file = env("AWS_CONFIG_FILE") ? env("AWS_CONFIG_FILE") : aws_dir + "config";
  std::vector<std::pair<std::string, std::string>> creds, conf;
  const bool have_creds = read_ini_section(cred_file, profile, &creds);
  const bool have_conf = read_ini_section(config_file, profile == "default" ? "default" : "profile " + profile, &conf);

  if (env("AWS_ACCESS_KEY_ID") || env("AWS_SECRET_ACCESS_KEY")) {
    if (!env("AWS_ACCESS_KEY_ID") || !env("AWS_SECRET_ACCESS_KEY"))
      return Status::invalid_argument("S3 credentials: only one of AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY is set");
    c.access_key_id = env("AWS_ACCESS_KEY_ID");
    c.secret_access_key = env("AWS_SECRET_ACCESS_KEY");
    if (env("AWS_SESSION_TOKEN")) c.session_token = env("AWS_SESSION_TOKEN");
    c.credentials_source = "the environment (AWS_ACCESS_KEY_ID)";
  } else if (have_creds && !get(creds, "aws_access_key_id").empty()) {
    c.access_key_id = get(creds, "aws_access_key_id");
    c.secret_access_key = get(creds, "aws_secret_access_key");
    c.session_token = get(creds, "aws_session_token");
    c.credentials_source = "profile \"" + profile + "\" in " + cred_file;
  } else if (have_conf && !get(conf, "aws_access_key_id").empty()) {  // the AWS CLI reads keys from config too
    c.access_key_id = get(conf, "aws_access_key_id");
    c.secret_access_key = get(conf, "aws_secret_access_key");
    c.session_token = get(conf, "aws_session_token");
    c.credentials_source = "profile \"" + profile + "\" in " + config_file;
  } else if (env("AWS_PROFILE") && !have_conf && !have_creds) {
    return Status::invalid_argument("S3 credentials: AWS_PROFILE=\"" + profile + "\" is in neither " + cred_file +
                                    " nor " + config_file);
  } else {
    // Credentials the AWS CLI would get by running something or asking a service: not done
    // here, and never silently anonymous instead.
    const char* how = nullptr;
    std::string where;
    for (const auto* kv : {&creds, &conf})
      for (const char* key : {"credential_process", "role_arn", "source_profile", "web_identity_token_file",
                              "sso_session", "sso_start_url", "credential_source"})
        if (!how && !get(*kv, key).empty()) how = key, where = kv == &creds ? cred_file : config_file;
    if (how)
      return Status::unsupported("S3 credentials: profile \"" + profile + "\" in " + where + " uses " + how +
                                 ", which this loader does not follow; export the credentials it gives (`aws configure "
                                 "export-credentials --profile " + profile + " --format env`), or set AWS_ACCESS_KEY_ID "
                                 "and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN)");
    for (const char* var : {"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                            "AWS_CONTAINER_CREDENTIALS_FULL_URI"})
      if (env(var))
        return Status::unsupported(std::string("S3 credentials: ") + var + " is set (credentials from a service), which "
                                   "this loader does not follow; export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
                                   "(and AWS_SESSION_TOKEN) instead, or unset it for anonymous requests");
  }
  if (env("AWS_REGION")) c.region = env("AWS_REGION");
  else if (env("AWS_DEFAULT_REGION")) c.region = env("AWS_DEFAULT_REGION");
  else if (!get(conf, "region").empty()) c.region = get(conf, "region");
  if (env("AWS_ENDPOINT_URL_S3")) c.endpoint = env("AWS_ENDPOINT_URL_S3");
  else if (env("AWS_ENDPOINT_URL")) c.endpoint = env("AWS_ENDPOINT_URL");
  return c;
}

std::shared_ptr<RemoteFileSystem> s3_file_system(const S3Config& config, const RemoteOptions& options) {
  return std::make_shared<S3FileSystem>(config, options);
}

}  // namespace hdl
