// num_threads / prefetch_depth = kAuto: the tuners' rules on given measurements, and a real
// pipeline under auto (the same batches as fixed settings, resume, stats, bad values).
#include "pipeline/detail/autotune.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "pipeline/pipeline.h"
#include "tests/pipeline/test_ops.h"
#include "tests/test_util.h"

namespace hdl {
namespace {

using detail::PrefetchTuner;
using detail::ThreadTuner;
using testing::TempImageFolder;
using testing::test_registry;
using Clock = ThreadTuner::Clock;
constexpr auto kWindow = ThreadTuner::kWindow;

// Drives a ThreadTuner through windows in which `rate_of(threads)` samples/s finish and the
// consumer waits `wait_share` of the time; returns the thread count after each window.
template <typename RateOf>
std::vector<int> climb(ThreadTuner& t, Clock::time_point t0, int windows, double wait_share, RateOf rate_of) {
  std::vector<int> seen;
  double samples = 0, waited = 0;
  Clock::time_point now = t0;
  for (int w = 0; w < windows; ++w) {
    now += kWindow;
    const double sec = std::chrono::duration<double>(kWindow).count();
    samples += rate_of(t.threads()) * sec;
    waited += wait_share * sec * 1e9;
    seen.push_back(t.observe(now, static_cast<uint64_t>(samples), static_cast<uint64_t>(waited)));
  }
  return seen;
}

TEST(ThreadTunerTest, GrowsWhileTheConsumerWaitsAndEachThreadPays) {
  const auto t0 = Clock::now();
  ThreadTuner t(1, 4, t0);
  const auto seen = climb(t, t0, 6, 0.5, [](int n) { return 100.0 * n; });  // linear speed-up
  EXPECT_EQ(seen.front(), 2);
  EXPECT_EQ(seen.back(), 4);
}

TEST(ThreadTunerTest, StepsBackWhenAThreadDoesNotRaiseTheRate) {
  const auto t0 = Clock::now();
  ThreadTuner t(1, 8, t0);
  // Two cores' worth: a third thread adds nothing. Window 1 tries 3, window 2 steps back; the
  // step is retried after 5 windows, then after 10, 20, ...: few windows run at 3.
  const auto seen = climb(t, t0, 36, 0.5, [](int n) { return 100.0 * std::min(n, 2); });
  EXPECT_EQ(seen[0], 2);
  EXPECT_EQ(seen[1], 3);
  for (size_t w = 2; w < 7; ++w) EXPECT_EQ(seen[w], 2) << "window " << w;
  EXPECT_LE(std::count(seen.begin(), seen.end(), 3), 4);
  EXPECT_EQ(seen.back(), 2);
}

TEST(ThreadTunerTest, StaysWhenTheConsumerDoesNotWait) {
  const auto t0 = Clock::now();
  ThreadTuner t(2, 8, t0);
  EXPECT_EQ(climb(t, t0, 5, 0.01, [](int n) { return 100.0 * n; }).back(), 2);
  ThreadTuner capped(1, 1, t0);  // never past the CPUs
  EXPECT_EQ(climb(capped, t0, 5, 0.9, [](int n) { return 100.0 * n; }).back(), 1);
}

TEST(PrefetchTunerTest, GrowsOnlyAfterTheBufferFilledThenRanDry) {
  PrefetchTuner producer_bound(2, size_t(1) << 30);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(producer_bound.observe(0, 1 << 20), 2);  // never full: stays

  PrefetchTuner bursty(1, size_t(1) << 30);
  EXPECT_EQ(bursty.observe(1, 1 << 20), 1);  // full once: the producer kept up
  EXPECT_EQ(bursty.observe(0, 1 << 20), 2);  // then ran dry: one deeper
  EXPECT_EQ(bursty.observe(0, 1 << 20), 2);  // not again until it has filled
  EXPECT_EQ(bursty.observe(1, 1 << 20), 2);
  EXPECT_EQ(bursty.observe(2, 1 << 20), 2);
  EXPECT_EQ(bursty.observe(0, 1 << 20), 3);
}

TEST(PrefetchTunerTest, StaysWithinTheMemoryBudget) {
  PrefetchTuner t(2, 300);  // bytes: batches of 100 allow 3 ahead
  for (int i = 0; i < 10; ++i) t.observe(i % 2 ? 0 : 16, 100);
  EXPECT_EQ(t.depth(), 3);
  EXPECT_EQ(t.observe(16, 200), 1);  // bigger batches: 300 / 200
  EXPECT_EQ(t.max_depth(1000), 1);   // never below one
}

// reader (shuffled) -> checksum, label, random draws, a sleep (so that threads pay even on a
// loaded machine: the work is waiting, not computing).
PipelineSpec spec_of(const std::string& root, int64_t micros) {
  PipelineSpec spec;
  auto files = spec.add("file_reader", {}, {{"file_root", root}, {"shuffle", true}});
  auto sum = spec.add("checksum", {files[0]});
  auto slow = spec.add("slow", {sum[0]}, {{"micros", micros}});
  auto z = spec.add("random_normal");
  auto p = spec.add("random_uniform", {}, {{"range", {0.2, 0.8}}});
  auto coin = spec.add("coin_flip", {}, {}, {{"probability", p[0]}});
  spec.set_outputs({slow[0], files[1], z[0], coin[0]});
  return spec;
}

// Every value and index of every batch, in order.
std::vector<std::vector<double>> run(Pipeline& pipe, int epochs) {
  std::vector<std::vector<double>> all;
  for (int e = 0; e < epochs; ++e)
    for (const auto& out : pipe.epoch_batches()) {
      std::vector<double> v(out.dataset_indices.begin(), out.dataset_indices.end());
      for (const Batch& b : out.outputs)
        for (int64_t i = 0; i < b.size(); ++i) {
          const Tensor t = b.sample(i);
          switch (t.dtype()) {
            case DType::kI64: v.push_back(static_cast<double>(*t.typed<int64_t>())); break;
            case DType::kI32: v.push_back(*t.typed<int32_t>()); break;
            case DType::kF32: v.push_back(*t.typed<float>()); break;
            default: ADD_FAILURE() << "unexpected dtype";
          }
        }
      all.push_back(std::move(v));
    }
  return all;
}

class AutotunePipelineTest : public ::testing::Test {
 protected:
  void SetUp() override { HDL_REQUIRE_CORPUS(); }
};

TEST_F(AutotunePipelineTest, SameBatchesAsFixedSettingsAndSaysWhatItChose) {
  TempImageFolder folder(4, 10);  // 40 samples, batch 4
  const PipelineOptions fixed{.batch_size = 4, .num_threads = 1, .prefetch_depth = 1, .seed = 7};
  Pipeline reference(spec_of(folder.root().string(), 0), fixed, test_registry());
  const auto expected = run(reference, 3);
  EXPECT_EQ(reference.stats().autotune_threads, 1);
  EXPECT_EQ(reference.stats().autotune_prefetch_depth, 1);

  PipelineOptions o = fixed;
  o.num_threads = o.prefetch_depth = PipelineOptions::kAuto;
  o.max_threads = 4;
  Pipeline tuned(spec_of(folder.root().string(), 15000), o, test_registry());  // 15 ms a sample
  EXPECT_TRUE(run(tuned, 3) == expected);
  const PipelineStats s = tuned.stats();
  const int cpus = std::min(available_cpus(), 4);
  // The consumer here only waits, and sleeping samples scale with threads: it grows to the cap.
  EXPECT_EQ(s.autotune_threads, cpus);
  EXPECT_GE(s.autotune_prefetch_depth, 1);
  EXPECT_LE(s.autotune_prefetch_depth, PrefetchTuner::kMaxDepth);
  EXPECT_EQ(tuned.options().num_threads, PipelineOptions::kAuto);  // the options stay as given
}

TEST_F(AutotunePipelineTest, ResumesAStateOfAFixedPipelineAndBack) {
  TempImageFolder folder(3, 11);
  const PipelineOptions fixed{.batch_size = 4, .num_threads = 2, .prefetch_depth = 3, .seed = 17};
  PipelineOptions tuned = fixed;
  tuned.num_threads = tuned.prefetch_depth = PipelineOptions::kAuto;
  for (const auto& [from, to] : {std::pair{fixed, tuned}, std::pair{tuned, fixed}}) {
    Pipeline original(spec_of(folder.root().string(), 0), from, test_registry());
    run(original, 1);
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(original.next());
    const std::string saved = original.state().to_string();
    const auto expected = run(original, 2);
    Pipeline resumed(spec_of(folder.root().string(), 0), to, test_registry());
    resumed.load_state(PipelineState::parse(saved));
    EXPECT_TRUE(run(resumed, 2) == expected);
  }
}

TEST_F(AutotunePipelineTest, BadValuesNameTheOption) {
  TempImageFolder folder(2, 4);
  auto message = [&](PipelineOptions o) -> std::string {
    try {
      Pipeline(spec_of(folder.root().string(), 0), o, test_registry());
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(message({.num_threads = -2}).find("num_threads"), std::string::npos);
  EXPECT_NE(message({.prefetch_depth = -2}).find("prefetch_depth"), std::string::npos);
  EXPECT_NE(message({.prefetch_depth = 0}).find("prefetch_depth"), std::string::npos);
  EXPECT_NE(message({.num_threads = PipelineOptions::kAuto, .max_threads = -1}).find("max_threads"), std::string::npos);
  EXPECT_GE(available_cpus(), 1);
}

}  // namespace
}  // namespace hdl
