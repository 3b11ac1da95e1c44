// SHA-256 (FIPS 180-4, computed by OpenSSL's libcrypto, which libcurl already loads), for the local cache's entry names (media/cache_file_system.cc): a key
// that is a pure function of the URL and cannot spell a path. Not for security. Thread safety:
// a pure function.
#pragma once

#include "media/api.h"
#include <string>
#include <string_view>

HDL_API_BEGIN  // exported for the tests (tests/media/cache_file_system_test.cc)
namespace hdl::detail {

/// The SHA-256 digest of `bytes`, as 64 lower-case hex digits.
std::string sha256_hex(std::string_view bytes);

}  // namespace hdl::detail
HDL_API_END
