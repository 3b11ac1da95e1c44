// Helpers for the operator tests: run a small pipeline over real photos and get every sample's
// tensors back, together with the decoded input, to compare with a direct kernel call.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/errors.h"
#include "pipeline/pipeline.h"
#include "tests/pipeline/test_ops.h"
#include "tests/test_util.h"

namespace hdl::testing {

/// Every sample of one run: outputs[o][k] is output o of the k-th sample; the last output is the
/// operator's input images. epoch/position identify each sample's random stream.
struct OpRun {
  std::vector<std::vector<Tensor>> outputs;
  std::vector<int64_t> epochs, positions;
  bool dense_first = false;  ///< whether output 0 came back as a dense batch
  const std::vector<Tensor>& images() const { return outputs.back(); }
};

/// Adds the nodes under test to `spec` reading `images`; returns the outputs to collect.
using AddNodes = std::function<std::vector<TensorRef>(PipelineSpec&, TensorRef images)>;

/// file_reader -> image_decoder (rgb) [-> resize `resize`] -> add(...), run for `epochs` epochs.
inline OpRun run_op(const std::string& root, const AddNodes& add, std::vector<int64_t> resize = {},
                    PipelineOptions options = {.batch_size = 4, .num_threads = 2, .seed = 11}, int epochs = 1) {
  PipelineSpec spec;
  auto files = spec.add("file_reader", {}, {{"file_root", root}}, {}, "reader");
  TensorRef images = spec.add("image_decoder", {files[0]}, {}, {}, "decode")[0];
  if (!resize.empty()) images = spec.add("resize", {images}, {{"size", ArgValue(resize)}}, {}, "resize")[0];
  std::vector<TensorRef> outs = add(spec, images);
  outs.push_back(images);
  spec.set_outputs(outs);
  Pipeline pipe(spec, options);
  OpRun run;
  run.outputs.resize(outs.size());
  for (int e = 0; e < epochs; ++e) {
    for (const auto& b : pipe.epoch_batches()) {
      run.dense_first = b.outputs[0].is_dense();
      for (int64_t i = 0; i < b.outputs[0].size(); ++i) {
        for (size_t o = 0; o < outs.size(); ++o) run.outputs[o].push_back(b.outputs[o].sample(i));
        run.epochs.push_back(b.epoch);
        run.positions.push_back(b.batch_index * options.batch_size + i);
      }
    }
  }
  return run;
}

/// Same shape, dtype and bytes.
inline ::testing::AssertionResult same_tensor(const Tensor& got, const Tensor& want) {
  if (got.shape() != want.shape() || got.dtype() != want.dtype())
    return ::testing::AssertionFailure() << "got " << got.shape().to_string() << " " << dtype_name(got.dtype())
                                         << ", want " << want.shape().to_string() << " " << dtype_name(want.dtype());
  if (std::memcmp(got.data(), want.data(), got.num_bytes()) != 0) return ::testing::AssertionFailure() << "pixels differ";
  return ::testing::AssertionSuccess();
}

/// A new tensor written by `kernel(view)`, which must succeed.
inline Tensor by_kernel(Shape shape, DType dtype, Layout layout, const std::function<Status(const TensorView&)>& kernel) {
  Tensor t = Tensor::empty(shape, dtype, layout);
  const Status st = kernel(t.view());
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return t;
}

/// The ConfigError text of building a pipeline with one `op` node on decoded images, or "".
inline std::string config_error(const std::string& root, const std::string& op, PipelineSpec::Args args,
                                std::vector<int64_t> resize = {}) {
  try {
    run_op(root, [&](PipelineSpec& s, TensorRef images) {
      return std::vector<TensorRef>{s.add(op, {images}, args, {}, "op")[0]};
    }, resize);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

/// Fixture for operator tests: skips without the corpus; root() is a temporary ImageFolder of
/// kClasses x kPerClass real photos, made on first use.
template <int kClasses, int kPerClass>
class OpTest : public ::testing::Test {
 protected:
  void SetUp() override { HDL_REQUIRE_CORPUS(); }
  void TearDown() override { folder_.reset(); }
  std::string root() {
    if (!folder_) folder_ = std::make_unique<TempImageFolder>(kClasses, kPerClass);
    return folder_->root().string();
  }
  std::unique_ptr<TempImageFolder> folder_;
};

}  // namespace hdl::testing
