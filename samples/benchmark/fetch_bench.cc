// fetch_bench: CPU seconds per MB of this library's remote reads (media/remote_file_system.h),
// for object_store_bench.py's curl-cpu comparison against the curl CLI (issue 24's target: no
// more CPU per MB than curl).
//
//   fetch_bench LIST [--threads 1] [--passes 1]
//
// LIST: one read a line, "URL" (the whole object: open() = HEAD, then one read of its size) or
// "URL OFFSET SIZE" (a range read). The reads go through url_file_system() with default
// RemoteOptions, into a buffer reused per thread (as the pipeline reads into a tensor), lines
// taken in order by --threads threads, the whole list --passes times (the objects opened once
// per thread: a later pass is what a warm process pays per MB). Prints one line:
//   bytes=N requests=N cpu_s=X wall_s=X
// (cpu_s: this process's user + system time, getrusage, start-up included).
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "media/url_file_system.h"

namespace {

struct Read {
  std::string url;
  int64_t offset = -1, size = 0;
};

double cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: fetch_bench LIST [--threads N]\n");
    return 2;
  }
  int threads = 1, passes = 1;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--threads") threads = std::atoi(argv[i + 1]);
    if (std::string(argv[i]) == "--passes") passes = std::atoi(argv[i + 1]);
  }
  if (threads < 1 || passes < 1) {
    std::fprintf(stderr, "fetch_bench: --threads and --passes take a positive integer\n");
    return 2;
  }
  std::vector<Read> reads;
  std::ifstream in(argv[1]);
  if (!in) {
    std::fprintf(stderr, "fetch_bench: cannot read \"%s\"\n", argv[1]);
    return 2;
  }
  for (std::string line; std::getline(in, line);) {
    std::istringstream ss(line);
    Read r;
    if (!(ss >> r.url)) continue;
    ss >> r.offset >> r.size;
    reads.push_back(r);
  }
  const std::vector<Read> one_pass = reads;
  for (int p = 1; p < passes; ++p) reads.insert(reads.end(), one_pass.begin(), one_pass.end());
  auto fs = hdl::url_file_system(hdl::RemoteOptions());
  const auto t0 = std::chrono::steady_clock::now();
  std::atomic<size_t> next{0};
  std::atomic<int64_t> bytes{0};
  std::atomic<bool> failed{false};
  auto work = [&] {
    std::vector<char> buf;
    std::map<std::string, std::unique_ptr<hdl::RandomAccessFile>> open;  // one HEAD per object and thread
    for (size_t i; (i = next.fetch_add(1)) < reads.size();) {
      const Read& r = reads[i];
      auto& f = open[r.url];
      if (!f) {
        auto opened = fs->open(r.url);
        if (!opened.is_ok()) {
          std::fprintf(stderr, "fetch_bench: %s\n", opened.status().message().c_str());
          failed = true;
          return;
        }
        f = std::move(opened).value();
      }
      const int64_t off = r.offset < 0 ? 0 : r.offset, n = r.offset < 0 ? f->size() : r.size;
      if (int64_t(buf.size()) < n) buf.resize(size_t(n));
      if (hdl::Status s = hdl::read_exactly(*f, off, n, buf.data()); !s.is_ok()) {
        std::fprintf(stderr, "fetch_bench: %s\n", s.message().c_str());
        failed = true;
        return;
      }
      bytes += n;
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(work);
  for (auto& t : pool) t.join();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("bytes=%lld requests=%lld cpu_s=%.4f wall_s=%.4f\n", (long long)bytes.load(),
              (long long)fs->stats().requests, cpu_s(), wall);
  return failed ? 1 : 0;
}
