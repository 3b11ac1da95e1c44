// What ShardMemberFileSystem (pipeline/readers/tar/shard_member_file.h), which the pipeline now puts
// over its default file system, costs: open + one 4 KiB read of N local files through
// posix_file_system() and through the decorator (paths without ".tar/": must be the same), and
// of the same files as members "<shard>.tar/<member>" of one tar shard (indexed once, then a
// window per open). Rounds alternate the three; prints medians of ns per open and the ratios.
//
//   build/samples/benchmark/member_open_bench [files=2000] [rounds=9]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "media/file_system.h"
#include "pipeline/readers/tar/shard_member_file.h"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// ns per open+read over `paths`; exits on an error.
double time_opens(hdl::FileSystem& fs, const std::vector<std::string>& paths) {
  std::vector<char> buf(4096);
  const auto t0 = std::chrono::steady_clock::now();
  for (const std::string& p : paths) {
    auto f = fs.open(p);
    if (!f.is_ok()) {
      std::fprintf(stderr, "member_open_bench: %s: %s\n", p.c_str(), f.status().message().c_str());
      std::exit(1);
    }
    if (!(*f)->read(0, 4096, buf.data()).is_ok()) std::exit(1);
  }
  const auto ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  return ns / double(paths.size());
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 2000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 9;
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("member_open_bench_" + std::to_string(::getpid()));
  fs::create_directories(dir / "f");
  std::vector<std::string> files, members;
  const std::string data(4096, 'x');
  for (int i = 0; i < n; ++i) {
    const std::string name = "s" + std::to_string(i) + ".bin";
    std::ofstream(dir / "f" / name) << data;
    files.push_back((dir / "f" / name).string());
    members.push_back((dir / "s.tar").string() + "/" + name);
  }
  const std::string tar = "cd '" + (dir / "f").string() + "' && tar --format=gnu -cf ../s.tar s*.bin";
  if (std::system(tar.c_str()) != 0) return 1;
  auto posix = hdl::posix_file_system();
  hdl::ShardMemberFileSystem members_fs(posix, {.policy = hdl::IndexCachePolicy::kNone});
  time_opens(members_fs, members);  // indexes the shard once (and warms the page cache)
  std::vector<double> plain, wrapped, member, r_wrapped, r_member;
  for (int r = 0; r < rounds; ++r) {
    const double a = time_opens(*posix, files), b = time_opens(members_fs, files), c = time_opens(members_fs, members);
    plain.push_back(a), wrapped.push_back(b), member.push_back(c);
    r_wrapped.push_back(b / a), r_member.push_back(c / a);
  }
  std::printf("files %d, rounds %d (medians)\n", n, rounds);
  std::printf("posix open+read 4 KiB           %8.0f ns\n", median(plain));
  std::printf("decorated, same local files      %8.0f ns   ratio %.3f\n", median(wrapped), median(r_wrapped));
  std::printf("decorated, members of one shard  %8.0f ns   ratio %.3f\n", median(member), median(r_member));
  fs::remove_all(dir);
  return 0;
}
