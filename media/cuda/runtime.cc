#include "media/cuda/runtime.h"

#include <dlfcn.h>

#include <cstdio>
#include <mutex>

#if HDL_HAVE_CUDA
#include "media/cuda/detail/check.h"
#endif

namespace hdl::cuda {
namespace {

struct Probe {
  int count = 0;
  std::string reason;  // empty when count > 0
};

// One query per process; magic statics make the first call thread-safe.
const Probe& probe() {
  static const Probe p = [] {
    Probe r;
#if HDL_HAVE_CUDA
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      r.reason = std::string(cudaGetErrorString(e)) + " (" + cudaGetErrorName(e) + ")";
      cudaGetLastError();
    } else if (n <= 0) {
      r.reason = "no CUDA-capable device is detected";
    } else {
      r.count = n;
    }
#else
    r.reason = "not available: built without CUDA";
#endif
    return r;
  }();
  return p;
}

}  // namespace

bool built_with_cuda() {
#if HDL_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

bool available() { return probe().count > 0; }

int device_count() { return probe().count; }

const std::string& unavailable_reason() { return probe().reason; }

Status require_device(Device device) {
  if (device.is_cpu()) return Status::ok();
  std::string message;
  if (!built_with_cuda()) {
    message = unavailable_reason();
  } else if (!available()) {
    message = "no CUDA device: " + unavailable_reason();
  } else if (device.index < 0 || device.index >= device_count()) {
    message = device.to_string() + " requested but only " + std::to_string(device_count()) +
              " CUDA device" + (device_count() == 1 ? "" : "s") + " found";
  } else {
    return Status::ok();
  }
  static std::once_flag noticed;
  std::call_once(noticed, [&] {
    std::fprintf(stderr, "hdl: %s requested but CUDA is not usable: %s\n",
                 device.to_string().c_str(), message.c_str());
  });
  return Status::unsupported(message);
}

Result<void*> runtime_context(Device device) {
  HDL_RETURN_IF_ERROR(require_device(device));
#if HDL_HAVE_CUDA
  // The driver library is in the process once the runtime has found a device; it is looked up,
  // not linked, so that libhdl loads without it.
  using GetCurrent = int (*)(void**);  // CUresult cuCtxGetCurrent(CUcontext*)
  static const GetCurrent get_current = [] {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    return lib ? reinterpret_cast<GetCurrent>(dlsym(lib, "cuCtxGetCurrent")) : nullptr;
  }();
  if (!get_current) return Status::unsupported("libcuda.so.1's cuCtxGetCurrent was not found");
  detail::DeviceGuard guard(device.index);
  HDL_RETURN_IF_ERROR(guard.status());
  HDL_RETURN_IF_ERROR(detail::to_status(cudaFree(nullptr), "cudaFree(nullptr)"));  // the primary context, current
  void* context = nullptr;
  if (const int err = get_current(&context); err != 0 || !context)
    return Status::internal("cuCtxGetCurrent failed (CUresult " + std::to_string(err) + ")");
  return context;
#else
  return Status::unsupported(unavailable_reason());
#endif
}

std::string version_string() {
#if HDL_HAVE_CUDA
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
  cudaGetLastError();
  auto v = [](int x) { return std::to_string(x / 1000) + "." + std::to_string(x % 1000 / 10); };
  return "runtime " + v(runtime) + ", driver " + (driver ? v(driver) : std::string("none"));
#else
  return "built without CUDA";
#endif
}

}  // namespace hdl::cuda
