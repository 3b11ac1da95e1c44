// fuzz_spec_json: pipeline/spec_json over arbitrary text, then Graph::build on what parses.
// Checks: only the documented exception (ConfigError, incl. ArgumentTypeError) escapes; a
// parsed spec survives to_json -> spec_from_json unchanged (as JSON text) when to_json accepts
// it. Readers never touch the real filesystem: every file_root / file_list argument is pointed
// at a two-file ImageFolder tree (and list) made once in a per-process temporary directory.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "pipeline/errors.h"
#include "pipeline/graph.h"
#include "pipeline/spec_json.h"
#include "tests/fuzz/fuzz_util.h"

namespace hdl::fuzz {
namespace {

namespace fs = std::filesystem;

// root/cls/a.jpg, root/cls/b.png (empty files: nothing is decoded) and root/list.txt.
const fs::path& fixture() {
  static const fs::path root = [] {
    const fs::path r = fs::temp_directory_path() / ("hdl_fuzz_spec_" + std::to_string(getpid()));
    fs::create_directories(r / "cls");
    std::ofstream(r / "cls" / "a.jpg");
    std::ofstream(r / "cls" / "b.png");
    std::ofstream(r / "list.txt") << "cls/a.jpg 0\ncls/b.png 1\n";
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(fs::temp_directory_path() / ("hdl_fuzz_spec_" + std::to_string(getpid())), ec);
    });
    return r;
  }();
  return root;
}

// A non-empty string file_root / file_list now names the fixture; other values are left for
// validation to refuse.
void confine_readers(PipelineSpec& spec) {
  auto is_set = [](const ArgValue& v) {
    const auto* s = std::get_if<std::string>(&v.variant());
    return s && !s->empty();
  };
  for (NodeSpec& n : spec.nodes()) {
    if (auto it = n.args.find("file_root"); it != n.args.end() && is_set(it->second))
      it->second = ArgValue(fixture().string());
    if (auto it = n.args.find("file_list"); it != n.args.end() && is_set(it->second))
      it->second = ArgValue((fixture() / "list.txt").string());
  }
}

}  // namespace
}  // namespace hdl::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hdl;
  const std::string text(reinterpret_cast<const char*>(data), size);
  PipelineSpec spec;
  try {
    spec = spec_from_json(text);
  } catch (const ConfigError&) {
    return 0;
  }
  try {
    const std::string again = to_json(spec);
    HDL_FUZZ_CHECK(to_json(spec_from_json(again)) == again, "to_json -> spec_from_json is not a round trip");
  } catch (const ConfigError&) {
    // a dangling edge or a non-finite float: to_json refuses it, as documented
  }
  fuzz::confine_readers(spec);
  try {
    Graph::build(spec);
  } catch (const ConfigError&) {
  }
  return 0;
}
