// Private to the remote file systems (media/remote_file_system.h): the RandomAccessFile both
// return, and what it reads through.
//
// Prefetch (RandomAccessFile::will_need): a hinted range is fetched in the background by the
// client's FetchLoop (media/detail/fetch_loop.h) into a buffer of the file's; a later read()
// of bytes inside it is served from that buffer, waiting for the transfer if it still runs
// (in slices: cancelled work, media/cancel.h, stops waiting). A prefetch that failed gives the
// read its error (with the URL and the status: the same retries ran); one cancelled with its
// file system is dropped and the read makes its own request. Bounded: RemoteOptions::max_in_flight transfers
// at a time, RemoteOptions::prefetch_bytes of buffers per client (a hint that does not fit is
// cut: counted, not fetched), released when the read that reaches a buffer's end has copied it,
// when the file is closed, or when it was ready and unread for RemoteOptions::prefetch_stale_ms
// and the file is hinted again with the budget full (then counted as wasted bytes).
//
// Thread safety: every RemoteFile method may be called concurrently.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "media/detail/http_client.h"

namespace hdl::detail {

/// What a RemoteFile reads through: the client, and how a protocol makes its range requests
/// and words its errors.
class ObjectReader {
 public:
  explicit ObjectReader(const RemoteOptions& options) : client(options) {}
  virtual ~ObjectReader() = default;
  /// The range GET of n bytes at offset of `url`, its body into dst.
  virtual Result<HttpRequest> range_request(const std::string& url, int64_t offset, int64_t n, void* dst) const = 0;
  /// A final error status as a Status naming the URL and the status (kNotFound for 404).
  virtual Status status_for(const HttpRequest& q, const HttpResponse& r) const = 0;
  /// Whether error answer `r` to a request for `url` moved the object (S3: the bucket is in
  /// another region), so that a request made again goes where it is; false by default.
  virtual bool relocated(const std::string& /*url*/, const HttpResponse& /*r*/) { return false; }

  /// What a range read checks the object against: what its HEAD said when it was opened.
  struct Pinned {
    std::string etag;  ///< "": not checked
    int64_t size = -1;
  };
  /// Reads exactly n bytes at offset into dst (the caller clipped the range to the size), of
  /// the object as `pinned` (HttpRequest::etag, ::size: a change is an error, never data).
  Status read_range(const std::string& url, const Pinned& pinned, int64_t offset, int64_t n, void* dst);
  /// read_range() in the background (HttpClient::submit); `done` gets, on the I/O thread, ok
  /// when all n bytes are in dst, else why they will not be.
  void fetch_range(const std::string& url, const Pinned& pinned, int64_t offset, int64_t n, void* dst,
                   std::function<void(Status)> done);

  HttpClient client;
};

/// A remote object: size, modification time and ETag from open()'s HEAD; read() is a range
/// read, clipped to the size, of that version of the object (ObjectReader::Pinned), with reads
/// of at most 1 KiB served from one cached block of options.small_read_block, and reads inside
/// a prefetched range served from it.
class RemoteFile final : public RandomAccessFile {
 public:
  RemoteFile(std::shared_ptr<ObjectReader> reader, std::string url, const HttpResponse& head);
  ~RemoteFile() override;
  int64_t size() const override { return pinned_.size; }
  int64_t modified_ns() const override { return modified_ns_; }
  std::string version() const override { return pinned_.etag; }
  Result<int64_t> read(int64_t offset, int64_t n, void* dst) const override;
  void will_need(int64_t offset, int64_t n) const override;

  struct Prefetch;  // remote_file.cc

 private:
  // The prefetch holding [offset, offset + n), taken out of prefetches_ when the read reaches
  // its end; null when none does.
  std::shared_ptr<Prefetch> find(int64_t offset, int64_t n) const;

  std::shared_ptr<ObjectReader> reader_;  // first: outlives the prefetches
  std::string url_;
  ObjectReader::Pinned pinned_;
  int64_t size_, modified_ns_, block_;
  mutable std::mutex mu_;
  mutable int64_t cached_at_ = -1;
  mutable std::string cached_;
  mutable std::map<int64_t, std::shared_ptr<Prefetch>> prefetches_;  // by offset, under mu_
};

}  // namespace hdl::detail
