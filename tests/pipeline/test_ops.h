// Operators used only by tests, registered in a registry extended from builtin(), which is how
// a user adds C++ operators too.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "pipeline/registry.h"

namespace hdl::testing {

/// builtin() plus:
///   checksum(bytes) -> int64 FNV-1a of the bytes
///   slow(x, micros)  -> x after sleeping `micros` microseconds (load for early-stop tests)
///   fail_if(x, indices) -> x, or "injected failure" for the listed dataset indices
const OpRegistry& test_registry();

/// A temporary ImageFolder of symlinks to real corpus JPEGs: `classes` classes of
/// `per_class` files each, taken from corpus imagenet/train. Removed by the destructor.
class TempImageFolder {
 public:
  TempImageFolder(int classes, int per_class);
  ~TempImageFolder();
  const std::filesystem::path& root() const { return root_; }
  /// Adds root/<cls>/<name> as a symlink to nowhere (an unreadable sample).
  void add_dangling(const std::string& cls, const std::string& name);
  /// Adds root/<cls>/<name> as a symlink to `target`.
  void add_link(const std::string& cls, const std::string& name, const std::filesystem::path& target);
  std::vector<std::string> class_names() const;

 private:
  std::filesystem::path root_;
};

}  // namespace hdl::testing
