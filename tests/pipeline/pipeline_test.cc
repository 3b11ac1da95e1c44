#include "pipeline/pipeline.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

#include "pipeline/dataset.h"
#include "pipeline/spec_json.h"
#include "tests/pipeline/test_ops.h"
#include "tests/test_util.h"

namespace hdl {
namespace {

using testing::TempImageFolder;
using testing::test_registry;

// Every value of a batch, flattened, so two runs can be compared exactly.
struct Flat {
  std::vector<std::vector<int64_t>> ints;  // per output: scalars, or ragged byte checksums
  std::vector<std::vector<float>> floats;
  std::vector<int64_t> indices;
  friend bool operator==(const Flat&, const Flat&) = default;
};

Flat flatten(const PipelineOutput& out) {
  Flat f;
  f.indices = out.dataset_indices;
  for (const Batch& b : out.outputs) {
    std::vector<int64_t> ints;
    std::vector<float> floats;
    for (int64_t i = 0; i < b.size(); ++i) {
      Tensor t = b.sample(i);
      switch (t.dtype()) {
        case DType::kI64: ints.push_back(*t.typed<int64_t>()); break;
        case DType::kI32: ints.push_back(*t.typed<int32_t>()); break;
        case DType::kF32: floats.push_back(*t.typed<float>()); break;
        case DType::kU8: {  // bytes: length and a checksum
          uint64_t h = 0;
          for (int64_t k = 0; k < t.num_elements(); ++k) h = h * 131 + t.typed<uint8_t>()[k];
          ints.push_back(t.num_elements());
          ints.push_back(static_cast<int64_t>(h));
          break;
        }
        default: ADD_FAILURE() << "unexpected dtype";
      }
    }
    f.ints.push_back(ints);
    f.floats.push_back(floats);
  }
  return f;
}

// reader (shuffled) -> bytes checksum, label, a coin flip driven by a uniform draw, a normal.
PipelineSpec random_spec(const std::string& root, const std::string& last_batch = "partial") {
  PipelineSpec spec;
  auto files = spec.add("file_reader", {}, {{"file_root", root}, {"shuffle", true}, {"last_batch", last_batch}});
  auto sum = spec.add("checksum", {files[0]});
  auto p = spec.add("random_uniform", {}, {{"range", {0.2, 0.8}}});
  auto coin = spec.add("coin_flip", {}, {}, {{"probability", p[0]}});
  auto z = spec.add("random_normal");
  spec.set_outputs({sum[0], files[1], coin[0], z[0], files[0]});
  return spec;
}

std::vector<Flat> run_epochs(Pipeline& pipe, int epochs) {
  std::vector<Flat> all;
  for (int e = 0; e < epochs; ++e)
    for (const auto& out : pipe.epoch_batches()) all.push_back(flatten(out));
  return all;
}

class PipelineTest : public ::testing::Test {
 protected:
  void SetUp() override { HDL_REQUIRE_CORPUS(); }
};

TEST_F(PipelineTest, OutputsHaveTheDeclaredShapes) {
  TempImageFolder folder(3, 7);
  Pipeline pipe(random_spec(folder.root().string()), {.batch_size = 8, .num_threads = 2, .seed = 1}, test_registry());
  EXPECT_EQ(pipe.batches_per_epoch(), 3);
  auto out = pipe.next();
  ASSERT_TRUE(out);
  ASSERT_EQ(out->outputs.size(), 5u);
  EXPECT_TRUE(out->outputs[1].is_dense());
  EXPECT_EQ(out->outputs[1].as_tensor().shape(), (Shape{8}));
  EXPECT_EQ(out->outputs[1].dtype(), DType::kI64);
  EXPECT_FALSE(out->outputs[4].is_dense());  // encoded bytes are ragged
  for (int64_t i = 0; i < 8; ++i) {
    const int64_t idx = out->dataset_indices[i];
    EXPECT_EQ(*out->outputs[1].sample(i).typed<int64_t>(), pipe.dataset().label(idx));
    const auto bytes = testing::read_file(pipe.dataset().path(idx));
    ASSERT_EQ(out->outputs[4].sample(i).num_bytes(), bytes.size());
    EXPECT_EQ(std::memcmp(out->outputs[4].sample(i).data(), bytes.data(), bytes.size()), 0);
  }
  EXPECT_EQ(pipe.output_names()[0], "checksum_0.out");
}

TEST_F(PipelineTest, BitIdenticalAcrossRunsAndThreadCounts) {
  TempImageFolder folder(4, 13);
  std::vector<Flat> reference;
  for (int threads : {1, 2, 4}) {
    for (int prefetch : {1, 3}) {
      Pipeline pipe(random_spec(folder.root().string()),
                    {.batch_size = 5, .num_threads = threads, .prefetch_depth = prefetch, .seed = 99},
                    test_registry());
      auto got = run_epochs(pipe, 3);
      if (reference.empty()) {
        reference = got;
        ASSERT_EQ(reference.size(), 3u * 11u);
      } else {
        EXPECT_TRUE(got == reference) << threads << " threads, prefetch " << prefetch;
      }
    }
  }
  // Different epochs draw different numbers; another seed gives other numbers.
  EXPECT_NE(reference[0].floats[3], reference[11].floats[3]);
  Pipeline other(random_spec(folder.root().string()), {.batch_size = 5, .num_threads = 2, .seed = 100}, test_registry());
  EXPECT_FALSE(run_epochs(other, 1)[0] == reference[0]);
}

TEST_F(PipelineTest, EachEpochVisitsEverySampleOnce) {
  TempImageFolder folder(3, 10);
  Pipeline pipe(random_spec(folder.root().string()), {.batch_size = 7, .num_threads = 2, .seed = 5}, test_registry());
  std::vector<std::vector<int64_t>> orders;
  for (int e = 0; e < 3; ++e) {
    std::vector<int64_t> seen;
    for (const auto& out : pipe.epoch_batches())
      seen.insert(seen.end(), out.dataset_indices.begin(), out.dataset_indices.end());
    orders.push_back(seen);
    std::sort(seen.begin(), seen.end());
    ASSERT_EQ(seen.size(), 30u);
    for (int i = 0; i < 30; ++i) EXPECT_EQ(seen[i], i);
  }
  EXPECT_NE(orders[0], orders[1]);
  EXPECT_EQ(pipe.epoch(), 3);
}

TEST_F(PipelineTest, LastBatchPoliciesThroughThePipeline) {
  TempImageFolder folder(2, 5);  // 10 samples, batch 4
  struct Case { const char* policy; int batches; int64_t last_size; int64_t padding; };
  for (const Case& c : {Case{"drop", 2, 4, 0}, Case{"partial", 3, 2, 0}, Case{"pad", 3, 4, 2}, Case{"fill", 3, 4, 2}}) {
    Pipeline pipe(random_spec(folder.root().string(), c.policy), {.batch_size = 4, .num_threads = 2}, test_registry());
    std::vector<PipelineOutput> outs;
    for (const auto& o : pipe.epoch_batches()) outs.push_back(o);
    ASSERT_EQ(static_cast<int>(outs.size()), c.batches) << c.policy;
    EXPECT_EQ(outs.back().outputs[1].size(), c.last_size) << c.policy;
    EXPECT_EQ(outs.back().num_padding, c.padding) << c.policy;
  }
}

PipelineSpec slow_spec(const std::string& root, int64_t micros, std::vector<int64_t> fail = {}) {
  PipelineSpec spec;
  auto files = spec.add("file_reader", {}, {{"file_root", root}, {"shuffle", true}});
  auto sum = spec.add("checksum", {files[0]});
  auto slow = spec.add("slow", {sum[0]}, {{"micros", micros}});
  auto checked = spec.add("fail_if", {slow[0]}, {{"indices", ArgValue(std::move(fail))}});
  spec.set_outputs({checked[0], files[1]});
  return spec;
}

TEST_F(PipelineTest, EarlyStopUnderLoadShutsDownCleanly) {
  TempImageFolder folder(4, 25);
  const auto t0 = std::chrono::steady_clock::now();
  for (int round = 0; round < 60; ++round) {
    Pipeline pipe(slow_spec(folder.root().string(), 200),
                  {.batch_size = 8, .num_threads = 1 + round % 4, .prefetch_depth = 1 + round % 3, .seed = 3},
                  test_registry());
    for (int b = 0; b < round % 3; ++b) ASSERT_TRUE(pipe.next());
    if (round % 5 == 0) pipe.reset(2);  // drop in-flight work mid-epoch
    if (round % 5 == 0) ASSERT_TRUE(pipe.next());
    // destroyed here with batches in flight
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(seconds, 60.0);  // a hang would hit the ctest timeout long before
}

TEST_F(PipelineTest, WaitNextTimesOutOnASlowBatchAndThenSucceeds) {
  TempImageFolder folder(1, 4);
  // One thread, 4 samples of 300 ms each: the first batch (4 samples) takes 1.2 s.
  Pipeline pipe(slow_spec(folder.root().string(), 300000), {.batch_size = 4, .num_threads = 1, .seed = 1},
                test_registry());
  EXPECT_FALSE(pipe.wait_next(std::chrono::milliseconds(10)));
  EXPECT_TRUE(pipe.wait_next(std::chrono::seconds(60)));
  ASSERT_TRUE(pipe.next());  // ready: does not block
  EXPECT_TRUE(pipe.wait_next(std::chrono::seconds(0)));  // the end of the epoch is ready at once
  EXPECT_FALSE(pipe.next());
}

TEST_F(PipelineTest, BatchesOutliveThePipeline) {
  TempImageFolder folder(2, 8);
  std::optional<PipelineOutput> kept;
  {
    Pipeline pipe(random_spec(folder.root().string()), {.batch_size = 4, .num_threads = 2}, test_registry());
    kept = pipe.next();
  }
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->outputs[1].size(), 4);
  EXPECT_GE(*kept->outputs[1].sample(3).typed<int64_t>(), 0);
}

TEST_F(PipelineTest, SamplesGivenInMemoryReadLikeAFileList) {
  TempImageFolder folder(2, 5);
  const Dataset tree = Dataset::image_folder(folder.root().string(), default_image_extensions());
  std::vector<std::string> paths;
  std::vector<int64_t> labels;
  for (int64_t i = 0; i < tree.size(); ++i) {
    paths.push_back(std::string(tree.relative_path(i)));
    labels.push_back(100 + tree.label(i));
  }
  PipelineSpec mem;
  auto f = mem.add("file_reader", {}, {{"shuffle", true}}, {}, "reader");
  mem.nodes()[f.node].samples = std::make_shared<const Dataset>(Dataset::from_samples(paths, labels, tree.root()));
  auto sum = mem.add("checksum", {f[0]});
  mem.set_outputs({sum[0], f[1]});
  {
    std::ofstream list(folder.root() / "list.txt");
    for (size_t i = 0; i < paths.size(); ++i) list << paths[i] << " " << labels[i] << "\n";
  }
  PipelineSpec text;
  auto g = text.add("file_reader", {}, {{"file_list", (folder.root() / "list.txt").string()},
                                        {"file_root", tree.root()}, {"shuffle", true}}, {}, "reader");
  auto sum2 = text.add("checksum", {g[0]});
  text.set_outputs({sum2[0], g[1]});
  Pipeline a(mem, {.batch_size = 3, .num_threads = 2, .seed = 5}, test_registry());
  Pipeline b(text, {.batch_size = 3, .num_threads = 2, .seed = 5}, test_registry());
  const std::vector<Flat> got = run_epochs(a, 2), want = run_epochs(b, 2);
  EXPECT_EQ(got, want);
  ASSERT_FALSE(got.empty());
  EXPECT_GE(got[0].ints[1][0], 100);  // the labels given, not the folder's

  // Not JSON: to_json says why. Not with a file_list, nor on an operator that reads no files.
  try {
    (void)to_json(mem);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("file_reader \"reader\"): its samples were given in memory"),
              std::string::npos) << e.what();
  }
  text.nodes()[g.node].samples = mem.nodes()[f.node].samples;
  EXPECT_THROW(Pipeline(text, {.batch_size = 3}, test_registry()), ConfigError);
  mem.nodes()[sum.node].samples = mem.nodes()[f.node].samples;
  try {
    Pipeline p(mem, {.batch_size = 3}, test_registry());
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("checksum"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("are for readers of files only"), std::string::npos) << e.what();
  }
}

TEST_F(PipelineTest, UnreadableFileUnderRaise) {
  TempImageFolder folder(2, 6);
  folder.add_dangling("class_1", "img_zzz.JPEG");  // dataset index 12, the last sample
  PipelineSpec spec;
  auto files = spec.add("file_reader", {}, {{"file_root", folder.root().string()}}, {}, "reader");
  spec.set_outputs({files[1]});
  Pipeline pipe(spec, {.batch_size = 4, .num_threads = 2});
  int good = 0;
  std::string error;
  for (int i = 0; i < 4; ++i) {
    try {
      if (!pipe.next()) break;
      ++good;
    } catch (const DataError& e) {
      error = e.what();
      EXPECT_EQ(e.status().code(), StatusCode::kNotFound);
    }
  }
  EXPECT_EQ(good, 3);  // 13 samples: batches 0-2 fine, batch 3 holds the bad file
  EXPECT_NE(error.find("file_reader \"reader\": sample 12 \""), std::string::npos) << error;
  EXPECT_NE(error.find("class_1/img_zzz.JPEG\": No such file or directory"), std::string::npos) << error;
  EXPECT_FALSE(pipe.next());  // the epoch ends normally after the failed batch
  EXPECT_EQ(pipe.stats().failures, 1u);
}

TEST_F(PipelineTest, UnreadableFileUnderSkipIsReplacedAndCounted) {
  TempImageFolder folder(2, 6);
  folder.add_dangling("class_0", "img_000a.JPEG");  // dataset index 1
  PipelineSpec spec;
  auto files = spec.add("file_reader", {}, {{"file_root", folder.root().string()}});
  spec.set_outputs({files[1], files[0]});
  Pipeline pipe(spec, {.batch_size = 4, .num_threads = 2, .on_error = ErrorPolicy::kSkip, .max_failures = 10});
  std::vector<int64_t> indices;
  int64_t replaced = 0;
  for (int epoch = 0; epoch < 2; ++epoch)
    for (const auto& out : pipe.epoch_batches()) {
      indices.insert(indices.end(), out.dataset_indices.begin(), out.dataset_indices.end());
      replaced += out.num_replaced;
    }
  ASSERT_EQ(indices.size(), 26u);
  EXPECT_EQ(indices[1], 2);  // replaced by the next sample in epoch order
  EXPECT_EQ(std::count(indices.begin(), indices.end(), 1), 0);
  EXPECT_EQ(replaced, 2);
  const PipelineStats s = pipe.stats();
  EXPECT_EQ(s.failures, 2u);
  EXPECT_EQ(s.replaced, 2u);
  ASSERT_FALSE(s.recent_errors.empty());
  EXPECT_NE(s.recent_errors.back().find("img_000a.JPEG"), std::string::npos);
  EXPECT_GE(s.operators[0].failures, 2u);  // operator counters include prefetched batches
}

TEST_F(PipelineTest, SkipBudgetRunsOut) {
  TempImageFolder folder(2, 10);
  Pipeline pipe(slow_spec(folder.root().string(), 0, {0, 1, 2, 3}),
                {.batch_size = 5, .num_threads = 2, .on_error = ErrorPolicy::kSkip, .max_failures = 2},
                test_registry());
  try {
    for (int i = 0; i < 10 && pipe.next(); ++i) {}
    FAIL() << "expected the failure budget to run out";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("more than max_failures=2 samples failed"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("fail_if \"fail_if_0\""), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("injected failure"), std::string::npos) << e.what();
  }
}

TEST_F(PipelineTest, SaveStateMidEpochAndResumeIdentically) {
  TempImageFolder folder(3, 11);  // 33 samples, batch 4: 9 batches per epoch
  PipelineOptions opts{.batch_size = 4, .num_threads = 2, .prefetch_depth = 3, .seed = 17};
  Pipeline original(random_spec(folder.root().string()), opts, test_registry());
  run_epochs(original, 1);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(original.next());
  const std::string saved = original.state().to_string();
  std::vector<Flat> expected = run_epochs(original, 2);  // rest of epoch 1, then epoch 2

  for (int threads : {1, 4}) {
    PipelineOptions o = opts;
    o.num_threads = threads;
    Pipeline resumed(random_spec(folder.root().string()), o, test_registry());
    resumed.load_state(PipelineState::parse(saved));
    EXPECT_EQ(resumed.epoch(), 1);
    EXPECT_TRUE(run_epochs(resumed, 2) == expected) << threads << " threads";
  }
}

TEST_F(PipelineTest, StateFromAnotherPipelineIsRefused) {
  TempImageFolder folder(2, 6);
  Pipeline a(random_spec(folder.root().string()), {.batch_size = 4, .seed = 1}, test_registry());
  Pipeline b(random_spec(folder.root().string()), {.batch_size = 4, .seed = 2}, test_registry());
  EXPECT_THROW(b.load_state(a.state()), PipelineStateError);
  EXPECT_THROW(PipelineState::parse("garbage"), PipelineStateError);
  const PipelineState s = PipelineState::parse(a.state().to_string());
  EXPECT_EQ(s.fingerprint, a.state().fingerprint);
}

TEST_F(PipelineTest, StatisticsCountOperatorsAndSamples) {
  TempImageFolder folder(2, 8);
  Pipeline pipe(slow_spec(folder.root().string(), 100), {.batch_size = 4, .num_threads = 2}, test_registry());
  run_epochs(pipe, 1);
  const PipelineStats s = pipe.stats();
  EXPECT_EQ(s.batches, 4u);
  EXPECT_EQ(s.samples, 16u);
  ASSERT_EQ(s.operators.size(), 4u);
  EXPECT_EQ(s.operators[0].op, "file_reader");
  for (const auto& op : s.operators) EXPECT_GE(op.samples, 16u);
  EXPECT_GE(s.operators[2].seconds, 16 * 100e-6 * 0.9);  // the slow op's sleeps
  EXPECT_EQ(s.failures, 0u);
}

// stats() and state() may be called from any thread while the consumer iterates, fails
// samples and resets (the contract in pipeline.h); ThreadSanitizer runs this in CI.
TEST_F(PipelineTest, StatsAndStateFromOtherThreadsWhileIterating) {
  TempImageFolder folder(3, 10);
  folder.add_dangling("class_1", "img_zzz.JPEG");
  Pipeline pipe(slow_spec(folder.root().string(), 50),
                {.batch_size = 4, .num_threads = 3, .prefetch_depth = 2, .seed = 5,
                 .on_error = ErrorPolicy::kSkip, .max_failures = 1000},
                test_registry());
  std::atomic<bool> stop{false};
  std::atomic<int64_t> reads{0};
  std::vector<std::thread> watchers;
  for (int t = 0; t < 3; ++t)
    watchers.emplace_back([&] {
      while (!stop.load()) {
        const PipelineStats s = pipe.stats();
        const PipelineState st = pipe.state();
        EXPECT_LE(s.replaced, s.failures);
        EXPECT_GE(st.epoch, 0);
        reads.fetch_add(1);
      }
    });
  uint64_t samples = 0;
  for (int epoch = 0; epoch < 3; ++epoch) {
    while (auto b = pipe.next()) samples += static_cast<uint64_t>(b->dataset_indices.size());
    if (epoch == 1) pipe.reset(2);
  }
  stop = true;
  for (auto& w : watchers) w.join();
  const PipelineStats s = pipe.stats();
  EXPECT_EQ(s.samples, samples);
  EXPECT_EQ(samples, 3u * 31u);
  EXPECT_EQ(s.failures, 3u);  // the dangling file, once per epoch
  EXPECT_GT(reads.load(), 0);
}

TEST_F(PipelineTest, SteadyStateAllocatesNoBatchBuffers) {
  TempImageFolder folder(2, 32);
  // Dense outputs only: their blocks have fixed sizes, so after warm-up every batch buffer must
  // come from the pool. (Ragged outputs, e.g. encoded bytes, allocate per new size class.)
  PipelineSpec spec;
  auto files = spec.add("file_reader", {}, {{"file_root", folder.root().string()}, {"shuffle", true}});
  auto sum = spec.add("checksum", {files[0]});
  auto coin = spec.add("coin_flip");
  spec.set_outputs({sum[0], files[1], coin[0]});
  Pipeline pipe(spec, {.batch_size = 7, .num_threads = 2, .prefetch_depth = 2}, test_registry());
  run_epochs(pipe, 2);
  const uint64_t after_warmup = pipe.stats().pool.allocations;
  run_epochs(pipe, 3);
  const PipelineStats s = pipe.stats();
  EXPECT_EQ(s.pool.allocations, after_warmup);
  EXPECT_GE(s.pool.acquires, 3u * 10u * 3u);  // 3 epochs x 10 batches x 3 outputs, all reused
}

// PipelineOptions::epochs: no batch of an epoch past the run's end is prepared, and reading on
// past it still gives the same batches as a pipeline without the hint.
TEST_F(PipelineTest, RunLengthHintStopsPrefetchAtTheLastEpoch) {
  TempImageFolder folder(2, 8);  // 16 samples, 4 batches of 4
  const PipelineSpec spec = random_spec(folder.root().string());
  Pipeline hinted(spec, {.batch_size = 4, .num_threads = 2, .prefetch_depth = 4, .epochs = 1, .seed = 5}, test_registry());
  Pipeline plain(spec, {.batch_size = 4, .num_threads = 2, .prefetch_depth = 4, .seed = 5}, test_registry());
  EXPECT_EQ(run_epochs(hinted, 1), run_epochs(plain, 1));
  EXPECT_EQ(hinted.stats().operators[0].samples, 16u);  // the reader: epoch 0 only, nothing of epoch 1
  ASSERT_TRUE(plain.wait_next(std::chrono::seconds(30)));
  EXPECT_GE(plain.stats().operators[0].samples, 20u);  // without it, epoch 1 was prefetched
  EXPECT_EQ(run_epochs(hinted, 2), run_epochs(plain, 2));  // past the hint: on demand, same batches
  EXPECT_THROW(Pipeline(spec, {.epochs = -1}, test_registry()), ConfigError);
}

TEST_F(PipelineTest, BadOptionsAreConfigErrors) {
  TempImageFolder folder(2, 4);
  EXPECT_THROW(Pipeline(random_spec(folder.root().string()), {.batch_size = 0}, test_registry()), ConfigError);
  EXPECT_THROW(Pipeline(random_spec(folder.root().string()), {.prefetch_depth = 0}, test_registry()), ConfigError);
  EXPECT_THROW(Pipeline(random_spec(folder.root().string()), {.num_threads = -2}, test_registry()), ConfigError);  // -1: kAuto
  EXPECT_THROW(parse_error_policy("ignore"), ConfigError);
  EXPECT_EQ(parse_error_policy("skip"), ErrorPolicy::kSkip);
}

}  // namespace
}  // namespace hdl

