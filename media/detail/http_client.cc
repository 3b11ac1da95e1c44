#include "media/detail/http_client.h"

#include "media/detail/fetch_loop.h"

#include "media/cancel.h"
#include "media/detail/response_parse.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace hdl::detail {
namespace {

constexpr size_t kMaxErrorBody = 64 * 1024;

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// Retrying helps with these; the rest (bad URL, TLS verification, ...) fail at once.
bool transient(CURLcode c) {
  switch (c) {
    case CURLE_COULDNT_RESOLVE_HOST: case CURLE_COULDNT_CONNECT: case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR: case CURLE_RECV_ERROR: case CURLE_GOT_NOTHING: case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR: case CURLE_HTTP2: case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

uint64_t& rng_state(uint64_t seed) {
  thread_local uint64_t state = seed ? seed : std::random_device{}() | 1;
  return state;
}

double uniform01(uint64_t seed) {
  uint64_t& x = rng_state(seed);  // xorshift64*
  x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
  return double((x * 0x2545F4914F6CDD1DULL) >> 11) / double(uint64_t(1) << 53);
}

}  // namespace

// What one attempt gave: a transport error, or a response (whose body may be short).
struct HttpClient::Attempt {
  CURLcode code = CURLE_OK;
  std::string curl_error;
  HttpResponse response;
  int64_t received = 0;  // body bytes
  bool reused = false;    // on a kept-alive connection (none was opened for it)
  bool overflow = false;  // the server sent more than the range asked for
  int64_t first_byte_us = 0, total_us = 0;
  const HttpRequest* request = nullptr;
  bool credentials = false;  // this attempt carried the request's credentials
  CURL* handle = nullptr;
  // What libcurl points at during the transfer.
  char errbuf[CURL_ERROR_SIZE] = {0};
  std::string range;
  curl_slist* headers = nullptr;  // freed by end_attempt(), or here for an abandoned one
  Attempt() = default;
  Attempt(const Attempt&) = delete;
  Attempt& operator=(const Attempt&) = delete;
  ~Attempt() { curl_slist_free_all(headers); }
};

namespace {

size_t on_header(char* s, size_t size, size_t count, void* user) {
  const size_t n = size * count;
  parse_response_header(std::string_view(s, n), &static_cast<HttpClient::Attempt*>(user)->response);
  return n;
}

// A URL's scheme, host and port (the default port when none is given), lower-cased; "" when
// libcurl cannot parse it.
std::string origin(const std::string& url) {
  CURLU* u = curl_url();
  std::string out;
  char *scheme = nullptr, *host = nullptr, *port = nullptr;
  if (curl_url_set(u, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK) {
    out = std::string(scheme) + "://" + host + ":" + port;
    for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  }
  curl_free(scheme), curl_free(host), curl_free(port);
  curl_url_cleanup(u);
  return out;
}

}  // namespace

HttpClient::HttpClient(RemoteOptions options) : options_(std::move(options)) { global_init(); }

HttpClient::~HttpClient() {
  loop_.reset();  // its callbacks may still count prefetches
  for (void* h : idle_) curl_easy_cleanup(static_cast<CURL*>(h));
}

void HttpClient::submit(HttpRequest request, std::function<void(Result<HttpResponse>)> done) {
  std::call_once(loop_once_, [&] { loop_ = std::make_unique<FetchLoop>(*this, options_.max_in_flight); });
  loop_->submit(std::move(request), std::move(done));
}

bool PrefetchCounters::reserve(int64_t n, int64_t limit) {
  int64_t have = reserved.load(std::memory_order_relaxed);
  do {
    if (have + n > limit) return false;
  } while (!reserved.compare_exchange_weak(have, have + n, std::memory_order_relaxed));
  return true;
}

HttpClient::Tries::Tries(const HttpRequest& q, const RemoteOptions& o)
    : request(&q), url(q.url), start(Clock::now()), deadline(start + std::chrono::milliseconds(o.total_timeout_ms)),
      heard(start) {}

void* HttpClient::take_handle() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      void* h = idle_.back();
      idle_.pop_back();
      return h;
    }
  }
  return curl_easy_init();
}

void HttpClient::give_back(void* handle) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (static_cast<int>(idle_.size()) < options_.max_idle_connections) {
      idle_.push_back(handle);
      return;
    }
  }
  curl_easy_cleanup(static_cast<CURL*>(handle));
}

