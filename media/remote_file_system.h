// The contract of remote file systems: datasets in object stores and behind HTTP, behind the
// FileSystem seam (media/file_system.h), so every path the loader takes (file lists, shard
// specs, hdl-bench's DATA, Python) may be a URL. This header holds what every store shares:
// RemoteOptions (how requests are made), RemoteStats (their counters) and RemoteFileSystem
// (FileSystem + stats() + list()). Each store has its own header:
//
//   http://host/path, https://host/path   media/http_file_system.h: open = HEAD (size, ETag,
//                                         Last-Modified), read = a range GET of that version
//   s3://bucket/key                       media/s3_file_system.h: the same over S3's REST API,
//                                         signed with AWS Signature V4 by libcurl
//   (the router)                          media/url_file_system.h: url_file_system() picks the
//                                         store by the URL's scheme from one table, and
//                                         default_file_system() is the process-wide one
// How to add a store (GCS's XML API, Azure Blob, ...): media/README.md, "Adding a store".
//
// Transport (media/detail/http_client.h): libcurl, which no public header includes. Connection
// pool: a stack of curl easy handles under a mutex; a request takes one (or makes one), and
// gives it back, its keep-alive connection open, when done; at most
// RemoteOptions::max_idle_connections are kept. A thread that reads makes its request itself,
// on a warm connection. Beyond the reading threads, requests in flight (issue 24): a range
// hinted with RandomAccessFile::will_need is fetched in the background by the file system's
// one I/O thread (media/detail/fetch_loop.h: libcurl's multi interface driven by
// curl_multi_poll, an event loop, not a compute pool), at most RemoteOptions::max_in_flight
// at a time (HDL_HTTP_MAX_IN_FLIGHT, default 32; 0: off), with at most prefetch_bytes
// (HDL_HTTP_PREFETCH_BYTES, 64 MiB) fetched and not yet read; a read() inside such a range
// waits for it instead of asking again (media/detail/remote_file.h). Background requests
// have the same retries, deadlines and counters as the others. TLS peers are always verified
// (RemoteOptions::ca_bundle names another CA file; there is no switch to turn verification
// off). Redirects are followed by the client (at most 5, never https -> http, credentials only
// to their own origin: media/detail/http_client.h). An object is read as it was opened: range
// reads carry its ETag (If-Match) and are checked against its size.
//
// Faults: an attempt that fails with a connection error (refused, reset, nothing received), a
// timeout (its adaptive deadline, see RemoteOptions::adaptive_timeout; request_timeout_ms; or
// less than low_speed_bytes_per_s for low_speed_time_s), an HTTP 5xx or 429 (S3's SlowDown is
// a 503), or a body shorter than asked for (a short body is never returned as data) is
// retried after an exponential backoff with full jitter, until max_attempts,
// total_timeout_ms, or silence_timeout_ms without a byte from the server. The first retry
// after a transport failure (a drop, a cut body, a stall) goes at once, on a new connection:
// the server did not ask for less; 5xx and 429 back off from the first retry. Other 4xx fail
// at once; S3's authentication errors (InvalidAccessKeyId, SignatureDoesNotMatch, ...) say
// where the credentials came from. Every error names the URL (never a query string's
// signature or a secret: media/text.h), the HTTP status and, for S3, the error code from the
// XML body. Work a pipeline drops cancels its requests (media/cancel.h).
//
// Thread safety: everything here may be called from any number of threads; stats() are
// relaxed atomic counters, consistent enough for reports.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "media/api.h"
#include "media/file_system.h"
#include "media/status.h"

