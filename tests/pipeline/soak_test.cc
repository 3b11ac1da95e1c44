// Soak: many epochs of a resnet-train-like pipeline (file_reader with shuffle -> image_decoder
// with its fused RandomResizedCrop 224 -> crop_mirror_normalize to float32, a coin flip for
// the mirror), interrupted at random: the Pipeline is destroyed mid-epoch (work in flight),
// and a new one, with another thread count (1..3), resumes from the last checkpoint (state()
// taken every few batches and at epoch ends; the batches after it are lost with the "crashed"
// job and delivered again). Checks:
//   - every epoch's committed batches deliver every sample exactly once, in the order an
//     uninterrupted run uses (dataset_indices per epoch == the reference order);
//   - a batch delivered again after a resume is bit-identical (pixels, labels, indices);
//   - labels are the dataset's;
//   - RSS (VmRSS, after malloc_trim) at epoch ends stays flat after warm-up epochs. To make
//     it a deterministic measure, the test waits at each epoch end until the prefetched
//     batches of the next epoch are finished (the operators' sample counters say so), so no
//     half-written batch buffer is measured; without that wait the reading swings by ~35 MiB
//     with how far the prefetch got;
//   - no leak: the ASan build's LeakSanitizer runs over this test.
// Size: a 96-image subset of corpus imagenet/train (symlinks, TempImageFolder), batch 16, 20
// epochs; HDL_SOAK_EPOCHS overrides the epoch count (6 by default under ASan/TSan).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "pipeline/pipeline.h"
#include "tests/pipeline/test_ops.h"
#include "tests/test_util.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HDL_SOAK_SANITIZED 1
#else
#define HDL_SOAK_SANITIZED 0
#endif