// A body read into the caller's memory is large from 1 MiB: libcurl's largest receive buffer,
// and non-temporal copies.
constexpr int64_t kLargeBody = int64_t{1} << 20;

// Copies libcurl's receive buffer into a large destination (a body of 1 MiB or more) with
// non-temporal stores: the bytes go to memory without first reading each destination line into
// the cache (the read-for-ownership a plain store pays) and without evicting the cache for data
// far larger than it. glibc's memcpy does the same for single copies past about 3/4 of
// the last-level cache; libcurl hands a large body over in receive-buffer pieces, each below
// that threshold.
static void copy_to_large_body(char* dst, const char* src, size_t n) {
#if defined(__SSE2__)
  const size_t head = std::min(n, size_t(-reinterpret_cast<uintptr_t>(dst) & 15));
  std::memcpy(dst, src, head);
  dst += head, src += head, n -= head;
  for (; n >= 64; n -= 64, dst += 64, src += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 48), d);
  }
  _mm_sfence();  // the stores are visible before the transfer is reported done
#endif
  std::memcpy(dst, src, n);
}

// libcurl's progress callback (at least once a second, even while the server is silent): a
// non-zero return aborts the transfer (CURLE_ABORTED_BY_CALLBACK) when the work that asked for
// it was cancelled (media/cancel.h). Only the blocking path runs under a CancelScope.
static int on_progress(void*, curl_off_t, curl_off_t, curl_off_t, curl_off_t) { return cancel_requested() ? 1 : 0; }

static size_t on_body(char* s, size_t size, size_t count, void* user) {
  const size_t n = size * count;
  auto* a = static_cast<HttpClient::Attempt*>(user);
  const HttpRequest& q = *a->request;
  // The status is known once the headers are in; only a 2xx body of a range read goes to dst.
  if (a->response.status == 0) curl_easy_getinfo(a->handle, CURLINFO_RESPONSE_CODE, &a->response.status);
  if (q.dst && a->response.status / 100 == 2) {
    if (a->received + int64_t(n) > q.length) {
      a->overflow = true;
      return 0;  // aborts the transfer: CURLE_WRITE_ERROR
    }
    char* to = static_cast<char*>(q.dst) + a->received;
    if (q.length >= kLargeBody) {
      copy_to_large_body(to, s, n);
    } else {
      std::memcpy(to, s, n);
    }
  } else if (a->response.body.size() < (q.dst ? kMaxErrorBody : SIZE_MAX)) {
    a->response.body.append(s, n);
  }
  a->received += int64_t(n);
  return n;
}

void HttpClient::AttemptDeleter::operator()(Attempt* a) const { delete a; }
HttpClient::AttemptPtr HttpClient::new_attempt() { return AttemptPtr(new Attempt); }

