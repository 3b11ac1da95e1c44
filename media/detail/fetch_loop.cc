#include "media/detail/fetch_loop.h"

#include <curl/curl.h>

#include <algorithm>

namespace hdl::detail {

struct FetchLoop::Transfer {
  Transfer(HttpRequest request, std::function<void(Result<HttpResponse>)> callback, const RemoteOptions& o)
      : q(std::move(request)), done(std::move(callback)), tries(q, o) {}
  HttpRequest q;
  std::function<void(Result<HttpResponse>)> done;
  HttpClient::Tries tries;  // points at q: a Transfer never moves (unique_ptr)
  HttpClient::AttemptPtr attempt;
  CURL* handle = nullptr;
  HttpClient::Clock::time_point not_before{};  // a retry's backoff
};

FetchLoop::FetchLoop(HttpClient& client, int max_in_flight)
    : client_(client), max_in_flight_(std::max(1, max_in_flight)), multi_(curl_multi_init()) {
  // Idle connections kept by the multi handle's cache: one per transfer that may run.
  curl_multi_setopt(static_cast<CURLM*>(multi_), CURLMOPT_MAXCONNECTS, long(max_in_flight_));
  thread_ = std::thread([this] { run(); });
}

FetchLoop::~FetchLoop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  curl_multi_wakeup(static_cast<CURLM*>(multi_));
  thread_.join();
  for (void* h : idle_) curl_easy_cleanup(static_cast<CURL*>(h));
  curl_multi_cleanup(static_cast<CURLM*>(multi_));
}

void FetchLoop::submit(HttpRequest request, std::function<void(Result<HttpResponse>)> done) {
  auto t = std::make_unique<Transfer>(std::move(request), std::move(done), client_.options());
  {
    std::lock_guard lock(mu_);
    submitted_.push_back(std::move(t));
  }
  curl_multi_wakeup(static_cast<CURLM*>(multi_));
}

void FetchLoop::start(std::unique_ptr<Transfer> t) {
  CURLM* multi = static_cast<CURLM*>(multi_);
  if (idle_.empty()) idle_.push_back(curl_easy_init());
  t->handle = static_cast<CURL*>(idle_.back());
  if (!t->handle) {
    idle_.pop_back();
    t->done(Status::internal("curl_easy_init failed"));
    return;
  }
  idle_.pop_back();
  t->attempt = HttpClient::new_attempt();
  // The transfers it will share the bandwidth with: those running and those about to start.
  t->tries.sharing = int(std::min<size_t>(size_t(max_in_flight_), size_t(running_ + 1) + waiting_.size()));
  client_.start_attempt(t->handle, t->tries, t->attempt.get());
  curl_easy_setopt(t->handle, CURLOPT_PRIVATE, t.get());
  curl_multi_add_handle(multi, t->handle);
  ++running_;
  running_list_.push_back(t.get());
  PrefetchCounters& p = client_.prefetch;
  const int64_t now = p.in_flight.fetch_add(1, std::memory_order_relaxed) + 1;
  int64_t peak = p.in_flight_peak.load(std::memory_order_relaxed);
  while (now > peak && !p.in_flight_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  t.release();  // owned by its handle's CURLOPT_PRIVATE until finished()
}

void FetchLoop::finished(Transfer* raw, int code) {
  std::unique_ptr<Transfer> t(raw);
  curl_multi_remove_handle(static_cast<CURLM*>(multi_), t->handle);
  --running_;
  running_list_.erase(std::find(running_list_.begin(), running_list_.end(), raw));
  client_.prefetch.in_flight.fetch_sub(1, std::memory_order_relaxed);
  client_.end_attempt(code, t->attempt.get());
  idle_.push_back(t->handle);
  t->handle = nullptr;
  std::optional<Result<HttpResponse>> result = client_.judge(t->tries, *t->attempt);
  t->attempt.reset();
  if (!result) {
    if (const std::optional<HttpClient::Clock::duration> sleep = client_.retry_after(t->tries)) {
      t->not_before = HttpClient::Clock::now() + *sleep;
      waiting_.push_front(std::move(t));  // before the new ones: it was asked for first
      return;
    }
    result = client_.give_up(t->tries);
  }
  t->done(std::move(*result));
}

void FetchLoop::run() {
  CURLM* multi = static_cast<CURLM*>(multi_);
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (stop_) break;
      while (!submitted_.empty()) {
        waiting_.push_back(std::move(submitted_.front()));
        submitted_.pop_front();
      }
    }
    // Start what may run now, in order; a retry still in its backoff lets the next go first.
    const auto now = HttpClient::Clock::now();
    auto next_due = HttpClient::Clock::time_point::max();
    for (auto it = waiting_.begin(); it != waiting_.end() && running_ < max_in_flight_;) {
      if ((*it)->not_before > now) {
        next_due = std::min(next_due, (*it)->not_before);
        ++it;
        continue;
      }
      std::unique_ptr<Transfer> t = std::move(*it);
      it = waiting_.erase(it);
      start(std::move(t));
    }
    int still = 0;
    curl_multi_perform(multi, &still);
    int left = 0;
    bool ended = false;
    while (CURLMsg* m = curl_multi_info_read(multi, &left)) {
      if (m->msg != CURLMSG_DONE) continue;
      Transfer* t = nullptr;
      curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, reinterpret_cast<char**>(&t));
      finished(t, m->data.result);  // may call curl_multi_remove_handle: m is not used after
      ended = true;
    }
    // A transfer ended: room for a waiting one, or a retry due at once; go round without waiting.
    if (ended) continue;
    int timeout_ms = 1000;
    if (next_due != HttpClient::Clock::time_point::max()) {
      const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_due - HttpClient::Clock::now());
      timeout_ms = int(std::clamp<int64_t>(wait.count() + 1, 0, timeout_ms));
    }
    curl_multi_poll(multi, nullptr, 0, timeout_ms, nullptr);
  }
  // Stopping: what runs or waits is abandoned.
  std::deque<std::unique_ptr<Transfer>> rest;
  {
    std::lock_guard lock(mu_);
    rest.swap(submitted_);
  }
  for (auto& t : waiting_) rest.push_back(std::move(t));
  waiting_.clear();
  for (Transfer* t : running_list_) {
    curl_multi_remove_handle(multi, t->handle);
    idle_.push_back(t->handle);
    rest.emplace_back(t);
  }
  running_list_.clear();
  client_.prefetch.in_flight.fetch_sub(running_, std::memory_order_relaxed);
  running_ = 0;
  for (auto& t : rest) t->done(Status::cancelled("the remote file system was closed"));
}

}  // namespace hdl::detail
