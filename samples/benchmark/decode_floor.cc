// decode_floor: the "decode floor" of the side-by-side benchmark. Every JPEG of a folder is read
// and decoded at full resolution to RGB with libjpeg-turbo's TurboJPEG API (tjDecompress2,
// accurate DCT, fancy upsampling: what Pillow / torchvision do), into a reused per-thread buffer,
// by `--threads` plain threads pulling files from a shared counter. No resize, no augmentation,
// no batching: the least work any JPEG loader has to do per image.
//
//   decode_floor DIR [--threads N] [--epochs 3] [--warmup 1] [--preload] [--json]
//
// Files are read per decode (page cache, as a loader reads them) unless --preload, which reads
// them all into memory first and times the decode alone. Prints images/s (and MB/s of input).
#include <sys/resource.h>
#include <turbojpeg.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct Args {
  std::string root;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int epochs = 3;
  int warmup = 1;
  bool preload = false;
  bool json = false;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "decode_floor: %s\nusage: decode_floor DIR [--threads N] [--epochs N] [--warmup N] "
               "[--preload] [--json]\n",
               why.c_str());
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> int {
      if (i + 1 >= argc) usage("missing value after " + arg);
      char* end = nullptr;
      const long v = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || v < 0) usage("bad value for " + arg + ": " + argv[i]);
      return static_cast<int>(v);
    };
    if (arg == "--threads") a.threads = std::max(1, value());
    else if (arg == "--epochs") a.epochs = std::max(1, value());
    else if (arg == "--warmup") a.warmup = value();
    else if (arg == "--preload") a.preload = true;
    else if (arg == "--json") a.json = true;
    else if (!arg.empty() && arg[0] == '-') usage("unknown option " + arg);
    else if (a.root.empty()) a.root = arg;
    else usage("more than one DIR");
  }
  if (a.root.empty()) usage("DIR is required");
  return a;
}

bool is_jpeg_name(const fs::path& p) {
  std::string e = p.extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return std::tolower(c); });
  return e == ".jpg" || e == ".jpeg";
}

bool read_file(const std::string& path, std::vector<unsigned char>& out) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) return false;
  const std::streamsize n = f.tellg();
  f.seekg(0);
  out.resize(static_cast<size_t>(n));
  return static_cast<bool>(f.read(reinterpret_cast<char*>(out.data()), n));
}

struct Totals {
  std::atomic<int64_t> images{0}, bytes{0}, failures{0};
};

// One pass over every file with `threads` threads; returns seconds.
double run_epoch(const Args& a, const std::vector<std::string>& files,
                 const std::vector<std::vector<unsigned char>>& preloaded, Totals& totals) {
  std::atomic<size_t> next{0};
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < a.threads; ++t) {
    pool.emplace_back([&] {
      tjhandle tj = tjInitDecompress();
      std::vector<unsigned char> bytes, pixels;
      for (size_t i; (i = next.fetch_add(1)) < files.size();) {
        const std::vector<unsigned char>* src = &bytes;
        if (a.preload) src = &preloaded[i];
        else if (!read_file(files[i], bytes)) { ++totals.failures; continue; }
        int w = 0, h = 0, sub = 0, cs = 0;
        if (tjDecompressHeader3(tj, src->data(), src->size(), &w, &h, &sub, &cs) != 0) {
          ++totals.failures;
          continue;
        }
        // CMYK / YCCK files cannot be converted to RGB by TurboJPEG: they decode to CMYK.
        const bool cmyk = cs == TJCS_CMYK || cs == TJCS_YCCK;
        const size_t need = size_t(w) * size_t(h) * (cmyk ? 4 : 3);
        if (pixels.size() < need) pixels.resize(need);  // grows only: reused across files
        if (tjDecompress2(tj, src->data(), src->size(), pixels.data(), w, 0, h, cmyk ? TJPF_CMYK : TJPF_RGB, 0) != 0 &&
            tjGetErrorCode(tj) == TJERR_FATAL) {
          ++totals.failures;
          continue;
        }
        ++totals.images;
        totals.bytes += static_cast<int64_t>(src->size());
      }
      tjDestroy(tj);
    });
  }
  for (auto& th : pool) th.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  std::vector<std::string> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(a.root, fs::directory_options::follow_directory_symlink, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file() && is_jpeg_name(it->path())) files.push_back(it->path().string());
  if (files.empty()) usage("no .jpg/.jpeg files under " + a.root);
  std::sort(files.begin(), files.end());
  std::vector<std::vector<unsigned char>> preloaded;
  if (a.preload) {
    preloaded.resize(files.size());
    for (size_t i = 0; i < files.size(); ++i)
      if (!read_file(files[i], preloaded[i])) usage("cannot read " + files[i]);
  }
  for (int e = 0; e < a.warmup; ++e) {
    Totals ignored;
    run_epoch(a, files, preloaded, ignored);
  }
  auto cpu_now = [] {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + 1e-6 * double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
  };
  const double cpu0 = cpu_now();
  Totals totals;
  double seconds = 0;
  for (int e = 0; e < a.epochs; ++e) seconds += run_epoch(a, files, preloaded, totals);
  const double cpu_us = (cpu_now() - cpu0) / double(std::max<int64_t>(totals.images, 1)) * 1e6;
  const double ips = double(totals.images) / seconds;
  const double mbps = double(totals.bytes) / seconds / 1e6;
  if (a.json) {
    std::printf("{\"tool\": \"decode_floor\", \"files\": %zu, \"threads\": %d, \"epochs\": %d, "
                "\"preload\": %s, \"images\": %lld, \"failures\": %lld, \"seconds\": %.4f, "
                "\"images_per_s\": %.1f, \"input_mb_per_s\": %.1f, \"cpu_us_per_image\": %.1f}\n",
                files.size(), a.threads, a.epochs, a.preload ? "true" : "false",
                static_cast<long long>(totals.images), static_cast<long long>(totals.failures.load()),
                seconds, ips, mbps, cpu_us);
  } else {
    std::printf("decode_floor: %zu files, %d threads, %d epochs%s: %.0f images/s, %.1f MB/s of input "
                "(%lld failures)\n",
                files.size(), a.threads, a.epochs, a.preload ? " (preloaded)" : "", ips, mbps,
                static_cast<long long>(totals.failures.load()));
  }
  return 0;
}
