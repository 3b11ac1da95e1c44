// jpeg_index_bench: single-thread costs of the JPEG entry-point index (decoders/jpeg/jpeg_index.h)
// over a folder of JPEGs, for the records in docs/PERFORMANCE.md and decoders/README.md. Not a
// test.
//
//   jpeg_index_bench FOLDER [--files N]
//
// Prints, over the first N (300) indexable files under FOLDER, read into memory first:
//   build     microseconds per file for the index pass, and the index's bytes per file (and
//             as a share of the files' bytes)
//   window    microseconds per window JPEG of the central 2/3 x 2/3 of the MCU rows and columns,
//             and its bytes (best of 5 rounds)
//   narrow    the same for a window one MCU wide: the per-row cost without the bulk copy
//   huffman   microseconds per file for the Huffman decoding of every MCU: libjpeg-turbo's
//             (jpeg_read_coefficients, which also stores the blocks) against ours
//             (JpegWindowEntropy over the whole image, each MCU's blocks zeroed first, as
//             libjpeg's coefficient controller does), and the ratio (best of 5 rounds)
// clang-format off: jpeglib.h needs <cstdio> first.
#include <cstdio>
#include <jpeglib.h>
// clang-format on

#include <algorithm>
#include <array>
#include <cstring>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "decoders/jpeg/jpeg_index.h"
#include "decoders/jpeg/jpeg_window.h"
#include "decoders/jpeg/window_entropy.h"

using namespace hdl;

namespace {

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: jpeg_index_bench FOLDER [--files N]\n");
    return 2;
  }
  size_t max_files = 300;
  for (int i = 2; i + 1 < argc; i += 2)
    if (std::string(argv[i]) == "--files") max_files = std::strtoul(argv[i + 1], nullptr, 10);
  std::vector<std::filesystem::path> paths;
  for (auto& e : std::filesystem::recursive_directory_iterator(argv[1]))
    if (e.is_regular_file()) paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  std::vector<std::vector<uint8_t>> files;
  std::vector<std::shared_ptr<const detail::JpegScanIndex>> indexes;
  double build_us = 0;
  size_t index_bytes = 0, file_bytes = 0;
  for (const auto& p : paths) {
    if (files.size() >= max_files) break;
    std::ifstream f(p, std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const double t0 = now_us();
    auto index = detail::build_jpeg_index(bytes);
    build_us += now_us() - t0;
    if (!index.is_ok()) continue;
    index_bytes += detail::jpeg_index_bytes(**index);
    file_bytes += bytes.size();
    files.push_back(std::move(bytes));
    indexes.push_back(*index);
  }
  if (files.empty()) {
    std::fprintf(stderr, "no indexable JPEG under %s\n", argv[1]);
    return 1;
  }
  const double n = double(files.size());
  std::printf("files     %zu indexable\n", files.size());
  std::printf("build     %.1f us/file, index %.0f bytes/file (%.1f%% of the files' bytes)\n", build_us / n,
              double(index_bytes) / n, 100.0 * double(index_bytes) / double(file_bytes));
  std::vector<uint8_t> out;
  for (const bool narrow : {false, true}) {
    double best = 1e300;
    size_t bytes = 0;
    for (int round = 0; round < 5; ++round) {
      bytes = 0;
      const double t0 = now_us();
      for (size_t i = 0; i < files.size(); ++i) {
        const auto& g = detail::jpeg_index_grid(*indexes[i]);
        const int64_t c0 = narrow ? g.mcus_x / 2 : g.mcus_x / 6, c1 = narrow ? c0 + 1 : std::max(c0 + 1, g.mcus_x * 5 / 6);
        const int64_t r0 = g.mcus_y / 6, r1 = std::max(r0 + 1, g.mcus_y * 5 / 6);
        if (!detail::write_jpeg_window(files[i], *indexes[i], r0, r1, c0, c1, out).is_ok()) return 1;
        bytes += out.size();
      }
      best = std::min(best, now_us() - t0);
    }
    std::printf("%-9s %.1f us/window, %.0f bytes/window\n", narrow ? "narrow" : "window", best / n, double(bytes) / n);
  }
  // Huffman decoding of whole images.
  double best_libjpeg = 1e300, best_ours = 1e300;
  detail::JpegWindowEntropy entropy;
  std::array<std::array<int16_t, 64>, 10> blocks;
  int16_t* ptrs[10];
  for (size_t b = 0; b < blocks.size(); ++b) ptrs[b] = blocks[b].data();
  for (int round = 0; round < 5; ++round) {
    double t0 = now_us();
    for (const auto& bytes : files) {
      jpeg_decompress_struct cinfo{};
      jpeg_error_mgr err{};
      cinfo.err = jpeg_std_error(&err);
      jpeg_create_decompress(&cinfo);
      jpeg_mem_src(&cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
      jpeg_read_header(&cinfo, TRUE);
      jpeg_read_coefficients(&cinfo);
      jpeg_destroy_decompress(&cinfo);
    }
    best_libjpeg = std::min(best_libjpeg, now_us() - t0);
    t0 = now_us();
    for (size_t i = 0; i < files.size(); ++i) {
      const auto& g = detail::jpeg_index_grid(*indexes[i]);
      auto plan = detail::plan_jpeg_window(*indexes[i], 0, g.mcus_y, 0, g.mcus_x);
      if (!plan.is_ok() || !entropy.start(files[i], *indexes[i], *plan).is_ok()) return 1;
      const size_t bytes_per_mcu = size_t(entropy.blocks_per_mcu()) * sizeof(blocks[0]);
      for (int64_t m = 0; m < g.mcus_x * g.mcus_y; ++m) {
        std::memset(blocks.data(), 0, bytes_per_mcu);
        if (!entropy.decode_mcu(ptrs)) return 1;
      }
    }
    best_ours = std::min(best_ours, now_us() - t0);
  }
  std::printf("huffman   libjpeg-turbo %.1f us/file, ours %.1f us/file: %.2fx\n", best_libjpeg / n, best_ours / n,
              best_libjpeg / best_ours);
  return 0;
}