void HttpClient::start_attempt(void* handle, Tries& t, Attempt* a) {
  const HttpRequest& q = *t.request;
  if (t.follow) {  // a redirect's next hop: the same attempt, not a retry
    t.follow = false;
    ++t.redirects;
  } else {
    ++t.attempt;
    if (t.attempt > 1) retries_.fetch_add(1, std::memory_order_relaxed);
  }
  requests_.fetch_add(1, std::memory_order_relaxed);
  const int64_t left_ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.deadline - Clock::now()).count();
  int64_t timeout_ms = std::min(options_.request_timeout_ms, std::max<int64_t>(left_ms, 1));
  t.adaptive = false;
  if (options_.adaptive_timeout) {
    // A body shares the bandwidth with the transfers running beside it.
    const int64_t d = adaptive_deadline_ms(q.head ? 0 : q.begin >= 0 ? q.length * t.sharing : -1, t.attempt);
    if (d > 0 && d < timeout_ms) timeout_ms = d, t.adaptive = true;
  }
  CURL* h = static_cast<CURL*>(handle);
  a->request = &q;
  a->handle = h;
  curl_easy_reset(h);  // keeps the connection, the DNS cache and the TLS session
  curl_easy_setopt(h, CURLOPT_URL, t.url.c_str());
  // The path as given: "a/../b" names an object of its own on S3 (and may on HTTP); libcurl
  // would otherwise remove dot segments and read another object. SigV4 signs what is sent.
  curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, a->errbuf);
  // Redirects are followed by judge(), which decides what goes to the new origin.
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  // After a transport failure (a drop, a cut body, a stall, a connection that misbehaved), the
  // retry goes on a new connection.
  curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, t.transport ? 1L : 0L);
  // The receive buffer: the curl CLI's 100 KiB (libcurl's default is 16 KiB: six times the recv
  // calls and write callbacks), and libcurl's largest, 512 KiB, for a body of 1 MiB or more
  // (whole objects, streaming blocks, cache downloads): a fifth fewer CPU seconds per MB than
  // 100 KiB (docs/PERFORMANCE.md, CPU per MB).
  curl_easy_setopt(h, CURLOPT_BUFFERSIZE, q.dst && q.length >= kLargeBody ? 512L * 1024 : 100L * 1024);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
  if (!options_.ca_bundle.empty()) curl_easy_setopt(h, CURLOPT_CAINFO, options_.ca_bundle.c_str());
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, long(std::min(options_.connect_timeout_ms, timeout_ms)));
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, long(std::max<int64_t>(1, timeout_ms)));
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, long(options_.low_speed_bytes_per_s));
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, long(options_.low_speed_time_s));
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, a);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, a);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  if (q.head) curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  if (q.begin >= 0) {
    a->range = std::to_string(q.begin) + "-" + std::to_string(q.begin + q.length - 1);
    curl_easy_setopt(h, CURLOPT_RANGE, a->range.c_str());
  }
  a->credentials = !t.foreign;
  for (const std::string& s : q.headers) a->headers = curl_slist_append(a->headers, s.c_str());
  // If-Match takes a strong ETag only (a weak one never matches); the ETag of the answer is
  // compared either way (judge()).
  if (!q.etag.empty() && q.etag.rfind("W/", 0) != 0)
    a->headers = curl_slist_append(a->headers, ("If-Match: " + q.etag).c_str());
  if (a->credentials)
    for (const std::string& s : q.credential_headers) a->headers = curl_slist_append(a->headers, s.c_str());
  if (a->headers) curl_easy_setopt(h, CURLOPT_HTTPHEADER, a->headers);
  if (!q.aws_sigv4.empty() && a->credentials) {
    curl_easy_setopt(h, CURLOPT_AWS_SIGV4, q.aws_sigv4.c_str());
    curl_easy_setopt(h, CURLOPT_USERPWD, q.userpwd.c_str());
  }
}

void HttpClient::end_attempt(int code, Attempt* a) {
  CURL* h = a->handle;
  a->code = CURLcode(code);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &a->response.status);
  curl_off_t ttfb = 0, total = 0;
  long connects = 0;
  curl_easy_getinfo(h, CURLINFO_STARTTRANSFER_TIME_T, &ttfb);
  curl_easy_getinfo(h, CURLINFO_TOTAL_TIME_T, &total);
  curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &connects);
  a->first_byte_us = int64_t(ttfb), a->total_us = int64_t(total);
  first_byte_ns_.fetch_add(int64_t(ttfb) * 1000, std::memory_order_relaxed);
  transfer_ns_.fetch_add(int64_t(total) * 1000, std::memory_order_relaxed);
  connections_.fetch_add(connects, std::memory_order_relaxed);
  a->reused = connects == 0;
  curl_slist_free_all(a->headers);
  a->headers = nullptr;
  if (a->code != CURLE_OK) a->curl_error = a->errbuf[0] ? a->errbuf : curl_easy_strerror(a->code);
  const long st = a->response.status;
  char* location = nullptr;
  if (a->code == CURLE_OK && st >= 300 && st < 400 && curl_easy_getinfo(h, CURLINFO_REDIRECT_URL, &location) == CURLE_OK &&
      location)
    a->response.location = location;
}

