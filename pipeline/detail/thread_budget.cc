#include "pipeline/detail/thread_budget.h"

#include <tbb/global_control.h>

#include <set>
#include <memory>
#include <mutex>

namespace hdl::detail {
namespace {

struct Budget {
  std::mutex mu;
  std::multiset<int> requests;
  std::unique_ptr<tbb::global_control> control;
  int current = 0;

  void update() {
    const int want = requests.empty() ? 0 : *requests.rbegin() + 1;
    if (want == current) return;
    // Create the new limit before dropping the old one, so the limit never dips in between.
    std::unique_ptr<tbb::global_control> next;
    if (want > 0)
      next = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                   static_cast<size_t>(want));
    control = std::move(next);
    current = want;
  }
};

Budget& budget() {
  static Budget* b = new Budget();  // never destroyed: pipelines may outlive static destructors
  return *b;
}

}  // namespace

ThreadBudget::ThreadBudget(int threads) : threads_(threads) {
  Budget& b = budget();
  std::lock_guard lock(b.mu);
  b.requests.insert(threads_);
  b.update();
}

ThreadBudget::~ThreadBudget() {
  Budget& b = budget();
  std::lock_guard lock(b.mu);
  b.requests.erase(b.requests.find(threads_));
  b.update();
}

}  // namespace hdl::detail
