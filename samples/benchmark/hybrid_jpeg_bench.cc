// hybrid_jpeg_bench: single-thread CPU costs of the hybrid JPEG decode's two halves
// (decoders/jpeg/hybrid_jpeg.h) against libjpeg-turbo's, over a folder of JPEGs, for the
// record in docs/CUDA.md ("Hybrid decode"). Not a test.
//
//   hybrid_jpeg_bench FOLDER [--files N] [--rounds R] [--scale D | --crop]
//
// Over the first N (300) JPEGs under FOLDER that the hybrid path decodes, read into memory first,
// best of R (5) rounds, microseconds per image at DCT scale 1/D (1):
//   full         libjpeg-turbo's whole decode to RGB (JDCT_ISLOW, fancy upsampling: the CPU path)
//   huffman      libjpeg-turbo's Huffman decoding alone: jpeg_read_coefficients (coefficients out)
//   huffman-own  the hybrid path's Huffman decoding with the file's entry-point index
//                (HybridJpegDecoder::decode_coefficients, JpegWindowEntropy over every MCU; the
//                index built beforehand, as from the second epoch on)
//   pixels       libjpeg-turbo's IDCT + upsampling + colour alone: the output pass of a buffered-
//                image decode, from coefficients already in memory (jpeg_start_output ..
//                jpeg_finish_output; SIMD)
//   twin         the host twin (kernels::jpeg_decode_batch_host, scalar) on the same coefficients
// and the ratios: huffman / full (the Huffman share of a decode), huffman-own / full (what a CPU
// thread spends per image when it only Huffman-decodes for the device), twin / pixels.
// --crop: instead of whole images, the central 60% x 60% window of each image at the DCT scale
// that keeps it at least 224 x 224 (as the fused RandomResizedCrop path asks): "full" is then
// JpegDecoder's region decode with the entry-point index (the CPU path from the second epoch
// on), huffman-own and twin the window's alone; huffman and pixels stay whole-image figures.
// clang-format off: jpeglib.h needs <cstdio> first.
#include <cstdio>
#include <jpeglib.h>
// clang-format on

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "decoders/jpeg/hybrid_jpeg.h"
#include "decoders/jpeg/index_cache.h"
#include "decoders/jpeg/jpeg_decoder.h"
#include "decoders/kernels/jpeg_hybrid.h"

using namespace hdl;

