// Private to the remote file systems: many requests in flight beyond the reading threads.
//
// One FetchLoop per HttpClient (made by its first submit()): one I/O thread driving libcurl's
// multi interface with curl_multi_poll. It is an event loop, not a compute pool: it sends
// requests and copies bodies into their buffers, nothing else, so it takes no CPU from the
// pipeline's threads beyond that copying. At most max_in_flight transfers run at a time (each
// on its own keep-alive connection from the multi handle's connection cache); the rest wait in
// submission order. Every request goes through the same attempts as HttpClient::perform (the
// same setup, adaptive deadline, judgement of the outcome, retries with backoff and jitter, the
// same counters), only without blocking a thread: a retry waits in the loop until its backoff
// has passed.
//
// Thread safety: submit() may be called from any thread; callbacks run on the I/O thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "media/detail/http_client.h"

namespace hdl::detail {

class FetchLoop {
 public:
  FetchLoop(HttpClient& client, int max_in_flight);
  /// Stops the thread: transfers running or waiting are abandoned and their callbacks get
  /// kCancelled.
  ~FetchLoop();
  FetchLoop(const FetchLoop&) = delete;
  FetchLoop& operator=(const FetchLoop&) = delete;

  void submit(HttpRequest request, std::function<void(Result<HttpResponse>)> done);

  struct Transfer;  // one request and its attempts (fetch_loop.cc)

 private:
  void run();
  // Starts the next attempt of t (or finishes it when there is no handle).
  void start(std::unique_ptr<Transfer> t);
  // A finished attempt: its result to the callback, or back to `waiting_` for a retry.
  void finished(Transfer* t, int code);

  HttpClient& client_;
  const int max_in_flight_;
  void* multi_;  // CURLM*
  std::mutex mu_;
  std::deque<std::unique_ptr<Transfer>> submitted_;  // under mu_
  bool stop_ = false;                                // under mu_
  // The I/O thread's own:
  std::deque<std::unique_ptr<Transfer>> waiting_;  // not running: new ones, and retries after their backoff
  int running_ = 0;
  std::vector<Transfer*> running_list_;  // owned through their handles' CURLOPT_PRIVATE
  std::vector<void*> idle_;  // CURL* easy handles
  std::thread thread_;       // last: started once the rest is ready
};

}  // namespace hdl::detail
