// resize_bench: tiny single-thread benchmark of the resize kernel on the 500x375 corpus photo
// to 224x224, ns/op.
//   build/samples/benchmark/resize_bench [raw_hwc_u8_file h w]   (default: the kernel tests' photo.u8)
// Compare with torchvision: samples/benchmark/resize_bench_torchvision.py BUILD_DIR.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "pipeline/kernels/resize.h"

using namespace hdl;

int main(int argc, char** argv) {
  std::string path = std::string(HDL_BINARY_DIR) + "/kernels_references/photo.u8";
  int64_t h = 375, w = 500;
  if (argc == 4) {
    path = argv[1];
    h = std::stoll(argv[2]);
    w = std::stoll(argv[3]);
  }
  std::ifstream f(path, std::ios::binary);
  std::vector<uint8_t> px((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (px.size() != static_cast<size_t>(h * w * 3)) {
    std::fprintf(stderr, "need %s (%lldx%lldx3 uint8; run kernels_test once)\n", path.c_str(),
                 static_cast<long long>(h), static_cast<long long>(w));
    return 1;
  }
  const ConstTensorView src(px.data(), {h, w, 3}, DType::kU8, Layout::kHWC);
  std::vector<float> out(224 * 224 * 3);
  kernels::ResizeWorkspace ws;
  struct Case {
    const char* name;
    kernels::ResizeFilter filter;
    bool antialias;
    DType out;
  } cases[] = {
      {"bilinear aa  u8", kernels::ResizeFilter::kLinear, true, DType::kU8},
      {"bilinear aa  f32", kernels::ResizeFilter::kLinear, true, DType::kF32},
      {"bicubic aa   u8", kernels::ResizeFilter::kCubic, true, DType::kU8},
      {"bilinear     u8", kernels::ResizeFilter::kLinear, false, DType::kU8},
      {"nearest      u8", kernels::ResizeFilter::kNearest, false, DType::kU8},
      {"lanczos      u8", kernels::ResizeFilter::kLanczos, true, DType::kU8},
  };
  for (const Case& c : cases) {
    const TensorView dst(out.data(), {224, 224, 3}, c.out, Layout::kHWC);
    const kernels::ResizeOptions opt{c.filter, c.antialias};
    for (int i = 0; i < 20; ++i) (void)kernels::resize(src, dst, opt, ws);
    const int n = 500;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) (void)kernels::resize(src, dst, opt, ws);
    const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n;
    std::printf("hdl resize %lldx%lld -> 224x224 %s: %.0f ns/op\n", static_cast<long long>(w),
                static_cast<long long>(h), c.name, ns);
  }
  return 0;
}
