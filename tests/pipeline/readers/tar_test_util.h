// Helpers for the tar shard tests: a temporary folder, files in it, shards made by GNU tar and
// Python's tarfile at test time, and the golden member list from Python's tarfile (an
// independent parser: name, data offset and size of every regular member).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "pipeline/spec.h"

namespace hdl::testing {

struct GoldenMember {
  std::string name;
  int64_t offset = 0;
  int64_t size = 0;
};

class TarDir {
 public:
  explicit TarDir(const std::string& tag) {
    dir_ = std::filesystem::path(HDL_BINARY_DIR) / "tmp" / (tag + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  ~TarDir() { std::filesystem::remove_all(dir_); }

  std::filesystem::path path(const std::string& rel) const { return dir_ / rel; }
  const std::filesystem::path& dir() const { return dir_; }

  /// Writes `bytes` to dir/rel (making folders).
  void write(const std::string& rel, const std::string& bytes) const {
    auto p = path(rel);
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
  }
  std::string read(const std::string& rel) const {
    std::ifstream f(path(rel), std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }

  /// Runs `cmd` with dir as the working folder; true on exit status 0.
  bool sh(const std::string& cmd) const {
    std::string full = "cd '" + dir_.string() + "' && " + cmd;
    return std::system(full.c_str()) == 0;
  }

  /// Runs a Python 3 script (Debian's interpreter) with dir as the working folder.
  bool python(const std::string& script) const {
    write("_script.py", script);
    return sh("/usr/bin/python3 _script.py");
  }

  /// Python tarfile's view of `rel`: every regular member, in order (names hex-encoded on the
  /// way so that any bytes survive).
  std::vector<GoldenMember> golden(const std::string& rel) const {
    std::string script =
        "import tarfile, sys\n"
        "out = open('_golden.txt', 'w')\n"
        "with tarfile.open('" + rel + "', encoding='utf-8', errors='surrogateescape') as t:\n"
        "    for m in t:\n"
        "        if m.isreg():\n"
        "            n = m.name.encode('utf-8', 'surrogateescape').hex()\n"
        "            out.write('%s %d %d\\n' % (n, m.offset_data, m.size))\n"
        "out.close()\n";
    EXPECT_TRUE(python(script)) << "python tarfile could not read " << rel;
    std::vector<GoldenMember> members;
    std::istringstream in(read("_golden.txt"));
    std::string hex;
    GoldenMember m;
    while (in >> hex >> m.offset >> m.size) {
      m.name.clear();
      for (size_t i = 0; i + 1 < hex.size(); i += 2) m.name.push_back(char(std::stoi(hex.substr(i, 2), nullptr, 16)));
      members.push_back(m);
    }
    return members;
  }

 private:
  std::filesystem::path dir_;
};

/// A webdataset_reader over `urls` under `root` (plus `extra` arguments), its three outputs
/// (encoded, label, index) the pipeline's.
inline PipelineSpec webdataset_spec(const std::string& root, const std::string& urls, PipelineSpec::Args extra = {}) {
  PipelineSpec spec;
  PipelineSpec::Args args = {{"file_root", root}, {"urls", std::vector<std::string>{urls}}};
  for (auto& kv : extra) args.push_back(std::move(kv));
  auto r = spec.add("webdataset_reader", {}, args, {}, "reader");
  spec.set_outputs({r[0], r[1], r[2]});
  return spec;
}

}  // namespace hdl::testing