HDL_API_BEGIN
namespace hdl {

/// How remote reads are made. Every field has its default in the comment.
struct RemoteOptions {
  std::string ca_bundle;                   ///< "": the system's CA store (libcurl's default)
  int64_t connect_timeout_ms = 10000;      ///< 10 s per connection attempt
  int64_t request_timeout_ms = 60000;      ///< 60 s per attempt (one request, whole body)
  int64_t total_timeout_ms = 300000;       ///< 5 min for all attempts of one read
  int64_t low_speed_bytes_per_s = 1024;    ///< slower than this for low_speed_time_s: a stall
  int64_t low_speed_time_s = 20;           ///< 20 s
  /// A read gives up once the server has sent nothing, over its attempts, for this long (from
  /// its start, or from the last attempt that got bytes): a dead server (one that accepts and
  /// then says nothing) is reported in about a minute, not after every attempt has stalled.
  int64_t silence_timeout_ms = 60000;      ///< 60 s
  /// Stalls are caught by a deadline per attempt, derived from what this client has seen:
  /// the retransmission timeout of RFC 6298 applied to the time to first byte (smoothed mean
  /// + 4 mean deviations) plus the bytes asked for at a quarter of the observed transfer rate,
  /// at least stall_timeout_min_ms, doubled on each retry of one request. request_timeout_ms
  /// (and what is left of total_timeout_ms) stays the bound: until 8 attempts have been seen,
  /// and for a transfer larger than any seen at a measured rate, the attempt gets that.
  bool adaptive_timeout = true;            ///< false: every attempt gets request_timeout_ms
  int64_t stall_timeout_min_ms = 100;      ///< the adaptive deadline's floor: 100 ms
  int max_attempts = 10;                   ///< attempts per request, the first included
  int64_t backoff_initial_ms = 50;         ///< first retry after up to 50 ms (full jitter)
  int64_t backoff_max_ms = 5000;           ///< backoff ceiling: 5 s
  int max_idle_connections = 64;           ///< idle keep-alive connections kept in the pool
  int64_t small_read_block = 16384;        ///< reads <= 1 KiB (tar headers, labels) fetch and
                                           ///< keep a block this large (16 KiB); 0: off
  uint64_t jitter_seed = 0;                ///< 0: random; else a fixed seed (tests)
  /// Requests in flight beyond the reading threads: ranges hinted with
  /// RandomAccessFile::will_need (the indexed webdataset_reader hints the samples of the
  /// batches the pipeline has scheduled) are fetched in the background by one I/O thread per
  /// file system (libcurl's multi interface; an event loop, not a compute pool), at most this
  /// many at a time, each on its own keep-alive connection. 0: no prefetching (every request
  /// is made by the thread that reads, as before).
  int max_in_flight = 32;                  ///< 32 transfers at a time
  int64_t prefetch_bytes = 64 << 20;       ///< prefetched but unread bytes at most, per file
                                           ///< system (HTTP, S3): 64 MiB; a hint beyond it is
                                           ///< cut (remote_prefetch_cut)
  int64_t prefetch_stale_ms = 30000;       ///< a prefetch ready and unread this long is given
                                           ///< up (wasted bytes) when its file is hinted again
                                           ///< with the budget full: 30 s

  /// RemoteOptions from the environment: HDL_CA_BUNDLE (else CURL_CA_BUNDLE),
  /// HDL_HTTP_TIMEOUT_MS (request), HDL_HTTP_TOTAL_TIMEOUT_MS, HDL_HTTP_SILENCE_TIMEOUT_MS, HDL_HTTP_MAX_ATTEMPTS,
  /// HDL_HTTP_STALL_MIN_MS (stall_timeout_min_ms), HDL_HTTP_ADAPTIVE_TIMEOUT (0 or 1),
  /// HDL_HTTP_MAX_IN_FLIGHT (max_in_flight, 0 allowed: off), HDL_HTTP_PREFETCH_BYTES; the rest
  /// default. A value that is not a positive integer (0/1 for the switch, a non-negative one
  /// for max_in_flight) is a std::invalid_argument naming it.
  static RemoteOptions from_environment();
};

/// Counters of one remote file system (all since it was made).
struct RemoteStats {
  int64_t requests = 0;          ///< attempts sent (HEAD, GET, list), retries included
  int64_t retries = 0;           ///< attempts that were retries
  int64_t failures = 0;          ///< requests that failed for good (after their retries); a 404 or
                                 ///< 410 is not one (not_found)
  int64_t not_found = 0;         ///< requests answered 404 or 410 (an absent .idx sidecar, a missing object)
  int64_t bytes = 0;             ///< body bytes received and used
  int64_t first_byte_ns = 0;     ///< sum over attempts of the time to the first byte
  int64_t transfer_ns = 0;       ///< sum over attempts of the whole attempt's time
  int64_t connections = 0;       ///< new connections opened (keep-alive reuses are not counted)
  int64_t stalls = 0;            ///< attempts ended by their adaptive deadline (then retried)
  int64_t in_flight_peak = 0;    ///< most background transfers running at once (max_in_flight)
  int64_t prefetches = 0;        ///< hinted ranges fetched in the background
  int64_t prefetch_hits = 0;     ///< reads served from a prefetched range
  int64_t prefetch_wasted_bytes = 0;  ///< prefetched bytes dropped unread
  int64_t prefetch_cut = 0;      ///< hints not followed: the prefetch_bytes budget was full
};

/// One object of a listing.
struct RemoteObject {
  std::string url;   ///< "s3://bucket/key"
  int64_t size = 0;
};

/// A FileSystem over a network; stats() and list() beyond FileSystem.
class RemoteFileSystem : public FileSystem {
 public:
  virtual RemoteStats stats() const = 0;
  /// stats() for the pipeline's stats: remote_requests, remote_retries, remote_failures, remote_not_found,
  /// remote_bytes, remote_connections, remote_stalls, remote_first_byte_us (mean over
  /// requests), remote_bytes_per_s (bytes received over the summed time of the attempts: the
  /// rate one connection sees; requests in parallel add up to more), and once a range was
  /// prefetched remote_in_flight_peak, remote_prefetches, remote_prefetch_hits,
  /// remote_prefetch_wasted_bytes, remote_prefetch_cut; none before the first request (a local
  /// dataset's report has no remote lines).
  std::vector<std::pair<std::string, int64_t>> counters() const override;
  /// Every object whose URL starts with `prefix` (the S3 file system: ListObjectsV2, paginated,
  /// in key order). Errors: as reads; kUnsupported where the protocol cannot list (HTTP).
  virtual Result<std::vector<RemoteObject>> list(const std::string& prefix) = 0;
};

}  // namespace hdl
HDL_API_END

