// Helpers for tests against torchvision's own random draws: the lines a reference script prints,
// and a CropDraws that replays the uniform_ / randint values torchvision drew.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/decode/crop_geometry.h"

namespace hdl::testing {

/// The stdout lines of `/usr/bin/python3 <source tree>/<script> <args>`; empty when it fails to start.
inline std::vector<std::string> python_lines(const std::string& script, const std::string& args = "") {
  const std::string cmd = "/usr/bin/python3 " HDL_SOURCE_DIR "/" + script + " " + args + " 2>/dev/null";
  std::vector<std::string> lines;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return lines;
  char buf[512];
  while (fgets(buf, sizeof buf, f)) lines.emplace_back(buf);
  pclose(f);
  return lines;
}

/// The lines of torchvision_geometry.py (tests/pipeline/decode/), run once per test binary;
/// empty when torchvision is unavailable.
inline const std::vector<std::string>& torchvision_geometry() {
  static const std::vector<std::string> lines = python_lines("tests/pipeline/decode/torchvision_geometry.py");
  return lines;
}

/// Replays recorded torchvision draws; fails the test when asked for a draw of another kind.
class RecordedDraws final : public CropDraws {
 public:
  void add(char kind, double v) { draws_.push_back({kind, v}); }
  double uniform(double lo, double hi) override {
    const auto d = next('U');
    EXPECT_GE(d, lo - 1e-6);
    EXPECT_LE(d, hi + 1e-6);
    return d;
  }
  int64_t randint(int64_t n) override {
    const auto d = static_cast<int64_t>(next('I'));
    EXPECT_LT(d, n);
    return d;
  }
  bool all_used() const { return used_ == draws_.size(); }

 private:
  double next(char kind) {
    if (used_ >= draws_.size() || draws_[used_].first != kind) {
      ADD_FAILURE() << "draw " << used_ << " is not of kind " << kind;
      return 0;
    }
    return draws_[used_++].second;
  }
  std::vector<std::pair<char, double>> draws_;
  size_t used_ = 0;
};

}  // namespace hdl::testing