// Why the redirect of attempt `a` (to a.response.location) is not followed; "" when it is.
std::string HttpClient::refuse_redirect(const Tries& t, const Attempt& a) const {
  const HttpRequest& q = *t.request;
  const std::string& to = a.response.location;
  const std::string there = origin(to), here = origin(t.url);
  const std::string shown = strip_query(to);
  if (t.redirects >= kMaxRedirects)
    return "more than " + std::to_string(kMaxRedirects) + " redirects (the last to " + shown + ")";
  if (there.rfind("http://", 0) != 0 && there.rfind("https://", 0) != 0)
    return "a redirect to another scheme than http or https is refused (" + shown + ")";
  if (here.rfind("https://", 0) == 0 && there.rfind("http://", 0) == 0)
    return "a redirect from https to http is refused (to " + shown + ")";
  if (!q.aws_sigv4.empty() && there != origin(q.url))
    return "a signed request is not sent to another host than the one it was signed for (redirected to " +
           there + "; point AWS_ENDPOINT_URL or the region at where the bucket is)";
  return "";
}

std::optional<Result<HttpResponse>> HttpClient::judge(Tries& t, Attempt& a) {
  const HttpRequest& q = *t.request;
  if (t.adaptive && a.code == CURLE_OPERATION_TIMEDOUT) stalls_.fetch_add(1, std::memory_order_relaxed);
  t.transport = false;  // a drop, a cut body or a stall: the server did not ask for less
  a.response.attempts = t.attempt;
  if (a.response.status > 0 || a.received > 0) t.heard = Clock::now();
  bool retry = false;
  const long st = a.response.status;
  if (a.code == CURLE_ABORTED_BY_CALLBACK) {
    return Status::cancelled(describe(q, a.response, "") + ": cancelled (the work that asked for it was dropped)");
  } else if (a.overflow) {
    failures_.fetch_add(1, std::memory_order_relaxed);
    return Status::io_error(describe(q, a.response, "") + ": the server sent more than the " +
                            std::to_string(q.length) + " bytes asked for (does it ignore Range?)");
  } else if (a.code != CURLE_OK) {
    t.last_problem = a.curl_error;
    // A kept-alive connection that answers with nonsense ("Received HTTP/0.9 when not allowed")
    // holds what an earlier answer sent past its Content-Length: a transport failure, not the
    // server's answer to this request (libcurl closes that connection; the retry opens another).
    const bool poisoned = a.reused && (a.code == CURLE_UNSUPPORTED_PROTOCOL || a.code == CURLE_WEIRD_SERVER_REPLY);
    if (!transient(a.code) && !poisoned) {
      failures_.fetch_add(1, std::memory_order_relaxed);
      return Status::io_error(describe(q, a.response, "") + ": " + t.last_problem);
    }
    retry = t.transport = true;
  } else if (st >= 300 && st < 400 && !a.response.location.empty()) {
    if (std::string why = refuse_redirect(t, a); !why.empty()) {
      failures_.fetch_add(1, std::memory_order_relaxed);
      return Status::io_error(describe(q, a.response, "") + ": " + why);
    }
    // Credentials go only to the origin they belong to, the one the request was made for.
    t.foreign = origin(a.response.location) != origin(q.url);
    t.url = a.response.location;
    t.follow = true;
    return std::nullopt;
  } else if (st == 412 && !q.etag.empty()) {
    failures_.fetch_add(1, std::memory_order_relaxed);
    return Status::io_error(changed_object_message(q, a.response));
  } else if ((st / 100 == 2 || st == 416) && !q.head && ((!q.etag.empty() && !a.response.etag.empty() && a.response.etag != q.etag) ||
                                          (q.size >= 0 && a.response.total_size >= 0 && a.response.total_size != q.size))) {
    failures_.fetch_add(1, std::memory_order_relaxed);  // a server that ignores If-Match, or a lying HEAD
    return Status::io_error(changed_object_message(q, a.response));
  } else if (st >= 500 || st == 429) {
    retry = true;
    t.last_problem.clear();
  } else if (st / 100 == 2 && !q.head && q.begin >= 0 && (st != 206 || a.received != q.length)) {
    if (st != 206 && !(st == 200 && q.begin == 0 && a.received == q.length)) {
      failures_.fetch_add(1, std::memory_order_relaxed);
      return Status::io_error(describe(q, a.response, "") + ": the server ignored the Range header");
    }
    if (a.received != q.length) {
      retry = t.transport = true;  // a short body is never data
      t.last_problem = "short body: " + std::to_string(a.received) + " of " + std::to_string(q.length) + " bytes";
    }
  }
  if (!retry) {
    if (st / 100 == 2) {
      bytes_.fetch_add(a.received, std::memory_order_relaxed);
      observe(a.first_byte_us, a.total_us, a.received * t.sharing);
    } else if (st == 404 || st == 410) {
      // An answer, not a failure of the transport or the server: an absent .idx sidecar is
      // expected; a missing shard is counted by the reader that needed it.
      not_found_.fetch_add(1, std::memory_order_relaxed);
    } else {
      failures_.fetch_add(1, std::memory_order_relaxed);
    }
    return Result<HttpResponse>(std::move(a.response));
  }
  t.last = std::move(a.response);
  return std::nullopt;
}

