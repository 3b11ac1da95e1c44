#include "media/cancel.h"

namespace hdl {
namespace {

struct Current {
  const std::atomic<int64_t>* generation = nullptr;
  int64_t expected = 0;
};
thread_local Current current;

}  // namespace

CancelScope::CancelScope(const std::atomic<int64_t>* generation, int64_t expected)
    : saved_generation_(current.generation), saved_expected_(current.expected) {
  current = {generation, expected};
}

CancelScope::~CancelScope() { current = {saved_generation_, saved_expected_}; }

bool cancel_requested() {
  return current.generation && current.generation->load(std::memory_order_relaxed) != current.expected;
}

}  // namespace hdl
