#include "pipeline/graph.h"

#include <gtest/gtest.h>

#include "pipeline/errors.h"
#include "tests/pipeline/test_ops.h"
#include "tests/test_util.h"

namespace hdl {
namespace {

using testing::test_registry;

// Expects `f` to throw E with a message containing every one of `parts`.
template <typename E, typename F>
void expect_error(F&& f, std::initializer_list<const char*> parts) {
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const E& e) {
    for (const char* p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

class GraphTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HDL_REQUIRE_CORPUS();
    folder_ = std::make_unique<testing::TempImageFolder>(2, 3);
  }
  std::string root() const { return folder_->root().string(); }
  std::unique_ptr<testing::TempImageFolder> folder_;
};

TEST_F(GraphTest, ValidPipelineBuildsInTopologicalOrder) {
  PipelineSpec spec;
  auto coin = spec.add("coin_flip");  // added before the reader: order comes from the edges
  auto files = spec.add("file_reader", {}, {{"file_root", root()}});
  auto sum = spec.add("checksum", {files[0]});
  spec.set_outputs({sum[0], files[1], coin[0]});
  Graph g = Graph::build(spec, test_registry());
  ASSERT_EQ(g.nodes().size(), 3u);
  EXPECT_EQ(g.nodes()[g.source()].spec.op, "file_reader");
  EXPECT_EQ(g.value_spec(g.outputs()[1]).dtype, DType::kI64);
  EXPECT_EQ(g.value_name(g.outputs()[0]), "checksum_0.out");
  EXPECT_EQ(g.nodes()[g.source()].spec.get_string("last_batch"), "partial");  // default filled
}

TEST_F(GraphTest, UnknownOperatorSuggestsTheClosestName) {
  PipelineSpec spec;
  auto files = spec.add("file_reader", {}, {{"file_root", root()}});
  auto x = spec.add("checksun", {files[0]});
  spec.set_outputs({x[0]});
  expect_error<ConfigError>([&] { Graph::build(spec, test_registry()); },
                            {"unknown operator \"checksun\"", "did you mean \"checksum\""});
}

TEST_F(GraphTest, UnknownArgumentNamesNodeAndAlternatives) {
  PipelineSpec spec;
  auto files = spec.add("file_reader", {}, {{"file_root", root()}, {"shufle", true}});
  spec.set_outputs({files[0]});
  expect_error<ConfigError>([&] { Graph::build(spec); },
                            {"file_reader \"file_reader_0\"", "unknown argument \"shufle\"",
                             "did you mean \"shuffle\"", "accepted:"});
}

TEST_F(GraphTest, WrongTypeIsAnArgumentTypeError) {
  PipelineSpec spec;
  auto files = spec.add("file_reader", {}, {{"file_root", root()}, {"shuffle", "yes"}});
  spec.set_outputs({files[0]});
  expect_error<ArgumentTypeError>([&] { Graph::build(spec); },
                                  {"argument \"shuffle\" must be bool, got str \"yes\""});
}

TEST_F(GraphTest, OutOfRangeAndBadChoice) {
  {
    PipelineSpec spec;
    auto files = spec.add("file_reader", {}, {{"file_root", root()}});
    auto c = spec.add("coin_flip", {}, {{"probability", 1.5}});
    spec.set_outputs({files[0], c[0]});
    expect_error<ConfigError>([&] { Graph::build(spec); }, {"coin_flip \"coin_flip_0\"", "\"probability\" must be in [0, 1], got 1.5"});
  }
  {
    PipelineSpec spec;
    auto files = spec.add("file_reader", {}, {{"file_root", root()}, {"last_batch", "wrap"}});
    spec.set_outputs({files[0]});
    expect_error<ConfigError>([&] { Graph::build(spec); }, {"\"last_batch\" must be one of \"drop\", \"partial\", \"pad\", \"fill\""});
  }
  {
    PipelineSpec spec;
    auto files = spec.add("file_reader", {}, {{"file_root", root()}, {"shard_id", 2}, {"num_shards", 2}});
    spec.set_outputs({files[0]});
    expect_error<ConfigError>([&] { Graph::build(spec); }, {"shard_id", "< num_shards"});
  }
}

// The checks Graph::build runs per argument, as the Python bindings call them for fn.* (one
// implementation, the caller's own subject in front of the message).
TEST(GraphArgCheck, CheckArgAndClosestNameAreGraphBuildsChecks) {
  EXPECT_EQ(closest_name("shufle", {"file_root", "shuffle", "seed"}), "shuffle");
  EXPECT_EQ(closest_name("zzzzzz", {"file_root", "shuffle"}), "");
  const OpSchema* reader = OpRegistry::builtin().find("file_reader");
  ASSERT_NE(reader, nullptr);
  const ArgSchema* last_batch = reader->find_arg("last_batch");
  ASSERT_NE(last_batch, nullptr);
  EXPECT_EQ(check_arg(*last_batch, ArgValue("drop"), "x").get<std::string>(), "drop");
  expect_error<ArgumentTypeError>([&] { check_arg(*last_batch, ArgValue(3), "file_reader() argument 'last_batch'"); },
                                  {"file_reader() argument 'last_batch' must be str, got int 3"});
  expect_error<ConfigError>([&] { check_arg(*last_batch, ArgValue("wrap"), "S"); },
                            {"S must be one of \"drop\""});
  const OpSchema* coin = OpRegistry::builtin().find("coin_flip");
  ASSERT_NE(coin, nullptr);
  EXPECT_EQ(check_arg(*coin->find_arg("probability"), ArgValue(1), "p").type(), ArgType::kFloat);  // int -> float
}

TEST_F(GraphTest, IntegerIsAcceptedForFloat) {
  PipelineSpec spec;
  auto files = spec.add("file_reader", {}, {{"file_root", root()}});
  auto c = spec.add("coin_flip", {}, {{"probability", 1}});
  spec.set_outputs({files[0], c[0]});
  Graph g = Graph::build(spec);
  EXPECT_EQ(g.nodes()[1].spec.get_float("probability"), 1.0);
}

TEST_F(GraphTest, DanglingAndMissingInputs) {
  PipelineSpec spec;
  auto files = spec.add("file_reader", {}, {{"file_root", root()}});
  auto a = spec.add("checksum", {TensorRef{7, 0}});
  spec.set_outputs({a[0], files[1]});
  expect_error<ConfigError>([&] { Graph::build(spec, test_registry()); }, {"checksum \"checksum_0\"", "input 0 refers to node #7"});

  PipelineSpec spec2;
  auto f2 = spec2.add("file_reader", {}, {{"file_root", root()}});
  auto b = spec2.add("checksum", {TensorRef{f2.node, 5}});
  spec2.set_outputs({b[0]});
  expect_error<ConfigError>([&] { Graph::build(spec2, test_registry()); }, {"refers to output 5", "has 2 output(s)"});

  PipelineSpec spec3;
  auto f3 = spec3.add("file_reader", {}, {{"file_root", root()}});
  auto c = spec3.add("checksum", {});
  spec3.set_outputs({c[0], f3[0]});
  expect_error<ConfigError>([&] { Graph::build(spec3, test_registry()); }, {"takes 1 input(s), got 0"});
}

TEST_F(GraphTest, UnusedNodeIsAnError) {
  PipelineSpec spec;
  auto files = spec.add("file_reader", {}, {{"file_root", root()}});
  spec.add("checksum", {files[0]});
  spec.set_outputs({files[1]});
  expect_error<ConfigError>([&] { Graph::build(spec, test_registry()); }, {"checksum \"checksum_0\"", "never used"});
}

TEST_F(GraphTest, CycleIsAnError) {
  PipelineSpec spec;
  auto files = spec.add("file_reader", {}, {{"file_root", root()}});
  auto a = spec.add("slow", {TensorRef{2, 0}}, {}, {}, "a");
  auto b = spec.add("slow", {a[0]}, {}, {}, "b");
  spec.set_outputs({b[0], files[0]});
  expect_error<ConfigError>([&] { Graph::build(spec, test_registry()); }, {"cycle", "slow \"a\"", "slow \"b\""});
}

TEST_F(GraphTest, StageOrderIsEnforced) {
  OpRegistry reg = test_registry();
  OpSchema gpu_op = *reg.find("slow");
  gpu_op.name = "device_slow";
  gpu_op.stages = {Stage::kCpu, Stage::kDevice};
  gpu_op.create_device = gpu_op.create;
  reg.add(gpu_op);
  PipelineSpec spec;
  auto files = spec.add("file_reader", {}, {{"file_root", root()}});
  auto g = spec.add("device_slow", {files[1]}, {}, {}, "on_gpu", Stage::kDevice);
  auto c = spec.add("slow", {g[0]}, {}, {}, "back_on_cpu");
  spec.set_outputs({c[0]});
  expect_error<ConfigError>([&] { Graph::build(spec, reg); },
                            {"slow \"back_on_cpu\" (cpu) reads the output of device_slow \"on_gpu\" (gpu)", "cpu -> mixed -> gpu"});

  PipelineSpec bad_stage;
  auto f2 = bad_stage.add("file_reader", {}, {{"file_root", root()}});
  auto s = bad_stage.add("slow", {f2[1]}, {}, {}, "", Stage::kDevice);
  bad_stage.set_outputs({s[0]});
  expect_error<ConfigError>([&] { Graph::build(bad_stage, reg); }, {"cannot run on stage \"gpu\""});
}

TEST_F(GraphTest, ExactlyOneReaderAndSomeOutputs) {
  PipelineSpec none;
  auto c = none.add("coin_flip");
  none.set_outputs({c[0]});
  expect_error<ConfigError>([&] { Graph::build(none); }, {"no reader"});

  PipelineSpec two;
  auto a = two.add("file_reader", {}, {{"file_root", root()}});
  auto b = two.add("file_reader", {}, {{"file_root", root()}});
  two.set_outputs({a[0], b[0]});
  expect_error<ConfigError>([&] { Graph::build(two); }, {"exactly one reader"});

  PipelineSpec no_outputs;
  no_outputs.add("file_reader", {}, {{"file_root", root()}});
  expect_error<ConfigError>([&] { Graph::build(no_outputs); }, {"no outputs"});
}

TEST_F(GraphTest, PerSampleArgumentsOnlyWhereAllowed) {
  PipelineSpec spec;
  auto files = spec.add("file_reader", {}, {{"file_root", root()}});
  auto p = spec.add("random_uniform");
  auto c = spec.add("coin_flip", {}, {}, {{"probability", p[0]}});
  spec.set_outputs({files[1], c[0]});
  EXPECT_NO_THROW(Graph::build(spec));

  PipelineSpec bad;
  auto f2 = bad.add("file_reader", {}, {{"file_root", root()}});
  auto p2 = bad.add("random_uniform");
  auto c2 = bad.add("coin_flip", {}, {}, {{"dtype", p2[0]}});
  bad.set_outputs({f2[1], c2[0]});
  expect_error<ConfigError>([&] { Graph::build(bad); }, {"argument \"dtype\" cannot be driven per sample"});
}

TEST_F(GraphTest, MissingReaderRootIsClear) {
  PipelineSpec spec;
  auto files = spec.add("file_reader", {}, {{"file_root", "/nonexistent/dir"}});
  spec.set_outputs({files[0]});
  expect_error<ConfigError>([&] { Graph::build(spec); }, {"file_reader \"file_reader_0\"", "\"/nonexistent/dir\" is not a directory"});
  PipelineSpec neither;
  auto f = neither.add("file_reader");
  neither.set_outputs({f[0]});
  expect_error<ConfigError>([&] { Graph::build(neither); }, {"give file_root"});
}

TEST(Schema, ReferenceDocListsArguments) {
  const OpSchema* s = OpRegistry::builtin().find("file_reader");
  ASSERT_NE(s, nullptr);
  const std::string doc = s->reference_doc();
  EXPECT_NE(doc.find("| `shuffle` | bool | `False` |"), std::string::npos) << doc;
  EXPECT_NE(doc.find("| `last_batch` | str | `\"partial\"` |"), std::string::npos) << doc;
}

}  // namespace
}  // namespace hdl
