// What every remote store shares (media/remote_file_system.h): its options from the
// environment and its counters as the pipeline shows them.
#include "media/remote_file_system.h"

#include <cstdlib>
#include <stdexcept>

namespace hdl {
namespace {

int64_t env_positive(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long long x = std::strtoll(v, &end, 10);
  if (*end != '\0' || x <= 0)
    throw std::invalid_argument(std::string(name) + "=\"" + v + "\" is not a positive integer");
  return x;
}

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

}  // namespace hdl
