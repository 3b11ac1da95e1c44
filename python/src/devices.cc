// What this build and machine offer the accelerated stages: the CUDA runtime, the hardware JPEG
// engines, the hardware video decoders. Probes only; each answers a dict with the reason why not.
#include <string>

#include "decoders/nvjpeg/nvjpeg_hardware.h"
#include "decoders/video_decoder.h"
#include "media/cuda/runtime.h"
#include "python/src/bindings.h"

namespace hdl::python {

void bind_devices(py::module_& m) {
  m.def("cuda_status", [] {
    py::dict d;
    d["built"] = cuda::built_with_cuda();
    d["available"] = cuda::available();
    d["device_count"] = cuda::device_count();
    d["reason"] = cuda::unavailable_reason();
    d["version"] = cuda::version_string();
    return d;
  }, "What this build and machine offer the gpu stage: built, available, device_count, reason (why not), version");
  m.def("hardware_jpeg_status", [](int device) {
    Status s;
    {
      py::gil_scoped_release nogil;
      NvjpegHardwareDecoder hw(device);
      s = hw.status();
    }
    py::dict d;
    d["available"] = s.is_ok();
    d["reason"] = s.is_ok() ? std::string() : s.message();
    return d;
  }, py::arg("device") = 0,
     "Whether cuda:device has hardware JPEG engines the mixed stage can use: available, reason (why not)");
  m.def("video_hardware_status", [](int device) {
    Status s;
    {
      py::gil_scoped_release nogil;
      s = video_hardware_status(device);
    }
    py::dict d;
    d["available"] = s.is_ok();
    d["reason"] = s.is_ok() ? std::string() : s.message();
    return d;
  }, py::arg("device") = 0,
     "Whether video_reader(device='mixed') can decode on cuda:device's hardware video decoders (NVDEC through "
     "FFmpeg's cuda hwaccel): available, reason (why not)");
}

}  // namespace hdl::python
