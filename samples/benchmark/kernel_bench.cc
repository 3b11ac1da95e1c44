// kernel_bench: single-thread timings of the kernels on the resnet-train / resnet-eval hot path,
// on a real decoded corpus photo, for before/after records of kernel optimisations
// (docs/PERFORMANCE.md). Not a test.
//
//   kernel_bench PHOTO.jpg [--reps N]
//
// Prints microseconds per call (best of 5 rounds of N calls) for:
//   resize    the decoded photo's 300x280 central window -> 224x224 (a typical RandomResizedCrop)
//   upscale   a 120x100 window -> 224x224
//   eval      the photo -> shorter side 256 (the resnet-eval resize)
//   pillow    the resize window -> 224x224 with ResizeOptions::pillow (Pillow's integer
//             arithmetic, what HabanaDataLoader maps torchvision / timm PIL transforms to),
//             bilinear and bicubic, and the eval resize with pillow bilinear
//   affine    a 224x224 image sheared by 0.3 (what timm's ShearX does at magnitude 9), Pillow's
//             bilinear and bicubic transform, and rotated by 27 degrees bicubic
//   cmn       224x224x3 uint8 -> float32 CHW normalised into a 256-image batch buffer (mirrored
//             every other call, walking the buffer like a pipeline fills a batch); the same
//             into bfloat16 CHW, and uint8 HWC -> uint8 CHW (crop + mirror + layout only)
//
// Kernels with AVX2 twins take them where the CPU has AVX2; HDL_DISABLE_AVX2=1 times the
// baseline paths.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "decoders/decoder_set.h"
#include "pipeline/kernels/normalize.h"
#include "pipeline/kernels/resize.h"
#include "pipeline/kernels/warp.h"

using namespace hdl;

