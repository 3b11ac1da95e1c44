// Text that may be shown: what every message, log line and report passes through before a user
// (or Python, which decodes strictly) sees it.
//
// Messages carry bytes from the data (tar member names, keys, file names, an object store's error
// body), which need not be UTF-8, and URLs, which may carry secrets: a presigned URL's signature
// and token in its query string, a password in its user part. printable() makes both safe: any
// byte that is not part of valid UTF-8, and every control character but newline and tab, is
// written as \xNN (so the bytes stay recoverable from the text); in every "scheme://..." URL
// the user part is replaced by "***" and the values of credential-bearing query parameters
// (X-Amz-Signature, X-Amz-Security-Token, X-Amz-Credential, their X-Goog- twins, Signature,
// sig, token, access_token, AWSAccessKeyId, password, secret) by "REDACTED".
//
// Status applies it to every message it is given (media/status.h), the Python bindings to every
// exception and string they raise or return, hdl-bench to what it prints; one rule, one place.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "media/api.h"

HDL_API_BEGIN
namespace hdl {

/// `text` as valid UTF-8 with control characters escaped and URL secrets redacted (above).
/// Idempotent: printable(printable(s)) == printable(s).
std::string printable(std::string_view text);

/// True when `name` is a query parameter whose value printable() redacts (case-insensitive).
bool is_secret_query_parameter(std::string_view name);

}  // namespace hdl
HDL_API_END
