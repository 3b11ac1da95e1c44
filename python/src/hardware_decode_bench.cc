// A benchmark, not an API: the GPU's hardware JPEG engines timed alone, for
// samples/benchmark/gpu_bench.py's hw-alone mode. A binding because it drives
// NvjpegHardwareDecoder directly, which the Python package does not expose outside a pipeline.
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "decoders/nvjpeg/nvjpeg_hardware.h"
#include "media/cuda/allocator.h"
#include "media/cuda/stream.h"
#include "python/src/bindings.h"

namespace hdl::python {

void bind_hardware_decode_bench(py::module_& m) {
  // The engines alone (samples/benchmark/gpu_bench.py's hw-alone): the files' bytes decoded in
  // batches of `batch`, `repeats` times over, into device memory; the wall time of the decode
  // calls only (outputs allocated once, supports() done once per file, outside the timing).
  m.def("_hardware_decode_bench", [](const std::vector<std::string>& files, int batch, int device, int repeats) {
    py::dict d;
    std::vector<std::span<const uint8_t>> taken;
    std::vector<Tensor> outs;
    int64_t refused = 0;
    double seconds = 0;
    Status error;
    {
      py::gil_scoped_release nogil;
      NvjpegHardwareDecoder hw(device);
      error = hw.status();
      Result<cuda::Stream> stream = error.is_ok() ? cuda::Stream::create(Device::cuda(device)) : Result<cuda::Stream>(error);
      if (!stream.is_ok()) error = stream.status();
      for (size_t i = 0; error.is_ok() && i < files.size(); ++i) {
        const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(files[i].data()), files[i].size());
        Result<ImageInfo> info = hw.supports(bytes, DecodeRequest{});
        if (!info.is_ok()) {
          ++refused;
          continue;
        }
        taken.push_back(bytes);
        outs.push_back(Tensor::empty(Shape{info->height, info->width, 3}, DType::kU8, Layout::kHWC,
                                     cuda::device_allocator(device)));
      }
      for (int r = 0; error.is_ok() && r < repeats; ++r) {
        for (size_t first = 0; error.is_ok() && first < taken.size(); first += static_cast<size_t>(batch)) {
          std::vector<HardwareDecodeItem> items;
          for (size_t i = first; i < std::min(taken.size(), first + static_cast<size_t>(batch)); ++i)
            items.push_back({taken[i], outs[i].view()});
          const auto t0 = std::chrono::steady_clock::now();
          for (const Status& s : hw.decode(items, ColorFormat::kRGB, *stream))
            if (!s.is_ok()) error = s;
          if (error.is_ok()) error = stream->synchronize();
          seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        }
      }
    }
    if (!error.is_ok()) throw std::runtime_error(error.to_string());
    d["images"] = static_cast<int64_t>(taken.size()) * repeats;
    d["seconds"] = seconds;
    d["refused"] = refused;
    return d;
  }, py::arg("files"), py::arg("batch") = 256, py::arg("device") = 0, py::arg("repeats") = 1);
}

}  // namespace hdl::python
