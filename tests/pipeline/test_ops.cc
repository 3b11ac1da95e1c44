#include "tests/pipeline/test_ops.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>

#include "pipeline/operator.h"
#include "pipeline/spec.h"
#include "tests/test_util.h"

namespace hdl::testing {
namespace fs = std::filesystem;
namespace {

class Checksum final : public Operator {
 public:
  explicit Checksum(const NodeSpec&) {}
  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec>) const override {
    return {TensorSpec{DType::kI64, Shape{}, Layout::kNone}};
  }
  Status run(SampleIO& io) const override {
    const ConstTensorView& in = io.input(0);
    uint64_t h = 0xcbf29ce484222325ull;
    const auto* p = in.typed<uint8_t>();
    for (int64_t i = 0; i < in.num_elements(); ++i) h = (h ^ p[i]) * 0x100000001b3ull;
    HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, Shape{}, DType::kI64, Layout::kNone));
    *out.typed<int64_t>() = static_cast<int64_t>(h);
    return Status::ok();
  }
};

// Passes a scalar through; used to put a cost and a failure point in the graph.
class PassThrough : public Operator {
 public:
  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec> in) const override {
    return {in[0]};
  }
  Status forward(SampleIO& io) const {
    const ConstTensorView& in = io.input(0);
    HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, in.shape, in.dtype, in.layout));
    copy(in, out);
    return Status::ok();
  }
};

class Slow final : public PassThrough {
 public:
  explicit Slow(const NodeSpec& n) : micros_(n.get_int("micros")) {}
  Status run(SampleIO& io) const override {
    std::this_thread::sleep_for(std::chrono::microseconds(micros_));
    return forward(io);
  }

 private:
  int64_t micros_;
};

class FailIf final : public PassThrough {
 public:
  explicit FailIf(const NodeSpec& n) : indices_(n.get_ints("indices")) {}
  Status run(SampleIO& io) const override {
    if (std::find(indices_.begin(), indices_.end(), io.sample().dataset_index) != indices_.end())
      return Status::invalid_data("injected failure");
    return forward(io);
  }

 private:
  std::vector<int64_t> indices_;
};

template <typename Op>
OpSchema simple_schema(std::string name, int inputs, std::vector<ArgSchema> args) {
  OpSchema s;
  s.name = std::move(name);
  s.doc = "test operator";
  for (int i = 0; i < inputs; ++i) s.inputs.push_back({"in" + std::to_string(i), ""});
  s.outputs = {{"out", ""}};
  s.args = std::move(args);
  s.create = [](const NodeSpec& n) { return std::make_unique<Op>(n); };
  return s;
}

}  // namespace

const OpRegistry& test_registry() {
  static const OpRegistry r = [] {
    OpRegistry reg = OpRegistry::builtin();
    reg.add(simple_schema<Checksum>("checksum", 1, {}));
    reg.add(simple_schema<Slow>("slow", 1, {{"micros", ArgType::kInt, ArgValue(1000), "", at_least(0)}}));
    reg.add(simple_schema<FailIf>("fail_if", 1, {{"indices", ArgType::kInts, ArgValue(std::vector<int64_t>{}), ""}}));
    return reg;
  }();
  return r;
}

TempImageFolder::TempImageFolder(int classes, int per_class) {
  static int counter = 0;
  root_ = fs::path(HDL_BINARY_DIR) / "tmp" /
          ("imagefolder_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  fs::remove_all(root_);
  fs::create_directories(root_);
  const fs::path train = corpus_dir() / "imagenet" / "train";
  std::vector<fs::path> class_dirs;
  for (const auto& e : fs::directory_iterator(train))
    if (e.is_directory()) class_dirs.push_back(e.path());
  std::sort(class_dirs.begin(), class_dirs.end());
  std::vector<fs::path> files;
  for (const auto& d : class_dirs)
    for (const auto& e : fs::directory_iterator(d)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  size_t next = 0;
  for (int c = 0; c < classes; ++c) {
    const fs::path dir = root_ / ("class_" + std::to_string(c));
    fs::create_directories(dir);
    for (int i = 0; i < per_class; ++i, ++next) {
      char name[32];
      std::snprintf(name, sizeof name, "img_%03d.JPEG", i);
      fs::create_symlink(files.at(next % files.size()), dir / name);
    }
  }
}

TempImageFolder::~TempImageFolder() {
  std::error_code ec;
  fs::remove_all(root_, ec);
}

void TempImageFolder::add_dangling(const std::string& cls, const std::string& name) {
  fs::create_symlink(root_ / "does-not-exist.jpg", root_ / cls / name);
}

void TempImageFolder::add_link(const std::string& cls, const std::string& name, const fs::path& target) {
  fs::create_symlink(target, root_ / cls / name);
}

std::vector<std::string> TempImageFolder::class_names() const {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(root_)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace hdl::testing
