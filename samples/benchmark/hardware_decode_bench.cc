// The GPU's hardware JPEG engines timed alone (samples/benchmark/gpu_bench.py's hw-alone mode):
// every file of DIR (recursively) read into memory, the ones the engines take decoded in
// batches of --batch, --repeats times over, into device memory; the wall time of the decode
// calls only (outputs allocated once, supports() asked once per file, outside the timing).
//   hardware_decode_bench DIR [--batch 256] [--device 0] [--repeats 1]
// Prints one JSON object: images, seconds (decode calls), refused (files the engines do not
// take), cpu_seconds (the process's user + system time over the decode calls). Exit 1, with
// the reason, where there are no engines (no GPU, no nvJPEG, a GPU without them).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "decoders/nvjpeg/nvjpeg_hardware.h"
#include "media/cuda/allocator.h"
#include "media/cuda/stream.h"

namespace {

double cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

int fail(const std::string& why) {
  std::fprintf(stderr, "hardware_decode_bench: %s\n", why.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace hdl;
  if (argc < 2) return fail("usage: hardware_decode_bench DIR [--batch 256] [--device 0] [--repeats 1]");
  int batch = 256, device = 0, repeats = 1;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (flag == "--batch") batch = std::max(1, v);
    else if (flag == "--device") device = v;
    else if (flag == "--repeats") repeats = std::max(1, v);
    else return fail("unknown option " + flag);
  }
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(argv[1]))
    if (e.is_regular_file()) {
      std::ifstream in(e.path(), std::ios::binary);
      files.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  NvjpegHardwareDecoder hw(device);
  if (!hw.status().is_ok()) return fail(hw.status().to_string());
  Result<cuda::Stream> stream = cuda::Stream::create(Device::cuda(device));
  if (!stream.is_ok()) return fail(stream.status().to_string());
  std::vector<std::span<const uint8_t>> taken;
  std::vector<Tensor> outs;
  int64_t refused = 0;
  for (const std::string& f : files) {
    const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(f.data()), f.size());
    Result<ImageInfo> info = hw.supports(bytes, DecodeRequest{});
    if (!info.is_ok()) {
      ++refused;
      continue;
    }
    taken.push_back(bytes);
    outs.push_back(Tensor::empty(Shape{info->height, info->width, 3}, DType::kU8, Layout::kHWC,
                                 cuda::device_allocator(device)));
  }
  double seconds = 0;
  const double cpu0 = cpu_seconds();
  for (int r = 0; r < repeats; ++r) {
    for (size_t first = 0; first < taken.size(); first += static_cast<size_t>(batch)) {
      std::vector<HardwareDecodeItem> items;
      for (size_t i = first; i < std::min(taken.size(), first + static_cast<size_t>(batch)); ++i)
        items.push_back({taken[i], outs[i].view()});
      const auto t0 = std::chrono::steady_clock::now();
      for (const Status& s : hw.decode(items, ColorFormat::kRGB, *stream))
        if (!s.is_ok()) return fail(s.to_string());
      if (Status s = stream->synchronize(); !s.is_ok()) return fail(s.to_string());
      seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
  }
  std::printf("{\"images\": %lld, \"seconds\": %.6f, \"refused\": %lld, \"cpu_seconds\": %.6f}\n",
              static_cast<long long>(taken.size()) * repeats, seconds, static_cast<long long>(refused), cpu_seconds() - cpu0);
  return 0;
}