namespace hdl {
namespace {

TEST_F(PipelineTest, ExternalEpochOrderIsFollowedAndNeverPrefetchedAhead) {
  TempImageFolder folder(2, 10);
  PipelineSpec spec;
  auto files = spec.add("file_reader", {}, {{"file_root", folder.root().string()}, {"last_batch", "drop"}});
  spec.set_outputs({files[1]});
  Pipeline pipe(spec, {.batch_size = 3, .num_threads = 2, .prefetch_depth = 4});
  const std::vector<int64_t> order0 = {19, 0, 7, 7, 3, 12, 5};  // a sampler may repeat indices
  pipe.set_epoch_order(0, order0);
  std::vector<int64_t> seen;
  for (const auto& out : pipe.epoch_batches()) seen.insert(seen.end(), out.dataset_indices.begin(), out.dataset_indices.end());
  EXPECT_EQ(seen, (std::vector<int64_t>{19, 0, 7, 7, 3, 12}));  // drop: 7 samples -> 2 batches
  EXPECT_THROW(pipe.next(), PipelineStateError);                // epoch 1 has no order yet
  pipe.set_epoch_order(1, {4, 5, 6});
  auto out = pipe.next();
  ASSERT_TRUE(out);
  EXPECT_EQ(out->epoch, 1);
  EXPECT_EQ(out->dataset_indices, (std::vector<int64_t>{4, 5, 6}));
  EXPECT_THROW(pipe.set_epoch_order(2, {20}), ConfigError);  // outside the dataset
}

TEST_F(PipelineTest, ExternalOrderResumesMidEpoch) {
  TempImageFolder folder(2, 10);
  PipelineSpec spec;
  auto files = spec.add("file_reader", {}, {{"file_root", folder.root().string()}});
  spec.set_outputs({files[1]});
  std::vector<int64_t> order(20);
  for (int i = 0; i < 20; ++i) order[i] = (i * 7) % 20;
  Pipeline a(spec, {.batch_size = 4, .num_threads = 2});
  a.set_epoch_order(0, order);
  ASSERT_TRUE(a.next());
  ASSERT_TRUE(a.next());
  const PipelineState state = a.state();
  std::vector<int64_t> rest;
  while (auto o = a.next()) rest.insert(rest.end(), o->dataset_indices.begin(), o->dataset_indices.end());

  Pipeline b(spec, {.batch_size = 4, .num_threads = 1});
  b.load_state(state);
  b.set_epoch_order(0, order);
  std::vector<int64_t> resumed;
  while (auto o = b.next()) resumed.insert(resumed.end(), o->dataset_indices.begin(), o->dataset_indices.end());
  EXPECT_EQ(resumed, rest);
  EXPECT_EQ(resumed.size(), 12u);
}

}  // namespace
}  // namespace hdl
