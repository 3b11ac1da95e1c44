// Private to the remote file systems (media/remote_file_system.h): one HTTP request with
// retries, blocking over a pool of libcurl easy handles (perform) or in the background on the
// FetchLoop (submit). The RandomAccessFile both file systems return is in remote_file.h. No
// libcurl type appears here either: the .cc files keep it.
//
// Thread safety: perform, submit and stats may be called concurrently.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "media/file_system.h"
#include "media/remote_file_system.h"
#include "media/status.h"

namespace hdl::detail {

class FetchLoop;

/// What the prefetches of one client share: the byte budget (RemoteOptions::prefetch_bytes)
/// and the counters behind RemoteStats' prefetch fields.
struct PrefetchCounters {
  std::atomic<int64_t> reserved{0};       // bytes of prefetches alive (in flight or unread)
  std::atomic<int64_t> in_flight{0}, in_flight_peak{0};
  std::atomic<int64_t> started{0}, hits{0}, wasted_bytes{0}, cut{0};
  /// Takes n bytes of the budget `limit`; false (nothing taken) when they do not fit.
  bool reserve(int64_t n, int64_t limit);
  void release(int64_t n) { reserved.fetch_sub(n, std::memory_order_relaxed); }
};

struct HttpRequest {
  std::string url;                   ///< what is requested (may hold a query string)
  std::string shown;                 ///< what messages call it ("s3://b/k"); "": url less its query
  bool head = false;                 ///< HEAD instead of GET
  int64_t begin = -1;                ///< a range GET of [begin, begin + length); -1: the whole body
  int64_t length = 0;
  void* dst = nullptr;               ///< a 2xx range body goes here (room for length); else body
  std::vector<std::string> headers;  ///< "Name: value"
  /// "Name: value" headers that carry credentials (a session token): sent only to url's own
  /// origin (scheme, host, port), never to where a redirect points elsewhere.
  std::vector<std::string> credential_headers;
  std::string aws_sigv4;             ///< CURLOPT_AWS_SIGV4's "aws:amz:<region>:s3"; "": unsigned
  std::string userpwd;               ///< "<key id>:<secret>" when signed (never printed)
  /// The object as it was opened, for a range read: its ETag (sent as If-Match when strong; a
  /// 412, or a 2xx with another ETag, is the object having changed) and its size (a
  /// Content-Range total that differs is an error, not data). "" / -1: not checked.
  std::string etag;
  int64_t size = -1;
};

struct HttpResponse {
  long status = 0;            ///< the final HTTP status (after retries)
  int attempts = 0;
  std::string body;           ///< the body when not written to HttpRequest::dst (errors: <= 64 KiB)
  int64_t content_length = -1;
  int64_t total_size = -1;    ///< from "Content-Range: bytes a-b/N"
  int64_t modified_s = 0;     ///< Last-Modified as a Unix time; 0: none
  std::string etag;
  std::string location;       ///< a 3xx's Location, resolved (a redirect not followed)
  std::string bucket_region;  ///< S3's x-amz-bucket-region
};

/// Sends requests, retrying transient failures (see remote_file_system.h), and following
/// redirects itself (libcurl's own following would send custom headers, a session token among
/// them, to any host): at most 5; never from https to http, nor to another scheme; to another
/// origin (scheme, host, port) without credential_headers and unsigned, and a signed request
/// (aws_sigv4) not at all. A refused redirect is an error naming both ends. Returns the response
/// for any final HTTP status (2xx, or an error status the caller turns into a message with
/// http_error()); a Status for a transport failure or a short body after the last attempt.
///
/// Two paths share one attempt's setup (start_attempt), its accounting (end_attempt), the
/// judgement of its outcome (judge) and the retry schedule (retry_after): perform(), a blocking
/// curl_easy_perform loop on the caller's thread, and submit(), which hands the request to the
/// FetchLoop (media/detail/fetch_loop.h, libcurl's multi interface on one I/O thread).
class HttpClient {
 public:
  explicit HttpClient(RemoteOptions options);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  Result<HttpResponse> perform(const HttpRequest& request);
  /// perform() in the background: `done` gets its result on the FetchLoop's I/O thread (it must
  /// be quick and must not call into this client). At most options().max_in_flight run at a
  /// time; the rest wait in order. Requests still waiting when the client is destroyed get
  /// kCancelled. Needs options().max_in_flight > 0.
  void submit(HttpRequest request, std::function<void(Result<HttpResponse>)> done);
  RemoteStats stats() const;
  const RemoteOptions& options() const { return options_; }

  /// "GET <shown> (bytes a-b): HTTP <status><detail> after N attempts": what a final error
  /// status says (detail: ", S3 error SlowDown: message" and the like).
  static std::string describe(const HttpRequest& request, const HttpResponse& response,
                              const std::string& detail);

