// CUDA runtime discovery: is there a usable device, how many, and why not.
//
// The library links the CUDA runtime statically (CUDA::cudart_static), so it loads and runs on
// machines without a driver or a GPU; these functions are how the rest of the code (and a
// user) finds out. Built without CUDA (HDL_CUDA=OFF or no toolkit), every query answers "not
// available: built without CUDA". No CUDA type appears in this header.
//
// Thread safety: all functions are thread-safe. The device query runs once per process (the
// first call, under std::call_once) and is cached; the notice is printed at most once.
#pragma once

#include <string>

#include "media/api.h"
#include "media/device.h"
#include "media/status.h"

HDL_API_BEGIN
namespace hdl::cuda {

/// True when this build has the CUDA backend compiled in (independent of any device).
bool built_with_cuda();

/// True when at least one CUDA device is usable (cudaGetDeviceCount succeeded with a count > 0).
/// Never throws, never prints. Cached after the first call.
bool available();

/// The number of usable CUDA devices; 0 when not available().
int device_count();

/// Why available() is false, from CUDA's own error string, e.g.
/// "no CUDA-capable device is detected (cudaErrorNoDevice)", "CUDA driver version is
/// insufficient for CUDA runtime version (cudaErrorInsufficientDriver)", or
/// "not available: built without CUDA". Empty when available().
const std::string& unavailable_reason();

/// Checks that `device` (kind cuda) can be used: available() and index < device_count().
/// Returns kUnsupported "no CUDA device: <reason>" (or "cuda:3 requested but only 2 CUDA
/// devices found", or "not available: built without CUDA") otherwise, and the first time a request fails prints that message once to stderr
/// ("hdl: cuda:0 requested but CUDA is not usable: ..."), so a user who asked for a GPU and
/// silently got the CPU path is told why. A cpu device is always ok.
Status require_device(Device device);

/// The CUDA context the runtime uses on `device` (its primary context, made current and
/// initialised if it was not), as a CUcontext, for libraries that take one to share memory
/// and streams with this library and torch (FFmpeg's CUDA device for NVDEC: FFmpeg's own
/// "primary_ctx" option refuses a primary context the runtime has already activated with
/// other scheduling flags). The pointer stays valid for the process. kUnsupported without a
/// device, or when the driver library's cuCtxGetCurrent cannot be found.
Result<void*> runtime_context(Device device);

/// The version of the CUDA runtime linked in (e.g. 13000) and of the driver (0 if none), as
/// "runtime 13.0, driver 12.4" or "built without CUDA". For logs and bug reports.
std::string version_string();

}  // namespace hdl::cuda
HDL_API_END
