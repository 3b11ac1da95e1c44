// http_file_system(), url_file_system() and RemoteOptions::from_environment()
// (media/remote_file_system.h); the transport is media/detail/http_client.cc.
#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <stdexcept>

#include "media/cache_file_system.h"
#include "media/detail/remote_file.h"
#include "media/remote_file_system.h"

namespace hdl {
namespace {

bool has_scheme(std::string_view path, std::string_view scheme) {
  if (path.size() < scheme.size()) return false;
  for (size_t i = 0; i < scheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(path[i])) != scheme[i]) return false;
  return true;
}

int64_t env_positive(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long long x = std::strtoll(v, &end, 10);
  if (*end != '\0' || x <= 0)
    throw std::invalid_argument(std::string(name) + "=\"" + v + "\" is not a positive integer");
  return x;
}

class HttpReader final : public detail::ObjectReader {
 public:
  explicit HttpReader(const RemoteOptions& o) : ObjectReader(o) {}
  Result<detail::HttpRequest> range_request(const std::string& url, int64_t offset, int64_t n, void* dst) const override {
    detail::HttpRequest q;
    q.url = url, q.begin = offset, q.length = n, q.dst = dst;
    return q;
  }
  Status status_for(const detail::HttpRequest& q, const detail::HttpResponse& r) const override {
    const std::string m = detail::HttpClient::describe(q, r, "");
    return r.status == 404 || r.status == 410 ? Status::not_found(m) : Status::io_error(m);
  }
};

class HttpFileSystem final : public RemoteFileSystem {
 public:
  explicit HttpFileSystem(const RemoteOptions& o) : reader_(std::make_shared<HttpReader>(o)) {}

  Result<std::unique_ptr<RandomAccessFile>> open(const std::string& path) override {
    if (!has_scheme(path, "http://") && !has_scheme(path, "https://"))
      return Status::invalid_argument("not an http:// or https:// URL: \"" + path + "\"");
    detail::HttpRequest q;
    q.url = path, q.head = true;
    HDL_ASSIGN_OR_RETURN(detail::HttpResponse r, reader_->client.perform(q));
    if (r.status / 100 != 2) return reader_->status_for(q, r);
    if (r.content_length < 0)
      return Status::unsupported(detail::HttpClient::describe(q, r, "") + ": no Content-Length (a size is needed)");
    return std::unique_ptr<RandomAccessFile>(
        std::make_unique<detail::RemoteFile>(reader_, path, r));
  }
  RemoteStats stats() const override { return reader_->client.stats(); }
  Result<std::vector<RemoteObject>> list(const std::string& prefix) override {
    return Status::unsupported("HTTP cannot list \"" + prefix + "\": name the files (or use s3://)");
  }

 private:
  std::shared_ptr<HttpReader> reader_;
};

RemoteStats operator+(RemoteStats a, const RemoteStats& b) {
  a.requests += b.requests, a.retries += b.retries, a.failures += b.failures, a.bytes += b.bytes;
  a.not_found += b.not_found;
  a.first_byte_ns += b.first_byte_ns, a.transfer_ns += b.transfer_ns, a.connections += b.connections;
  a.stalls += b.stalls, a.in_flight_peak = std::max(a.in_flight_peak, b.in_flight_peak);
  a.prefetches += b.prefetches, a.prefetch_hits += b.prefetch_hits;
  a.prefetch_wasted_bytes += b.prefetch_wasted_bytes, a.prefetch_cut += b.prefetch_cut;
  return a;
}

class UrlFileSystem final : public RemoteFileSystem {
 public:
  UrlFileSystem(const RemoteOptions& o, std::shared_ptr<FileSystem> local)
      : options_(o), local_(std::move(local)), http_(http_file_system(o)) {}

  Result<std::unique_ptr<RandomAccessFile>> open(const std::string& path) override {
    if (has_scheme(path, "s3://")) {
      HDL_ASSIGN_OR_RETURN(RemoteFileSystem * s3, s3());
      return s3->open(path);
    }
    if (has_scheme(path, "http://") || has_scheme(path, "https://")) return http_->open(path);
    return local_->open(path);
  }
  RemoteStats stats() const override {
    RemoteStats s = http_->stats();
    std::lock_guard<std::mutex> lock(mu_);
    return s3_ ? s + s3_->stats() : s;
  }
  Result<std::vector<RemoteObject>> list(const std::string& prefix) override {
    if (!has_scheme(prefix, "s3://")) return http_->list(prefix);
    HDL_ASSIGN_OR_RETURN(RemoteFileSystem * s3, s3());
    return s3->list(prefix);
  }

