#include "media/detail/remote_file.h"

#include <chrono>
#include <condition_variable>
#include <cstring>

#include "media/cancel.h"

namespace hdl::detail {

Status ObjectReader::read_range(const std::string& url, const Pinned& pinned, int64_t offset, int64_t n, void* dst) {
  for (bool again = true;; again = false) {
    HDL_ASSIGN_OR_RETURN(HttpRequest q, range_request(url, offset, n, dst));
    q.etag = pinned.etag, q.size = pinned.size;
    HDL_ASSIGN_OR_RETURN(HttpResponse r, client.perform(q));
    if (r.status / 100 == 2) return Status::ok();
    if (!again || !relocated(url, r)) return status_for(q, r);
  }
}

void ObjectReader::fetch_range(const std::string& url, const Pinned& pinned, int64_t offset, int64_t n, void* dst,
                               std::function<void(Status)> done) {
  Result<HttpRequest> q = range_request(url, offset, n, dst);
  if (!q.is_ok()) return done(q.status());
  q->etag = pinned.etag, q->size = pinned.size;
  client.submit(std::move(*q), [this, q = *q, done = std::move(done)](Result<HttpResponse> r) {
    if (!r.is_ok()) return done(r.status());
    done(r->status / 100 == 2 ? Status::ok() : status_for(q, *r));
  });
}

// One prefetched range: its buffer, filled by the FetchLoop. Its bytes stay reserved in the
// client's budget until the read that takes it has copied it, else until the last owner (the
// file, the transfer) lets go; then, if it had arrived, they were wasted.
struct RemoteFile::Prefetch {
  enum State { kRunning, kReady, kFailed };
  Status error;  // why it failed (kFailed), under mu
  Prefetch(PrefetchCounters& c, int64_t at, int64_t len)
      : counters(c), offset(at), n(len), data(new char[size_t(len)]) {}
  ~Prefetch() {
    if (used) return;  // released by the read
    if (state == kReady) counters.wasted_bytes.fetch_add(n, std::memory_order_relaxed);
    counters.release(n);
  }
  PrefetchCounters& counters;
  const int64_t offset, n;
  const std::unique_ptr<char[]> data;
  std::chrono::steady_clock::time_point ready_at{};
  std::mutex mu;
  std::condition_variable cv;
  State state = kRunning;  // under mu
  bool used = false;       // under mu
};

RemoteFile::RemoteFile(std::shared_ptr<ObjectReader> reader, std::string url, const HttpResponse& head)
    : reader_(std::move(reader)), url_(std::move(url)), pinned_{head.etag, head.content_length},
      size_(head.content_length), modified_ns_(head.modified_s * 1000000000),
      block_(reader_->client.options().small_read_block) {}

RemoteFile::~RemoteFile() = default;

void RemoteFile::will_need(int64_t offset, int64_t n) const {
  const RemoteOptions& o = reader_->client.options();
  if (o.max_in_flight <= 0 || offset < 0 || n <= 0 || offset >= size_) return;
  n = std::min(n, size_ - offset);
  if (n <= 1024 && block_ > 0) return;  // read() fetches a whole block for these anyway
  PrefetchCounters& counters = reader_->client.prefetch;
  std::shared_ptr<Prefetch> p;
  {
    std::lock_guard lock(mu_);
    if (auto it = prefetches_.upper_bound(offset); it != prefetches_.begin()) {  // already asked for?
      const Prefetch& e = *std::prev(it)->second;
      if (offset + n <= e.offset + e.n) return;
    }
    if (!counters.reserve(n, o.prefetch_bytes)) {
      // Full: this file's prefetches ready and unread for prefetch_stale_ms are given up on first.
      const auto now = std::chrono::steady_clock::now();
      for (auto it = prefetches_.begin(); it != prefetches_.end();) {
        bool stale;
        {
          Prefetch& e = *it->second;
          std::lock_guard elock(e.mu);
          stale = e.state != Prefetch::kRunning && now - e.ready_at > std::chrono::milliseconds(o.prefetch_stale_ms);
        }
        it = stale ? prefetches_.erase(it) : std::next(it);  // unlocked: this may destroy it
      }
      if (!counters.reserve(n, o.prefetch_bytes)) {
        counters.cut.fetch_add(1, std::memory_order_relaxed);
        return;
      }
    }
    p = std::make_shared<Prefetch>(counters, offset, n);
    prefetches_[offset] = p;
  }
  counters.started.fetch_add(1, std::memory_order_relaxed);
  reader_->fetch_range(url_, pinned_, offset, n, p->data.get(), [p](Status st) {
    std::lock_guard lock(p->mu);
    p->state = st.is_ok() ? Prefetch::kReady : Prefetch::kFailed;
    p->error = std::move(st);
    p->ready_at = std::chrono::steady_clock::now();
    p->cv.notify_all();
  });
}

std::shared_ptr<RemoteFile::Prefetch> RemoteFile::find(int64_t offset, int64_t n) const {
  std::lock_guard lock(mu_);
  auto it = prefetches_.upper_bound(offset);
  if (it == prefetches_.begin()) return nullptr;
  --it;
  std::shared_ptr<Prefetch> p = it->second;
  if (offset + n > p->offset + p->n) return nullptr;
  if (offset + n == p->offset + p->n) prefetches_.erase(it);  // read to its end: done with it
  return p;
}

Result<int64_t> RemoteFile::read(int64_t offset, int64_t n, void* dst) const {
  if (offset < 0 || n < 0) return Status::invalid_argument("negative offset or length");
  if (offset >= size_ || n == 0) return int64_t{0};
  n = std::min(n, size_ - offset);
  if (n <= 1024 && block_ > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    if (cached_at_ < 0 || offset < cached_at_ || offset + n > cached_at_ + int64_t(cached_.size())) {
      const int64_t len = std::min(block_, size_ - offset);
      std::string block(size_t(len), '\0');
      HDL_RETURN_IF_ERROR(reader_->read_range(url_, pinned_, offset, len, block.data()));
      cached_ = std::move(block);
      cached_at_ = offset;
    }
    std::memcpy(dst, cached_.data() + (offset - cached_at_), size_t(n));
    return n;
  }
  if (std::shared_ptr<Prefetch> p = find(offset, n)) {
    std::unique_lock lock(p->mu);
    // In slices, so that cancelled work (media/cancel.h) does not wait for a stalled transfer.
    while (!p->cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return p->state != Prefetch::kRunning; }))
      if (cancel_requested()) return Status::cancelled("a read of a prefetched range was cancelled");
    // A failed one's error is this read's (asking again would wait as long again, for the same
    // answer); one cancelled with its file system is dropped, and this read asks itself.
    if (p->state == Prefetch::kFailed && p->error.code() != StatusCode::kCancelled) return p->error;
    if (p->state == Prefetch::kReady) {
      std::memcpy(dst, p->data.get() + (offset - p->offset), size_t(n));
      if (!p->used && offset + n == p->offset + p->n) {  // the read that took it: its budget is free
        p->used = true;
        p->counters.release(p->n);
      }
      p->counters.hits.fetch_add(1, std::memory_order_relaxed);
      return n;
    }
  }
  HDL_RETURN_IF_ERROR(reader_->read_range(url_, pinned_, offset, n, dst));
  return n;
}

}  // namespace hdl::detail
