// CRC-32C (Castagnoli, iSCSI's; RFC 3720): the check the local cache writes with each entry
// and verifies before it serves one (media/detail/cache_dir.h). SSE4.2's crc32 instruction
// where the CPU has it (about 8 GB/s here), else a table.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

#include "media/api.h"

HDL_API_BEGIN  // exported for the tests (tests/media/cache_file_system_test.cc)
namespace hdl::detail {

/// The CRC-32C of n bytes at p, continuing from `crc` (0 to start): crc32c(b, crc32c(a)) is the
/// CRC of a followed by b. crc32c("123456789") is 0xE3069283.
uint32_t crc32c(const void* p, size_t n, uint32_t crc = 0);

}  // namespace hdl::detail
HDL_API_END
