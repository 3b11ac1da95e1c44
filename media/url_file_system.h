// The router: which store a path goes to (media/remote_file_system.h has the contract). One
// table, in url_file_system.cc, from a scheme ("http://", "https://", "s3://") to the function
// that makes its store; a path with none of them goes to the local file system. Adding a store
// is a row there and a header of its own (media/README.md, "Adding a store").
//
// Thread safety: every function may be called from any thread; url_file_system()'s stores are
// made on first use, under a lock.
#pragma once

#include <memory>
#include <string_view>

#include "media/api.h"
#include "media/file_system.h"
#include "media/remote_file_system.h"

HDL_API_BEGIN
namespace hdl {

/// True for paths whose scheme names a store (case-insensitive): "http://", "https://", "s3://".
bool is_remote_url(std::string_view path);

/// Dispatches on the scheme: each store is made on first use (s3:// from
/// s3_config_from_environment(): its error is then open()'s), the rest goes to `local`.
/// stats() and list() are the stores' (summed).
std::shared_ptr<RemoteFileSystem> url_file_system(const RemoteOptions& options = RemoteOptions::from_environment(),
                                                  std::shared_ptr<FileSystem> local = posix_file_system());

/// The one process-wide url_file_system() (options from the environment when first called),
/// under a local cache when HDL_CACHE_DIR names one (CacheOptions::from_environment(),
/// media/cache_file_system.h): what the pipeline reads through when
/// PipelineOptions::file_system is null and PipelineOptions::cache names no directory.
std::shared_ptr<RemoteFileSystem> default_file_system();

}  // namespace hdl
HDL_API_END