 private:
  Result<RemoteFileSystem*> s3() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!s3_) {
      Result<S3Config> config = s3_config_from_environment();
      if (!config.is_ok()) return config.status();
      s3_ = s3_file_system(*config, options_);
    }
    return s3_.get();
  }

  RemoteOptions options_;
  std::shared_ptr<FileSystem> local_;
  std::shared_ptr<RemoteFileSystem> http_;
  mutable std::mutex mu_;
  std::shared_ptr<RemoteFileSystem> s3_;  // made on first s3:// use
};

}  // namespace

RemoteOptions RemoteOptions::from_environment() {
  RemoteOptions o;
  if (const char* ca = std::getenv("HDL_CA_BUNDLE"); ca && *ca) o.ca_bundle = ca;
  else if (const char* cc = std::getenv("CURL_CA_BUNDLE"); cc && *cc) o.ca_bundle = cc;
  o.request_timeout_ms = env_positive("HDL_HTTP_TIMEOUT_MS", o.request_timeout_ms);
  o.total_timeout_ms = env_positive("HDL_HTTP_TOTAL_TIMEOUT_MS", o.total_timeout_ms);
  o.silence_timeout_ms = env_positive("HDL_HTTP_SILENCE_TIMEOUT_MS", o.silence_timeout_ms);
  o.max_attempts = int(env_positive("HDL_HTTP_MAX_ATTEMPTS", o.max_attempts));
  o.stall_timeout_min_ms = env_positive("HDL_HTTP_STALL_MIN_MS", o.stall_timeout_min_ms);
  o.prefetch_bytes = env_positive("HDL_HTTP_PREFETCH_BYTES", o.prefetch_bytes);
  if (const char* m = std::getenv("HDL_HTTP_MAX_IN_FLIGHT"); m && std::string(m) == "0") o.max_in_flight = 0;
  else o.max_in_flight = int(env_positive("HDL_HTTP_MAX_IN_FLIGHT", o.max_in_flight));
  if (const char* a = std::getenv("HDL_HTTP_ADAPTIVE_TIMEOUT"); a && *a) {
    if (std::string(a) != "0" && std::string(a) != "1")
      throw std::invalid_argument(std::string("HDL_HTTP_ADAPTIVE_TIMEOUT=\"") + a + "\" is not 0 or 1");
    o.adaptive_timeout = *a == '1';
  }
  return o;
}

std::vector<std::pair<std::string, int64_t>> RemoteFileSystem::counters() const {
  const RemoteStats s = stats();
  if (s.requests == 0) return {};  // nothing sent (a local dataset read through the URL dispatcher)
  std::vector<std::pair<std::string, int64_t>> c = {
      {"remote_requests", s.requests},         {"remote_retries", s.retries},
      {"remote_failures", s.failures},         {"remote_not_found", s.not_found},
      {"remote_bytes", s.bytes},
      {"remote_connections", s.connections},   {"remote_stalls", s.stalls},
      {"remote_first_byte_us", s.requests > 0 ? s.first_byte_ns / 1000 / s.requests : 0},
      {"remote_bytes_per_s", s.transfer_ns > 0 ? int64_t(double(s.bytes) * 1e9 / double(s.transfer_ns)) : 0}};
  if (s.prefetches > 0 || s.prefetch_cut > 0)
    c.insert(c.end(), {{"remote_in_flight_peak", s.in_flight_peak},
                       {"remote_prefetches", s.prefetches},
                       {"remote_prefetch_hits", s.prefetch_hits},
                       {"remote_prefetch_wasted_bytes", s.prefetch_wasted_bytes},
                       {"remote_prefetch_cut", s.prefetch_cut}});
  return c;
}

std::shared_ptr<RemoteFileSystem> http_file_system(const RemoteOptions& options) {
  return std::make_shared<HttpFileSystem>(options);
}

bool is_remote_url(std::string_view path) {
  return has_scheme(path, "http://") || has_scheme(path, "https://") || has_scheme(path, "s3://");
}

std::shared_ptr<RemoteFileSystem> url_file_system(const RemoteOptions& options, std::shared_ptr<FileSystem> local) {
  return std::make_shared<UrlFileSystem>(options, std::move(local));
}

std::shared_ptr<RemoteFileSystem> default_file_system() {
  // Under a local cache when HDL_CACHE_DIR names one (media/cache_file_system.h).
  static const std::shared_ptr<RemoteFileSystem> fs = cached_file_system(url_file_system(), CacheOptions::from_environment());
  return fs;
}

}  // namespace hdl
