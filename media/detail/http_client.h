// Private to the remote file systems (media/remote_file_system.h): one HTTP request with
// retries over a pool of libcurl easy handles, and the RandomAccessFile both file systems
// return. No libcurl type appears here either: the .cc keeps it.
//
// Thread safety: HttpClient::perform and every RemoteFile method may be called concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "media/file_system.h"
#include "media/remote_file_system.h"
#include "media/status.h"

namespace hdl::detail {

struct HttpRequest {
  std::string url;                   ///< what is requested (may hold a query string)
  std::string shown;                 ///< what messages call it ("s3://b/k"); "": url less its query
  bool head = false;                 ///< HEAD instead of GET
  int64_t begin = -1;                ///< a range GET of [begin, begin + length); -1: the whole body
  int64_t length = 0;
  void* dst = nullptr;               ///< a 2xx range body goes here (room for length); else body
  std::vector<std::string> headers;  ///< "Name: value"
  std::string aws_sigv4;             ///< CURLOPT_AWS_SIGV4's "aws:amz:<region>:s3"; "": unsigned
  std::string userpwd;               ///< "<key id>:<secret>" when signed (never printed)
};

struct HttpResponse {
  long status = 0;            ///< the final HTTP status (after retries)
  int attempts = 0;
  std::string body;           ///< the body when not written to HttpRequest::dst (errors: <= 64 KiB)
  int64_t content_length = -1;
  int64_t total_size = -1;    ///< from "Content-Range: bytes a-b/N"
  int64_t modified_s = 0;     ///< Last-Modified as a Unix time; 0: none
  std::string etag;
};

/// Sends requests, retrying transient failures (see remote_file_system.h). Returns the response
/// for any final HTTP status (2xx, or an error status the caller turns into a message with
/// http_error()); a Status for a transport failure or a short body after the last attempt.
class HttpClient {
 public:
  explicit HttpClient(RemoteOptions options);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  Result<HttpResponse> perform(const HttpRequest& request);
  RemoteStats stats() const;
  const RemoteOptions& options() const { return options_; }

  /// "GET <shown> (bytes a-b): HTTP <status><detail> after N attempts": what a final error
  /// status says (detail: ", S3 error SlowDown: message" and the like).
  static std::string describe(const HttpRequest& request, const HttpResponse& response,
                              const std::string& detail);

  struct Attempt;  // one try's outcome (defined in the .cc, where libcurl's callbacks fill it)

 private:
  void* take_handle();
  void give_back(void* handle);
  Attempt attempt_once(void* handle, const HttpRequest& request, int64_t timeout_ms);
  // The adaptive deadline of an attempt (RemoteOptions::adaptive_timeout): the time to first
  // byte's RFC 6298 timeout plus `length` bytes at a quarter of the observed rate, at least
  // stall_timeout_min_ms, times 2^(attempt-1); -1 when there is no estimate yet.
  int64_t adaptive_deadline_ms(int64_t length, int attempt);
  // Feeds one complete 2xx attempt into the estimate (times in microseconds).
  void observe(int64_t first_byte_us, int64_t total_us, int64_t body_bytes);

  RemoteOptions options_;
  std::mutex mu_;
  std::vector<void*> idle_;  // CURL* easy handles, their connections kept alive
  std::atomic<int64_t> requests_{0}, retries_{0}, failures_{0}, bytes_{0}, first_byte_ns_{0},
      transfer_ns_{0}, connections_{0}, stalls_{0};
  // The estimate behind adaptive_deadline_ms (under est_mu_): smoothed time to first byte and
  // its mean deviation (us), the smoothed body rate (bytes/s, 0: none yet), the largest body
  // the rate was measured on, and how many attempts were seen.
  std::mutex est_mu_;
  double srtt_us_ = 0, rttvar_us_ = 0, rate_ = 0;
  int64_t rate_max_bytes_ = 0, seen_ = 0;
};

/// What a RemoteFile reads through: an object's facts, and exact byte ranges of it.
class ObjectReader {
 public:
  virtual ~ObjectReader() = default;
  /// Reads exactly n bytes at offset into dst (the caller clipped the range to the size).
  virtual Status read_range(const std::string& url, int64_t offset, int64_t n, void* dst) = 0;
};

/// A remote object: size and stamp from open()'s HEAD; read() is a range read, clipped to the
/// size, with reads of at most 1 KiB served from one cached block of options.small_read_block.
class RemoteFile final : public RandomAccessFile {
 public:
  RemoteFile(std::shared_ptr<ObjectReader> reader, std::string url, int64_t size, int64_t modified_ns,
             int64_t small_read_block);
  int64_t size() const override { return size_; }
  int64_t modified_ns() const override { return modified_ns_; }
  Result<int64_t> read(int64_t offset, int64_t n, void* dst) const override;

 private:
  std::shared_ptr<ObjectReader> reader_;
  std::string url_;
  int64_t size_, modified_ns_, block_;
  mutable std::mutex mu_;
  mutable int64_t cached_at_ = -1;
  mutable std::string cached_;
};

/// The stamp for an object: Last-Modified in ns, else a positive hash of the ETag, else 0.
int64_t object_stamp(const HttpResponse& head);

/// url without its query string and fragment (what messages may show).
std::string strip_query(const std::string& url);

}  // namespace hdl::detail
