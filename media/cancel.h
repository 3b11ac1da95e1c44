// Cancellation of blocking I/O by whoever runs the work: the pipeline's executor marks each
// sample's work with a CancelScope, and the remote file systems (media/remote_file_system.h)
// look at cancel_requested() while they wait (a transfer, a retry's backoff, a prefetch), so
// that a pipeline that is destroyed, reset or closed does not wait for a stalled server: the
// read returns kCancelled within about 100 ms of a transfer's progress check (libcurl calls it
// at least once a second while a server is silent).
//
// A scope names a counter and the value it had when the work began; the work is cancelled
// once the counter moves (the executor's generation, which it bumps to drop work in flight).
//
// Thread safety: a CancelScope belongs to the thread that made it (thread-local); the counter
// may be changed by any thread.
#pragma once

#include <atomic>
#include <cstdint>

#include "media/api.h"

HDL_API_BEGIN
namespace hdl {

/// While it lives, work on this thread is cancelled once `*generation` != `expected`. Scopes
/// nest (the inner one is looked at); the counter must outlive the scope.
class CancelScope {
 public:
  CancelScope(const std::atomic<int64_t>* generation, int64_t expected);
  ~CancelScope();
  CancelScope(const CancelScope&) = delete;
  CancelScope& operator=(const CancelScope&) = delete;

 private:
  const std::atomic<int64_t>* saved_generation_;
  int64_t saved_expected_;
};

/// True when the work this thread runs has been cancelled (its scope's counter moved); false
/// outside any scope.
bool cancel_requested();

}  // namespace hdl
HDL_API_END
