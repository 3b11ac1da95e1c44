// Shared helpers for the GoogleTest suite: where the corpus is, reading files.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace hdl::testing {

/// The real-media corpus (tests/corpus/make_corpus.sh output): $HDL_CORPUS_DIR, else the
/// configured one (CMake's HDL_CORPUS_DIR, default <build dir>/corpus).
inline std::filesystem::path corpus_dir() {
  if (const char* env = std::getenv("HDL_CORPUS_DIR"); env && *env) return env;
  return HDL_CORPUS_DIR;
}

inline bool have_corpus() { return std::filesystem::exists(corpus_dir() / "imagenet" / "train"); }

/// Skips the current test, visibly, when the corpus has not been built.
#define HDL_REQUIRE_CORPUS()                                                              \
  do {                                                                                    \
    if (!::hdl::testing::have_corpus())                                                   \
      GTEST_SKIP() << "corpus not found at " << ::hdl::testing::corpus_dir()              \
                   << " (run tests/corpus/make_corpus.sh build/corpus, or set "           \
                      "HDL_CORPUS_DIR)";                                                   \
  } while (0)

inline std::vector<uint8_t> read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

}  // namespace hdl::testing