std::optional<HttpClient::Clock::duration> HttpClient::retry_after(const Tries& t) const {
  if (t.follow) return Clock::now() < t.deadline ? std::optional<Clock::duration>(Clock::duration::zero()) : std::nullopt;
  // Full jitter: sleep uniform(0, min(max, initial * 2^(attempt-1))).
  const double cap = double(std::min<int64_t>(options_.backoff_max_ms,
                                              options_.backoff_initial_ms << std::min(t.attempt - 1, 20)));
  // The first retry after a transport failure goes at once (on a new connection).
  const auto sleep = std::chrono::microseconds(
      t.transport && t.attempt == 1 ? 0 : int64_t(cap * 1000 * uniform01(options_.jitter_seed)));
  const auto next = Clock::now() + sleep;
  if (t.attempt >= options_.max_attempts || next >= t.deadline ||
      next - t.heard >= std::chrono::milliseconds(options_.silence_timeout_ms))
    return std::nullopt;
  return sleep;
}

Result<HttpResponse> HttpClient::give_up(Tries& t) {
  failures_.fetch_add(1, std::memory_order_relaxed);
  const auto now = Clock::now();
  const double secs = std::chrono::duration<double>(now - t.start).count();
  std::string why = t.last_problem.empty() ? "" : ": " + t.last_problem;
  const auto silent_ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - t.heard).count();
  if (silent_ms + 1000 >= options_.silence_timeout_ms && t.attempt < options_.max_attempts)
    why += "; the server sent nothing for " + std::to_string((silent_ms + 500) / 1000) + " s";
  char took[32];
  std::snprintf(took, sizeof took, "%.1f", secs);
  if (t.last_problem.empty() && t.last.status >= 500) return std::move(t.last);  // the caller formats it (S3 code)
  return Status::io_error(describe(*t.request, t.last, "") + why + " (gave up after " +
                          std::to_string(t.last.attempts) + " attempts in " + took + " s)");
}

Result<HttpResponse> HttpClient::perform(const HttpRequest& q) {
  Tries t(q, options_);
  for (;;) {
    void* h = take_handle();
    if (!h) return Status::internal("curl_easy_init failed");
    Attempt a;
    start_attempt(h, t, &a);
    end_attempt(curl_easy_perform(static_cast<CURL*>(h)), &a);
    give_back(h);
    if (std::optional<Result<HttpResponse>> done = judge(t, a)) return std::move(*done);
    const std::optional<Clock::duration> sleep = retry_after(t);
    if (!sleep) break;
    // The backoff in slices, so that cancelled work does not wait it out.
    for (const auto until = Clock::now() + *sleep; Clock::now() < until;) {
      if (cancel_requested()) return Status::cancelled(describe(q, t.last, "") + ": cancelled during a retry's backoff");
      std::this_thread::sleep_for(std::min<Clock::duration>(until - Clock::now(), std::chrono::milliseconds(20)));
    }
  }
  return give_up(t);
}

int64_t HttpClient::adaptive_deadline_ms(int64_t length, int attempt) {
  double us;
  {
    std::lock_guard<std::mutex> lock(est_mu_);
    if (seen_ < 8 || length < 0) return -1;
    us = srtt_us_ + 4 * rttvar_us_;
    if (length > 64 * 1024) {  // small bodies come in the first packets: the first byte's time
      if (rate_ <= 0 || length > 2 * rate_max_bytes_) return -1;
      us += 4e6 * double(length) / rate_;
    }
  }
  const int64_t ms = std::max<int64_t>(options_.stall_timeout_min_ms, int64_t(us / 1000) + 1);
  return attempt > 1 ? ms << std::min(attempt - 1, 20) : ms;
}

