// The HTTP(S) store (media/remote_file_system.h has the contract): http:// and https:// URLs.
// open() is a HEAD (the size from Content-Length, the ETag and Last-Modified: the version the
// reads will check), read() a range GET ("Range: bytes=a-b") of that version; nothing can be
// listed. A URL's user part is sent as HTTP Basic credentials to its own origin only.
//
// Thread safety: as RemoteFileSystem.
#pragma once

#include <memory>

#include "media/api.h"
#include "media/remote_file_system.h"

HDL_API_BEGIN
namespace hdl {

/// http:// and https:// URLs. open() of anything else: kInvalidArgument.
std::shared_ptr<RemoteFileSystem> http_file_system(const RemoteOptions& options = RemoteOptions());

}  // namespace hdl
HDL_API_END