  // The parts both paths are made of (public for the FetchLoop; nothing else calls them).
  struct Attempt;  // one try's outcome (defined in the .cc, where libcurl's callbacks fill it)
  struct AttemptDeleter {
    void operator()(Attempt* a) const;
  };
  using AttemptPtr = std::unique_ptr<Attempt, AttemptDeleter>;
  static AttemptPtr new_attempt();
  using Clock = std::chrono::steady_clock;
  /// One request's retries so far.
  struct Tries {
    explicit Tries(const HttpRequest& q, const RemoteOptions& o);
    const HttpRequest* request;
    std::string url;                    // where the next attempt goes: request->url, or a redirect's target
    Clock::time_point start, deadline;  // deadline: start + total_timeout_ms
    Clock::time_point heard;            // start, or the end of the last attempt the server sent bytes in
    int attempt = 0;                    // the current attempt, from 1
    int redirects = 0;                  // redirects followed
    bool follow = false;                // the next attempt follows a redirect (not a retry)
    bool foreign = false;               // url is another origin than request->url: no credentials
    bool adaptive = false;              // its timeout is the adaptive deadline
    bool transport = false;             // it failed in transport (a drop, a cut body, a stall)
    int sharing = 1;                    // transfers running at once (the FetchLoop's), this one included
    std::string last_problem;
    HttpResponse last;
  };
  /// Counts the next attempt and sets `handle` (a CURL*) up for it, its outcome going to *a,
  /// which must stay where it is until end_attempt().
  void start_attempt(void* handle, Tries& t, Attempt* a);
  /// After the transfer ended with `code` (a CURLcode): its times and counters.
  void end_attempt(int code, Attempt* a);
  /// The outcome of the attempt: the final result, or none when it is to be retried.
  std::optional<Result<HttpResponse>> judge(Tries& t, Attempt& a);
  /// How long to wait before the next attempt; none when there is none (give_up()).
  std::optional<Clock::duration> retry_after(const Tries& t) const;
  /// The result of a request whose last attempt has failed.
  Result<HttpResponse> give_up(Tries& t);
  /// Why the redirect attempt `a` asks for is not to be followed; "" when it is.
  std::string refuse_redirect(const Tries& t, const Attempt& a) const;
  static constexpr int kMaxRedirects = 5;
  void* take_handle();
  void give_back(void* handle);

 private:
  // The adaptive deadline of an attempt (RemoteOptions::adaptive_timeout): the time to first
  // byte's RFC 6298 timeout plus `length` bytes at a quarter of the observed rate, at least
  // stall_timeout_min_ms, times 2^(attempt-1); -1 when there is no estimate yet.
  int64_t adaptive_deadline_ms(int64_t length, int attempt);
  // Feeds one complete 2xx attempt into the estimate (times in microseconds; body_bytes times
  // the transfers that shared the bandwidth: the rate is the connection's, not one transfer's).
  void observe(int64_t first_byte_us, int64_t total_us, int64_t body_bytes);

  RemoteOptions options_;
  std::mutex mu_;
  std::vector<void*> idle_;  // CURL* easy handles, their connections kept alive
  std::atomic<int64_t> requests_{0}, retries_{0}, failures_{0}, bytes_{0}, first_byte_ns_{0},
      transfer_ns_{0}, connections_{0}, stalls_{0}, not_found_{0};
  // The estimate behind adaptive_deadline_ms (under est_mu_): smoothed time to first byte and
  // its mean deviation (us), the smoothed body rate (bytes/s, 0: none yet), the largest body
  // the rate was measured on, and how many attempts were seen.
  std::mutex est_mu_;
  double srtt_us_ = 0, rttvar_us_ = 0, rate_ = 0;
  int64_t rate_max_bytes_ = 0, seen_ = 0;

 public:
  /// The prefetch counters (RemoteStats), kept by the RemoteFiles and the FetchLoop.
  PrefetchCounters prefetch;

 private:
  std::once_flag loop_once_;
  std::unique_ptr<FetchLoop> loop_;  // made by the first submit(); stopped first by ~HttpClient
};

/// What names a version of an object in a cache entry's name: a positive hash of its ETag
/// (RandomAccessFile::version()), else its modification time in ns, else 0.
int64_t object_stamp(const std::string& version, int64_t modified_ns);

/// The error for a range read of an object that changed since it was opened (a 412 to its
/// If-Match, a 2xx with another ETag or another size): what it was and what it is now, and
/// that a new run (or a new open) reads the new object.
std::string changed_object_message(const HttpRequest& q, const HttpResponse& r);

/// url without its query string and fragment (what messages may show).
std::string strip_query(const std::string& url);

/// Whether `path` starts with `scheme` ("s3://"; given in lower case), in any case.
bool has_scheme(std::string_view path, std::string_view scheme);

}  // namespace hdl::detail