namespace {

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Libjpeg {
  jpeg_decompress_struct cinfo{};
  jpeg_error_mgr err{};
  Libjpeg() {
    cinfo.err = jpeg_std_error(&err);
    jpeg_create_decompress(&cinfo);
  }
  ~Libjpeg() { jpeg_destroy_decompress(&cinfo); }
  void open(const std::vector<uint8_t>& f, int d) {
    jpeg_mem_src(&cinfo, f.data(), static_cast<unsigned long>(f.size()));
    jpeg_read_header(&cinfo, TRUE);
    cinfo.out_color_space = cinfo.num_components == 1 ? JCS_GRAYSCALE : JCS_EXT_RGB;
    cinfo.dct_method = JDCT_ISLOW;
    cinfo.do_fancy_upsampling = TRUE;
    cinfo.scale_num = 1;
    cinfo.scale_denom = unsigned(d);
  }
  void read_rows(std::vector<uint8_t>& row) {
    row.resize(size_t(cinfo.output_width) * cinfo.output_components);
    JSAMPROW r = row.data();
    while (cinfo.output_scanline < cinfo.output_height) jpeg_read_scanlines(&cinfo, &r, 1);
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: hybrid_jpeg_bench FOLDER [--files N] [--rounds R] [--scale D]\n");
    return 2;
  }
  size_t max_files = 300;
  int rounds = 5, scale = 1;
  bool crop = false;
  for (int i = 2; i < argc; ++i)
    if (std::string(argv[i]) == "--crop") crop = true;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--files") max_files = std::strtoul(argv[i + 1], nullptr, 10);
    if (a == "--rounds") rounds = std::atoi(argv[i + 1]);
    if (a == "--scale") scale = std::atoi(argv[i + 1]);
  }
  std::vector<std::filesystem::path> paths;
  for (auto& e : std::filesystem::recursive_directory_iterator(argv[1]))
    if (e.is_regular_file()) paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());

  // The files, their plans, coefficients (for the pixel halves) and indexes.
  HybridJpegDecoder hybrid;
  JpegIndexCache cache(size_t(1) << 30);
  std::vector<std::vector<uint8_t>> files;
  std::vector<DecodeRequest> reqs;
  std::vector<HybridJpegPlan> plans;
  std::vector<std::vector<int16_t>> coefs;
  std::vector<std::vector<uint16_t>> quant;
  int64_t pixels = 0;
  for (const auto& p : paths) {
    if (files.size() == max_files) break;
    std::ifstream f(p, std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    DecodeRequest req;
    req.index_cache = &cache;
    req.index_key = files.size();
    {
      Libjpeg probe;
      probe.open(bytes, 1);
      const int64_t W = probe.cinfo.image_width, H = probe.cinfo.image_height;
      jpeg_abort_decompress(&probe.cinfo);
      if (crop) {
        req.roi = {W / 5, H / 5, W - 2 * (W / 5), H - 2 * (H / 5)};
        req.min_width = req.min_height = 224;
      } else if (scale > 1) {
        req.min_width = (W + scale - 1) / scale;
        req.min_height = (H + scale - 1) / scale;
      }
    }
    auto plan = hybrid.plan(bytes, req);
    if (!plan.is_ok() || (!crop && plan->scale_denom != scale)) continue;
    std::vector<int16_t> c(size_t(plan->blocks) * 64);
    std::vector<uint16_t> q(64 * kernels::kJpegMaxComponents);
    if (!hybrid.decode_coefficients(bytes, *plan, req, c, q).is_ok()) continue;  // (also builds the index)
    pixels += plan->shape[0] * plan->shape[1];
    files.push_back(std::move(bytes));
    reqs.push_back(req);
    plans.push_back(*plan);
    coefs.push_back(std::move(c));
    quant.push_back(std::move(q));
  }
  if (files.empty()) {
    std::fprintf(stderr, "no JPEG the hybrid path decodes under %s\n", argv[1]);
    return 1;
  }
  const double n = double(files.size());
  std::vector<uint8_t> row, out, scratch, upload;
  auto best = [&](auto&& body) {
    double b = 1e300;
    for (int r = 0; r < rounds; ++r) {
      const double t0 = now_us();
      body();
      b = std::min(b, now_us() - t0);
    }
    return b / n;
  };

  // The CPU path: JpegDecoder with the request (and the index cache: a crop's region decode
  // goes through the file's index, built above).
  auto cpu = make_jpeg_decoder();
  const double full = best([&] {
    for (size_t i = 0; i < files.size(); ++i) {
      out.resize(size_t(plans[i].shape.num_elements()));
      (void)cpu->decode(files[i], reqs[i], TensorView(out.data(), plans[i].shape, DType::kU8, Layout::kHWC));
    }
  });
  const double huffman = best([&] {
    for (auto& f : files) {
      Libjpeg j;
      j.open(f, scale);
      jpeg_read_coefficients(&j.cinfo);
      jpeg_finish_decompress(&j.cinfo);
    }
  });
  const auto own_before = hybrid.stats();
  const double huffman_own = best([&] {
    for (size_t i = 0; i < files.size(); ++i) {
      auto plan = hybrid.plan(files[i], reqs[i]);
      (void)hybrid.decode_coefficients(files[i], *plan, reqs[i], coefs[i], quant[i]);
    }
  });
  const auto own_after = hybrid.stats();
  // libjpeg's output pass alone: a buffered-image decode whose input is consumed first (untimed).
  double pixels_us = 1e300;
  for (int r = 0; r < rounds; ++r) {
    double t = 0;
    for (auto& f : files) {
      Libjpeg j;
      j.open(f, scale);
      j.cinfo.buffered_image = TRUE;
      jpeg_start_decompress(&j.cinfo);
      while (!jpeg_input_complete(&j.cinfo))
        if (jpeg_consume_input(&j.cinfo) == JPEG_SUSPENDED) break;
      const double t0 = now_us();
      jpeg_start_output(&j.cinfo, j.cinfo.input_scan_number);
      j.read_rows(row);
      jpeg_finish_output(&j.cinfo);
      t += now_us() - t0;
      jpeg_finish_decompress(&j.cinfo);
    }
    pixels_us = std::min(pixels_us, t);
  }
  pixels_us /= n;
  const double twin = best([&] {
    for (size_t i = 0; i < files.size(); ++i) {
      const HybridJpegPlan& p = plans[i];
      kernels::JpegImageGeometry g = p.geometry;
      g.out_row_stride = p.shape[1] * p.shape[2];
      g.out_pixel_stride = p.shape[2];
      out.resize(size_t(p.shape.num_elements()));
      scratch.resize(size_t(p.sample_bytes));
      kernels::JpegBatchView v;
      v.images = &g;
      v.image_count = 1;
      v.quant = quant[i].data();
      v.quant_count = p.components;
      v.coefs = coefs[i].data();
      v.blocks = p.blocks;
      v.samples = scratch.data();
      v.sample_bytes = p.sample_bytes;
      v.out = out.data();
      v.out_bytes = int64_t(out.size());
      v.pixels = int64_t(g.width) * g.height;
      (void)kernels::jpeg_decode_batch_host(v);
    }
  });
  if (crop)
    std::printf("%zu files, central 60%% windows scaled to >= 224 (%.0f output pixels per image), best of %d rounds, "
                "us per image, one thread\n", files.size(), double(pixels) / n, rounds);
  else
    std::printf("%zu files (%.0f pixels per image at 1/%d), best of %d rounds, us per image, one thread\n",
                files.size(), double(pixels) / n, scale, rounds);
  std::printf("full         %8.1f   JpegDecoder (libjpeg-turbo) to RGB%s\n", full,
              crop ? ": region decode through the index" : "");
  if (crop) {
    std::printf("huffman-own  %8.1f   JpegWindowEntropy, the window's MCUs (%lld of %lld decodes indexed)   %.2f of full\n",
                huffman_own, (long long)(own_after.indexed - own_before.indexed), (long long)(rounds * files.size()),
                huffman_own / full);
    std::printf("twin         %8.1f   host twin on the window's coefficients   %.2f of full\n", twin, twin / full);
    std::printf("(whole images: libjpeg-turbo jpeg_read_coefficients %.1f, output pass %.1f)\n", huffman, pixels_us);
    return 0;
  }
  std::printf("huffman      %8.1f   libjpeg-turbo jpeg_read_coefficients   %.2f of full\n", huffman, huffman / full);
  std::printf("huffman-own  %8.1f   JpegWindowEntropy, indexed (%lld of %lld decodes)   %.2f of full\n", huffman_own,
              (long long)(own_after.indexed - own_before.indexed), (long long)(rounds * files.size()), huffman_own / full);
  std::printf("pixels       %8.1f   libjpeg-turbo output pass (IDCT, upsampling, colour)   %.2f of full\n", pixels_us,
              pixels_us / full);
  std::printf("twin         %8.1f   host twin on the same coefficients   %.2f x libjpeg's pixels\n", twin, twin / pixels_us);
  return 0;
}
