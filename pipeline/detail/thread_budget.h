// Process-wide TBB worker budget. TBB creates (cores - 1) workers by default, expecting the
// caller's thread to help; our consumer thread does no pipeline work, so an arena of n threads
// needs the global limit raised to n + 1. tbb::global_control applies the minimum of all live
// objects, so one process-wide object is kept at the maximum any live pipeline asked for.
#pragma once

#include "media/api.h"

HDL_API_BEGIN
namespace hdl::detail {

/// RAII: while alive, TBB may run at least `threads` workers besides one external thread.
class ThreadBudget {
 public:
  explicit ThreadBudget(int threads);
  ~ThreadBudget();
  ThreadBudget(const ThreadBudget&) = delete;
  ThreadBudget& operator=(const ThreadBudget&) = delete;

 private:
  int threads_;
};

}  // namespace hdl::detail
HDL_API_END
