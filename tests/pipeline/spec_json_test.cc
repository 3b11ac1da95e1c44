#include "pipeline/spec_json.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "pipeline/errors.h"
#include "pipeline/graph.h"
#include "pipeline/pipeline.h"
#include "tests/pipeline/test_ops.h"
#include "tests/test_util.h"

namespace hdl {
namespace {

// Expects spec_from_json(text) to throw ConfigError with a message containing every part.
void expect_error(const std::string& text, std::initializer_list<const char*> parts) {
  try {
    spec_from_json(text);
    ADD_FAILURE() << "no exception for " << text;
  } catch (const ConfigError& e) {
    for (const char* p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

void expect_same(const PipelineSpec& a, const PipelineSpec& b) {
  ASSERT_EQ(a.nodes().size(), b.nodes().size());
  for (size_t i = 0; i < a.nodes().size(); ++i) {
    const NodeSpec& x = a.nodes()[i];
    const NodeSpec& y = b.nodes()[i];
    EXPECT_EQ(x.op, y.op);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.inputs, y.inputs);
    EXPECT_EQ(x.args, y.args) << x.describe();
    EXPECT_EQ(x.arg_inputs, y.arg_inputs);
    EXPECT_EQ(x.stage, y.stage);
  }
  EXPECT_EQ(a.outputs(), b.outputs());
}

PipelineSpec every_type_spec() {
  PipelineSpec spec;
  auto files = spec.add("file_reader", {}, {{"file_root", "data/train"}, {"shuffle", true}}, {}, "reader");
  auto coin = spec.add("coin_flip", {}, {{"probability", 0.25}});
  auto images = spec.add("image_decoder", {files[0]}, {{"output_type", "rgb"}, {"max_pixels", int64_t{1} << 40}});
  spec.add("test_args", {images[0]},
           {{"b", false}, {"f", 1.0}, {"ints", {224, 224}}, {"floats", {0.5, 1.5}},
            {"strs", {"a", "b c", "\"quoted\"\n"}}, {"empty", std::vector<int64_t>{}},
            {"neg", -3}, {"tiny", 1e-300}},
           {{"flip", coin[0]}}, "with \"odd\" name/ü", Stage::kMixed);
  spec.set_outputs({{3, 0}, files[1]});
  return spec;
}

TEST(SpecJson, RoundTripKeepsEveryArgumentTypeAndEdge) {
  const PipelineSpec spec = every_type_spec();
  const std::string text = to_json(spec);
  EXPECT_NE(text.find("\"format\": \"hdl-pipeline-spec\""), std::string::npos);
  EXPECT_NE(text.find("\"f\": 1.0"), std::string::npos) << "a float must stay a float:\n" << text;
  const PipelineSpec back = spec_from_json(text);
  expect_same(spec, back);
  EXPECT_EQ(to_json(back), text);            // stable
  expect_same(spec, spec_from_json(to_json(spec, -1)));  // one-line form too
}

TEST(SpecJson, EdgesMayPointForwardAndDefaultsApply) {
  const PipelineSpec spec = spec_from_json(R"({
    "nodes": [
      {"name": "decode", "op": "image_decoder", "inputs": [{"node": "files"}]},
      {"name": "files", "op": "file_reader", "args": {"file_root": "x"}}],
    "outputs": [{"node": "decode", "output": 0}, {"node": "files", "output": 1}]})");
  ASSERT_EQ(spec.nodes().size(), 2u);
  EXPECT_EQ(spec.nodes()[0].inputs, (std::vector<TensorRef>{{1, 0}}));
  EXPECT_EQ(spec.nodes()[0].stage, Stage::kCpu);
  EXPECT_EQ(spec.outputs()[1], (TensorRef{1, 1}));
}

TEST(SpecJson, MalformedDocumentsNameTheJsonPath) {
  expect_error("{\"nodes\": [", {"$: not valid JSON"});
  expect_error("[]", {"$: expected an object, got a list"});
  expect_error(R"({"outputs": []})", {"$: missing \"nodes\""});
  expect_error(R"({"nodes": [], "outputs": [], "version": 1e999})", {"$: not valid JSON", "number overflow"});
  expect_error(R"({"format": "other", "nodes": [], "outputs": []})", {"$.format", "\"other\""});
  expect_error(R"({"version": 7, "nodes": [], "outputs": []})", {"$.version", "7"});
  expect_error(R"({"nodes": [{"op": "x"}], "outputs": []})", {"$.nodes[0]: missing \"name\""});
  expect_error(R"({"nodes": [{"name": "a"}], "outputs": []})", {"$.nodes[0]: missing \"op\""});
  expect_error(R"({"nodes": [{"name": "a", "op": "x"}, {"name": "a", "op": "y"}], "outputs": []})",
               {"$.nodes[1].name", "used twice"});
  expect_error(R"({"nodes": [{"name": "a", "op": "x", "args": {"size": [1, "a"]}}], "outputs": []})",
               {"$.nodes[0].args.size[1]: expected a number, got a string"});
  expect_error(R"({"nodes": [{"name": "a", "op": "x", "args": {"s": ["a", 1]}}], "outputs": []})",
               {"$.nodes[0].args.s[1]: expected a string"});
  expect_error(R"({"nodes": [{"name": "a", "op": "x", "args": {"s": null}}], "outputs": []})",
               {"$.nodes[0].args.s", "got null"});
  expect_error(R"({"nodes": [{"name": "a", "op": "x", "inputs": [{"node": "b"}]}], "outputs": []})",
               {"$.nodes[0].inputs[0].node", "no node named \"b\""});
  expect_error(R"({"nodes": [{"name": "a", "op": "x", "stage": "tpu"}], "outputs": []})",
               {"$.nodes[0].stage", "\"tpu\""});
  expect_error(R"({"nodes": [{"name": "a", "op": "x", "argz": {}}], "outputs": []})",
               {"$.nodes[0].argz", "unknown key"});
  expect_error(R"({"nodes": [{"name": "a", "op": "x"}], "outputs": [{"node": "a", "output": -1}]})",
               {"$.outputs[0].output"});
}

TEST(SpecJson, ValuesJsonCannotHoldAreRefused) {
  PipelineSpec spec;
  spec.add("file_reader", {}, {{"file_root", "x"}});
  spec.add("random_normal", {}, {{"mean", std::numeric_limits<double>::infinity()}});
  EXPECT_THROW(to_json(spec), ConfigError);
  PipelineSpec dangling;
  dangling.add("image_decoder", {{5, 0}});
  EXPECT_THROW(to_json(dangling), ConfigError);
}

// A spec that went through JSON builds a pipeline giving the same batches as the original.
TEST(SpecJson, LoadedSpecRunsLikeTheOriginal) {
  HDL_REQUIRE_CORPUS();
  testing::TempImageFolder folder(2, 3);
  PipelineSpec spec;
  auto files = spec.add("file_reader", {}, {{"file_root", folder.root().string()}, {"shuffle", true}});
  auto sum = spec.add("checksum", {files[0]});
  spec.set_outputs({sum[0], files[1]});
  const PipelineSpec loaded = spec_from_json(to_json(spec));
  Pipeline a(spec, {.batch_size = 4, .num_threads = 2, .seed = 7}, testing::test_registry());
  Pipeline b(loaded, {.batch_size = 4, .num_threads = 2, .seed = 7}, testing::test_registry());
  EXPECT_EQ(a.state().fingerprint, b.state().fingerprint);
  for (int i = 0; i < 2; ++i) {
    auto x = a.next(), y = b.next();
    ASSERT_TRUE(x && y);
    EXPECT_EQ(x->dataset_indices, y->dataset_indices);
    const Tensor& sx = x->outputs[0].as_tensor();
    const Tensor& sy = y->outputs[0].as_tensor();
    ASSERT_EQ(sx.num_bytes(), sy.num_bytes());
    EXPECT_EQ(0, std::memcmp(sx.data(), sy.data(), sx.num_bytes()));
  }
}

}  // namespace
}  // namespace hdl