namespace hdl {
namespace {

using testing::TempImageFolder;

constexpr int64_t kBatch = 16;
constexpr int kWarmupEpochs = 4;
constexpr int64_t kCheckpointEvery = 2;  // batches
// A leak of one batch buffer (16 x 3 x 224 x 224 float32 = 9.6 MB) per epoch, or of every
// file's bytes (about 10 MB per epoch here), exceeds this within the 16 epochs after warm-up.
constexpr double kRssBoundMiB = 32;
constexpr int kPrefetch = 2;

int soak_epochs() {
  if (const char* e = std::getenv("HDL_SOAK_EPOCHS"); e && *e) return std::max(1, std::atoi(e));
  return HDL_SOAK_SANITIZED ? 6 : 20;
}

// Resident set size in MiB, after handing free heap pages back to the OS (so freed and not
// yet reused memory does not count as growth).
double rss_mib() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
  std::ifstream f("/proc/self/status");
  std::string key;
  while (f >> key) {
    if (key == "VmRSS:") {
      double kb = 0;
      f >> kb;
      return kb / 1024;
    }
    std::getline(f, key);
  }
  return 0;
}

PipelineSpec reader_spec(const std::string& root) {
  PipelineSpec spec;
  auto files = spec.add("file_reader", {}, {{"file_root", root}, {"shuffle", true}}, {}, "reader");
  spec.set_outputs({files[1]});
  return spec;
}

PipelineSpec resnet_train_spec(const std::string& root) {
  PipelineSpec spec;
  auto files = spec.add("file_reader", {}, {{"file_root", root}, {"shuffle", true}}, {}, "reader");
  auto images = spec.add("image_decoder", {files[0]},
                         {{"output_type", "rgb"}, {"random_crop", "resized"}, {"resize", std::vector<int64_t>{224, 224}}},
                         {}, "decode");
  auto coin = spec.add("coin_flip", {}, {{"probability", 0.5}}, {}, "flip_coin");
  auto out = spec.add("crop_mirror_normalize", {images[0]},
                      {{"mean", std::vector<double>{0.485 * 255, 0.456 * 255, 0.406 * 255}},
                       {"std", std::vector<double>{0.229 * 255, 0.224 * 255, 0.225 * 255}},
                       {"dtype", "float32"},
                       {"output_layout", "CHW"}},
                      {{"mirror", coin[0]}}, "normalize");
  spec.set_outputs({out[0], files[1]});
  return spec;
}

// Waits until the last operator has run on every sample the pipeline has handed out plus the
// prefetch_depth full batches it schedules ahead: then no worker is touching memory.
void wait_for_prefetch(const Pipeline& pipe) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  for (;;) {
    const PipelineStats st = pipe.stats();
    if (st.operators.back().samples >= st.samples + kPrefetch * kBatch) return;
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "prefetch never finished";
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

uint64_t hash_batch(const PipelineOutput& out) {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (int64_t i : out.dataset_indices) h = (h ^ static_cast<uint64_t>(i)) * 0x100000001b3ull;
  for (const Batch& b : out.outputs)
    for (int64_t s = 0; s < b.size(); ++s) {
      Tensor t = b.sample(s);
      const auto* p = static_cast<const unsigned char*>(t.data());
      const size_t n = t.num_bytes();
      for (size_t k = 0; k + 8 <= n; k += 8) {
        uint64_t w;
        std::memcpy(&w, p + k, 8);
        h = (h ^ w) * 0x100000001b3ull;
      }
      for (size_t k = n / 8 * 8; k < n; ++k) h = (h ^ p[k]) * 0x100000001b3ull;
    }
  return h;
}

TEST(SoakTest, InterruptedResumedEpochsDeliverEverySampleOnceWithFlatMemory) {
  HDL_REQUIRE_CORPUS();
  const int epochs = soak_epochs();
  TempImageFolder folder(8, 12);  // 96 images: 6 batches of 16
  const std::string root = folder.root().string();
  const uint64_t seed = 2026;

  // The uninterrupted order: a reader-only pipeline with the same reader, batch size and seed
  // walks the same epoch orders (decoding does not change the order), at a fraction of the cost.
  std::vector<std::vector<int64_t>> ref;
  {
    Pipeline pipe(reader_spec(root), {.batch_size = kBatch, .num_threads = 1, .seed = seed});
    for (int e = 0; e < epochs; ++e) {
      ref.emplace_back();
      for (const PipelineOutput& out : pipe.epoch_batches())
        ref.back().insert(ref.back().end(), out.dataset_indices.begin(), out.dataset_indices.end());
    }
  }
  const int64_t n = static_cast<int64_t>(ref[0].size());
  ASSERT_EQ(n, 96);
  // The order really changes between epochs (else "the same order" would prove little).
  ASSERT_NE(ref[0], ref[1]);

  std::mt19937_64 rng(seed);
  const PipelineSpec spec = resnet_train_spec(root);
  std::optional<PipelineState> checkpoint;
  std::vector<std::vector<int64_t>> committed(epochs);  // per epoch, the indices handed out
  std::vector<int64_t> uncommitted;
  std::map<std::pair<int64_t, int64_t>, uint64_t> seen;  // (epoch, batch) -> hash
  std::vector<double> rss;                               // at each epoch end
  int completed = 0, stops = 0, redelivered = 0;
  while (completed < epochs) {
    const int threads = 1 + static_cast<int>(rng() % 3);
    const int64_t stop_after = 1 + static_cast<int64_t>(rng() % 10);  // batches this run delivers
    Pipeline pipe(spec, {.batch_size = kBatch, .num_threads = threads, .prefetch_depth = kPrefetch, .seed = seed});
    if (checkpoint) pipe.load_state(*checkpoint);
    const Dataset& ds = pipe.dataset();
    for (int64_t delivered = 0;;) {
      if (delivered == stop_after) {  // "crash": destroy the pipeline with work in flight
        ++stops;
        uncommitted.clear();
        break;
      }
      const int64_t e = pipe.epoch();
      std::optional<PipelineOutput> out = pipe.next();
      if (!out) {
        committed[e].insert(committed[e].end(), uncommitted.begin(), uncommitted.end());
        uncommitted.clear();
        EXPECT_EQ(committed[e], ref[e]) << "epoch " << e;
        wait_for_prefetch(pipe);
        rss.push_back(rss_mib());
        checkpoint = pipe.state();
        if (++completed == epochs) break;
        continue;
      }
      ++delivered;
      ASSERT_EQ(out->epoch, e);
      ASSERT_EQ(out->batch_index * kBatch, static_cast<int64_t>(committed[e].size() + uncommitted.size()))
          << "epoch " << e << ": a batch was skipped or repeated";
      const Tensor& labels = out->outputs[1].as_tensor();
      for (size_t s = 0; s < out->dataset_indices.size(); ++s)
        ASSERT_EQ(labels.typed<int64_t>()[s], ds.label(out->dataset_indices[s]));
      const uint64_t h = hash_batch(*out);
      auto [it, fresh] = seen.emplace(std::pair{out->epoch, out->batch_index}, h);
      if (!fresh) {
        ++redelivered;
        EXPECT_EQ(it->second, h) << "epoch " << e << " batch " << out->batch_index << " differs after a resume";
      }
      uncommitted.insert(uncommitted.end(), out->dataset_indices.begin(), out->dataset_indices.end());
      if ((out->batch_index + 1) % kCheckpointEvery == 0) {
        committed[e].insert(committed[e].end(), uncommitted.begin(), uncommitted.end());
        uncommitted.clear();
        checkpoint = pipe.state();
      }
    }
  }
  EXPECT_GE(stops, epochs / 2) << "too few interruptions to call this a soak";
  EXPECT_GT(redelivered, 0);
  std::string trace;
  for (double r : rss) trace += std::to_string(static_cast<int>(r)) + " ";
  std::cout << "soak: " << epochs << " epochs, " << stops << " interruptions, " << redelivered
            << " batches delivered again after a resume; RSS MiB at epoch ends: " << trace << "\n";
#if HDL_SOAK_SANITIZED
  std::cout << "soak: RSS not checked under a sanitizer (its quarantine and shadow memory grow); "
               "LeakSanitizer checks leaks\n";
#else
  if (epochs > kWarmupEpochs + 2) {
    double peak = 0;
    for (size_t e = kWarmupEpochs; e < rss.size(); ++e) peak = std::max(peak, rss[e]);
    EXPECT_LE(peak - rss[kWarmupEpochs - 1], kRssBoundMiB) << "RSS grew after warm-up: " << trace;
  }
#endif
}

}  // namespace
}  // namespace hdl
