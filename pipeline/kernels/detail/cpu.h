// Run-time CPU dispatch for the kernels' AVX2 twins (internal to pipeline/kernels). The twins
// do each lane's arithmetic as the baseline code does, in the same order and without FMA (the
// avx2 target does not enable it, so nothing is contracted): results are bit-identical on every
// machine, and the library still runs on any x86-64.
#pragma once

#include <cstdlib>
#include <cstring>

#include "media/api.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HDL_KERNELS_AVX2 1
#endif

HDL_API_BEGIN
namespace hdl::kernels::detail {

// Whether this CPU can run the AVX2 twins at all, whatever the environment says (for tests that
// compare a twin with its baseline in one process).
inline bool cpu_supports_avx2() {
#ifdef HDL_KERNELS_AVX2
  return __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

// Whether the AVX2 twins may run. HDL_DISABLE_AVX2=1 in the environment keeps the baseline
// paths (tests run both; a user can rule the AVX2 code out when chasing a difference).
inline bool cpu_has_avx2() {
#ifdef HDL_KERNELS_AVX2
  static const bool has = [] {
    const char* off = std::getenv("HDL_DISABLE_AVX2");
    return cpu_supports_avx2() && !(off && *off && std::strcmp(off, "0") != 0);
  }();
  return has;
#else
  return false;
#endif
}

}  // namespace hdl::kernels::detail
HDL_API_END