void HttpClient::observe(int64_t first_byte_us, int64_t total_us, int64_t body_bytes) {
  std::lock_guard<std::mutex> lock(est_mu_);
  const double r = double(first_byte_us);
  if (seen_++ == 0) {  // RFC 6298 2.2
    srtt_us_ = r, rttvar_us_ = r / 2;
  } else {  // 2.3: alpha 1/8, beta 1/4
    rttvar_us_ = 0.75 * rttvar_us_ + 0.25 * std::abs(srtt_us_ - r);
    srtt_us_ = 0.875 * srtt_us_ + 0.125 * r;
  }
  const int64_t body_us = total_us - first_byte_us;
  if (body_bytes >= 64 * 1024 && body_us > 0) {
    const double rate = double(body_bytes) * 1e6 / double(body_us);
    rate_ = rate_ > 0 ? 0.875 * rate_ + 0.125 * rate : rate;
    rate_max_bytes_ = std::max(rate_max_bytes_, body_bytes);
  }
}

RemoteStats HttpClient::stats() const {
  RemoteStats s;
  s.requests = requests_.load(std::memory_order_relaxed);
  s.retries = retries_.load(std::memory_order_relaxed);
  s.failures = failures_.load(std::memory_order_relaxed);
  s.bytes = bytes_.load(std::memory_order_relaxed);
  s.first_byte_ns = first_byte_ns_.load(std::memory_order_relaxed);
  s.transfer_ns = transfer_ns_.load(std::memory_order_relaxed);
  s.connections = connections_.load(std::memory_order_relaxed);
  s.stalls = stalls_.load(std::memory_order_relaxed);
  s.not_found = not_found_.load(std::memory_order_relaxed);
  s.in_flight_peak = prefetch.in_flight_peak.load(std::memory_order_relaxed);
  s.prefetches = prefetch.started.load(std::memory_order_relaxed);
  s.prefetch_hits = prefetch.hits.load(std::memory_order_relaxed);
  s.prefetch_wasted_bytes = prefetch.wasted_bytes.load(std::memory_order_relaxed);
  s.prefetch_cut = prefetch.cut.load(std::memory_order_relaxed);
  return s;
}

std::string HttpClient::describe(const HttpRequest& q, const HttpResponse& r, const std::string& detail) {
  std::string out = std::string(q.head ? "HEAD " : "GET ") + (q.shown.empty() ? strip_query(q.url) : q.shown);
  if (q.begin >= 0) out += " (bytes " + std::to_string(q.begin) + "-" + std::to_string(q.begin + q.length - 1) + ")";
  if (r.status > 0) out += ": HTTP " + std::to_string(r.status);
  out += detail;
  if (r.status >= 400 && r.attempts > 1) out += " after " + std::to_string(r.attempts) + " attempts";
  return out;
}

int64_t object_stamp(const std::string& version, int64_t modified_ns) {
  if (version.empty()) return modified_ns;
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : version) h = (h ^ c) * 1099511628211ULL;
  return int64_t(h >> 1);
}

std::string changed_object_message(const HttpRequest& q, const HttpResponse& r) {
  std::string now;
  if (r.status == 412) {
    now = "HTTP 412 to If-Match " + q.etag;
  } else {
    if (!r.etag.empty() && r.etag != q.etag) now = "ETag " + r.etag;
    if (r.total_size >= 0 && r.total_size != q.size)
      now += (now.empty() ? "" : ", ") + std::to_string(r.total_size) + " bytes";
  }
  std::string was = q.etag.empty() ? "" : "ETag " + q.etag;
  if (q.size >= 0) was += (was.empty() ? "" : ", ") + std::to_string(q.size) + " bytes";
  return HttpClient::describe(q, HttpResponse{}, "") + ": the object changed since it was opened, or its HEAD did not describe it (it was " + was +
         "; now " + now + "): nothing is read from another version of it; a new open (a new run) reads the new one";
}

std::string strip_query(const std::string& url) { return url.substr(0, url.find_first_of("?#")); }

bool has_scheme(std::string_view path, std::string_view scheme) {
  if (path.size() < scheme.size()) return false;
  for (size_t i = 0; i < scheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(path[i])) != scheme[i]) return false;
  return true;
}

}  // namespace hdl::detail