namespace {

double best_us(int reps, const std::function<void(int)>& f) {
  double best = 1e30;
  for (int round = 0; round < 5; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) f(i);
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / reps;
    best = std::min(best, us);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: kernel_bench PHOTO.jpg [--reps N]\n");
    return 2;
  }
  int reps = 200;
  if (argc == 4 && std::string(argv[2]) == "--reps") reps = std::max(1, std::atoi(argv[3]));
  std::ifstream f(argv[1], std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  DecoderSet decoders;
  DecodeRequest req;
  auto shape = decoders.output_shape(bytes, req);
  if (!shape.is_ok()) {
    std::fprintf(stderr, "kernel_bench: %s\n", shape.status().message().c_str());
    return 1;
  }
  std::vector<uint8_t> px(static_cast<size_t>(shape->num_elements()));
  const TensorView image(px.data(), *shape, DType::kU8, Layout::kHWC);
  if (!decoders.decode(bytes, req, image).is_ok()) return 1;
  const int64_t H = (*shape)[0], W = (*shape)[1];
  if (H < 280 || W < 300) {
    std::fprintf(stderr, "kernel_bench: need a photo of at least 300x280\n");
    return 1;
  }
  kernels::ResizeWorkspace ws;
  kernels::ResizeOptions opt;  // bilinear, antialias: torchvision's default
  std::vector<uint8_t> out224(224 * 224 * 3);
  const TensorView dst(out224.data(), {224, 224, 3}, DType::kU8, Layout::kHWC);
  const ConstTensorView win = ConstTensorView(image).crop_hw((H - 280) / 2, (W - 300) / 2, 280, 300);
  const ConstTensorView small = ConstTensorView(image).crop_hw(0, 0, 100, 120);
  const double resize = best_us(reps, [&](int) { (void)kernels::resize(win, dst, opt, ws); });
  const double upscale = best_us(reps, [&](int) { (void)kernels::resize(small, dst, opt, ws); });
  const kernels::SizeHW eval = kernels::resize_output_size({H, W}, std::vector<int64_t>{256}, std::nullopt);
  std::vector<uint8_t> out_eval(static_cast<size_t>(eval.h * eval.w * 3));
  const TensorView dst_eval(out_eval.data(), {eval.h, eval.w, 3}, DType::kU8, Layout::kHWC);
  const double eval_us = best_us(reps, [&](int) { (void)kernels::resize(image, dst_eval, opt, ws); });

  kernels::ResizeOptions pil_bilinear;
  pil_bilinear.pillow = true;
  kernels::ResizeOptions pil_bicubic = pil_bilinear;
  pil_bicubic.filter = kernels::ResizeFilter::kCubic;
  const double pil_lin = best_us(reps, [&](int) { (void)kernels::resize(win, dst, pil_bilinear, ws); });
  const double pil_cub = best_us(reps, [&](int) { (void)kernels::resize(win, dst, pil_bicubic, ws); });
  const double pil_eval = best_us(reps, [&](int) { (void)kernels::resize(image, dst_eval, pil_bilinear, ws); });

  (void)kernels::resize(win, dst, pil_bicubic, ws);
  std::vector<uint8_t> warped(224 * 224 * 3);
  const TensorView warp_dst(warped.data(), {224, 224, 3}, DType::kU8, Layout::kHWC);
  const std::array<double, 6> shear = {1, 0.3, 0, 0, 1, 0};
  const double aff_lin = best_us(reps, [&](int) {
    (void)kernels::affine_transform(dst, warp_dst, shear, kernels::WarpFilter::kBilinear);
  });
  const double aff_cub = best_us(reps, [&](int) {
    (void)kernels::affine_transform(dst, warp_dst, shear, kernels::WarpFilter::kBicubic);
  });
  const double rot_cub = best_us(reps, [&](int) { (void)kernels::rotate(dst, warp_dst, 27.0, kernels::WarpFilter::kBicubic); });

  // A 256-image float32 batch, written slot after slot as a pipeline does.
  constexpr int kBatch = 256;
  const size_t slot = 3 * 224 * 224;
  std::vector<float> batch(kBatch * slot);
  kernels::CropMirrorNormalizeOptions o;
  o.norm.mean = {0.485f, 0.456f, 0.406f};
  o.norm.std = {0.229f, 0.224f, 0.225f};
  (void)kernels::resize(win, dst, opt, ws);
  const double cmn = best_us(reps, [&](int i) {
    o.mirror = i % 2;
    const TensorView out(batch.data() + (i % kBatch) * slot, {3, 224, 224}, DType::kF32, Layout::kCHW);
    (void)kernels::crop_mirror_normalize(dst, out, o);
  });
  // bfloat16 and uint8 slots in the same buffer (smaller elements: more slots fit).
  const double cmn_bf16 = best_us(reps, [&](int i) {
    o.mirror = i % 2;
    const TensorView out(reinterpret_cast<uint16_t*>(batch.data()) + (i % kBatch) * slot, {3, 224, 224},
                         DType::kBF16, Layout::kCHW);
    (void)kernels::crop_mirror_normalize(dst, out, o);
  });
  const double cmn_u8 = best_us(reps, [&](int i) {
    o.mirror = i % 2;
    const TensorView out(reinterpret_cast<uint8_t*>(batch.data()) + (i % kBatch) * slot, {3, 224, 224},
                         DType::kU8, Layout::kCHW);
    (void)kernels::crop_mirror_normalize(dst, out, o);
  });
  std::printf("{\"photo\": \"%s\", \"size\": [%lld, %lld], \"resize_300x280_to_224_us\": %.1f, "
              "\"resize_120x100_to_224_us\": %.1f, \"resize_to_short_256_us\": %.1f, "
              "\"pillow_bilinear_300x280_to_224_us\": %.1f, \"pillow_bicubic_300x280_to_224_us\": %.1f, "
              "\"pillow_bilinear_to_short_256_us\": %.1f, \"affine_shear_bilinear_224_us\": %.1f, "
              "\"affine_shear_bicubic_224_us\": %.1f, \"rotate_bicubic_224_us\": %.1f, "
              "\"crop_mirror_normalize_224_f32_us\": %.1f, \"crop_mirror_normalize_224_bf16_us\": %.1f, "
              "\"crop_mirror_normalize_224_u8_chw_us\": %.1f}\n",
              argv[1], static_cast<long long>(H), static_cast<long long>(W), resize, upscale, eval_us, pil_lin,
              pil_cub, pil_eval, aff_lin, aff_cub, rot_cub, cmn, cmn_bf16, cmn_u8);
  return 0;
}
