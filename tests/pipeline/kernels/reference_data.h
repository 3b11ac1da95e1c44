// Golden data for the kernel tests: torchvision / Pillow outputs on real corpus photos, made by
// make_references.py (run with /usr/bin/python3) into $HDL_BINARY_DIR/kernels_references (and by
// other scripts of the same format into their own directories, see references_from).
//
// The script runs once per build tree: the first test process to need it takes a file lock,
// (re)generates when the index is missing or older than the script, and the others reuse it.
// Thread safety: references() is called from the test main thread only.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "media/tensor.h"
#include "tests/test_util.h"

namespace hdl::testing {

/// One `key=value` line of index.txt, with its raw file loaded.
struct RefEntry {
  std::string kind;  ///< "source", "case" or "size"
  std::map<std::string, std::string> kv;
  std::vector<uint8_t> bytes;

  const std::string& get(const std::string& k) const {
    static const std::string empty;
    auto it = kv.find(k);
    return it == kv.end() ? empty : it->second;
  }
  int64_t i(const std::string& k) const { return std::stoll(get(k)); }
  double f(const std::string& k) const { return std::stod(get(k)); }
  bool has(const std::string& k, const std::string& v) const { return get(k) == v; }
  Shape shape() const { return {i("d0"), i("d1"), i("d2")}; }
  /// Element type of the reference output.
  DType dtype() const {
    const std::string& d = get("dtype");
    return d == "u8" ? DType::kU8 : d == "f32" ? DType::kF32 : d == "f16" ? DType::kF16 : DType::kBF16;
  }
  ConstTensorView view() const { return ConstTensorView(bytes.data(), shape(), dtype()); }
};

/// All sources and cases; `error` says why there are none.
struct References {
  std::vector<RefEntry> entries;
  std::map<std::string, const RefEntry*> sources;
  std::string error;

  /// The source image named `name` as an HWC uint8 view.
  ConstTensorView source(const std::string& name) const {
    const RefEntry& s = *sources.at(name);
    return ConstTensorView(s.bytes.data(), {s.i("h"), s.i("w"), s.i("c")}, DType::kU8, Layout::kHWC);
  }
  std::vector<const RefEntry*> cases(const std::string& op) const {
    std::vector<const RefEntry*> out;
    for (const auto& e : entries) {
      if (e.kind == "case" && e.get("op") == op) out.push_back(&e);
    }
    return out;
  }
};

namespace detail {
inline std::string generate_references(const std::filesystem::path& dir, const std::string& script_name) {
  namespace fs = std::filesystem;
  const fs::path script = fs::path(HDL_SOURCE_DIR) / "tests/pipeline/kernels" / script_name;
  const fs::path index = dir / "index.txt";
  fs::create_directories(dir.parent_path());
  const std::string lock_path = dir.string() + ".lock";
  int fd = ::open(lock_path.c_str(), O_CREAT | O_RDWR, 0644);
  if (fd < 0 || ::flock(fd, LOCK_EX) != 0) return "cannot lock " + lock_path;
  std::string err;
  if (!fs::exists(index) || fs::last_write_time(index) < fs::last_write_time(script)) {
    const std::string cmd = "/usr/bin/python3 '" + script.string() + "' '" + dir.string() + "' '" +
                            corpus_dir().string() + "' > '" + dir.string() + ".log' 2>&1";
    if (std::system(cmd.c_str()) != 0) {
      err = script_name + " failed (python3 with torch 1.13 / torchvision 0.14 needed); see " +
            dir.string() + ".log";
    }
  }
  ::flock(fd, LOCK_UN);
  ::close(fd);
  return err;
}

inline void load_index(const std::filesystem::path& dir, References& refs) {
  std::ifstream in(dir / "index.txt");
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    std::istringstream ss(line);
    RefEntry e;
    ss >> e.kind;
    for (std::string tok; ss >> tok;) {
      const auto eq = tok.find('=');
      e.kv[tok.substr(0, eq)] = tok.substr(eq + 1);
    }
    if (e.kv.count("file")) e.bytes = read_file(dir / e.get("file"));
    refs.entries.push_back(std::move(e));
  }
  for (const auto& e : refs.entries) {
    if (e.kind == "source") refs.sources[e.get("name")] = &e;
  }
  if (refs.entries.empty()) refs.error = "empty reference index in " + dir.string();
}
}  // namespace detail

/// The references made by tests/pipeline/kernels/`script` into $HDL_BINARY_DIR/`dir_name`,
/// generated on first use. Tests GTEST_SKIP with refs.error when it is set.
inline const References& references_from(const std::string& script, const std::string& dir_name) {
  static std::map<std::string, std::unique_ptr<References>> cache;
  std::unique_ptr<References>& refs = cache[dir_name];
  if (!refs) {
    refs = std::make_unique<References>();
    if (!have_corpus()) {
      refs->error = "corpus not found at " + corpus_dir().string();
      return *refs;
    }
    const std::filesystem::path dir = std::filesystem::path(HDL_BINARY_DIR) / dir_name;
    refs->error = detail::generate_references(dir, script);
    if (refs->error.empty()) detail::load_index(dir, *refs);
  }
  return *refs;
}

/// The references of make_references.py.
inline const References& references() { return references_from("make_references.py", "kernels_references"); }

#define HDL_REQUIRE_REFERENCES()                                                          \
  do {                                                                                    \
    if (!::hdl::testing::references().error.empty())                                      \
      GTEST_SKIP() << "kernel references unavailable: " << ::hdl::testing::references().error; \
  } while (0)

/// Differences between two same-shaped views, compared as float (uint8, float32, f16, bf16).
struct DiffStats {
  double max_abs = 0, mean_abs = 0, max_rel = 0;
  int64_t count = 0, mismatches = 0;
};

inline float element_as_float(const ConstTensorView& v, int64_t offset) {
  switch (v.dtype) {
    case DType::kU8: return v.typed<uint8_t>()[offset];
    case DType::kF32: return v.typed<float>()[offset];
    case DType::kF16: return half_to_float(static_cast<const uint16_t*>(v.data)[offset]);
    case DType::kBF16: return bfloat16_to_float(static_cast<const uint16_t*>(v.data)[offset]);
    default: return NAN;
  }
}

/// Compares 3-D views of any strides element by element.
inline DiffStats diff(const ConstTensorView& got, const ConstTensorView& want) {
  DiffStats d;
  EXPECT_EQ(got.shape, want.shape);
  if (got.shape != want.shape) return d;
  double sum = 0;
  for (int64_t a = 0; a < got.shape[0]; ++a) {
    for (int64_t b = 0; b < got.shape[1]; ++b) {
      for (int64_t c = 0; c < got.shape[2]; ++c) {
        auto off = [&](const ConstTensorView& v) {
          return a * v.strides[0] + b * v.strides[1] + c * v.strides[2];
        };
        const double g = element_as_float(got, off(got)), w = element_as_float(want, off(want));
        const double e = std::fabs(g - w);
        sum += e;
        d.max_abs = std::max(d.max_abs, e);
        if (w != 0) d.max_rel = std::max(d.max_rel, e / std::fabs(w));
        d.mismatches += e != 0;
        ++d.count;
      }
    }
  }
  d.mean_abs = d.count ? sum / d.count : 0;
  return d;
}

inline std::ostream& operator<<(std::ostream& os, const DiffStats& d) {
  return os << "max_abs=" << d.max_abs << " mean_abs=" << d.mean_abs << " max_rel=" << d.max_rel
            << " mismatches=" << d.mismatches << "/" << d.count;
}

/// A case's description for failure messages: "case 12 op=resize filter=bilinear ...".
inline std::string describe(const RefEntry& e) {
  std::string s = "case";
  for (const auto& [k, v] : e.kv) s += " " + k + "=" + v;
  return s;
}

/// An owned tensor shaped like the case's reference (contiguous), for the kernel's output.
inline Tensor output_like(const RefEntry& e, DType dtype, Layout layout = Layout::kNone) {
  return Tensor::empty(e.shape(), dtype, layout);
}

}  // namespace hdl::testing
