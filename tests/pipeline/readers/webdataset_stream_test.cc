// webdataset_reader in streaming mode: .tar.gz shards made by GNU tar + gzip at test time, read
// front to back: every sample once with its bytes and label (in shard then archive order
// without shuffle), the same order for any thread count, an exact split across ranks with
// equal batches (also with fewer shards than ranks), the shuffle buffer's bound in the stats,
// a truncated .tar.gz named (shard, key, byte) under raise and skipped under skip, resume by
// replay, and a nominal epoch length.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "media/file_system.h"
#include "pipeline/errors.h"
#include "pipeline/readers/shard_stream.h"
#include "pipeline/pipeline.h"
#include "tests/pipeline/readers/tar_test_util.h"

namespace hdl {
namespace {

using testing::TarDir;
using testing::webdataset_spec;

// Bytes that do not compress: what a JPEG is to gzip.
std::string noise(uint32_t seed, size_t n) {
  std::string out(n, '\0');
  for (char& c : out) seed = seed * 1664525u + 1013904223u, c = char(seed >> 24);
  return out;
}

std::string payload(int64_t k, int64_t i) {
  return "bytes of s" + std::to_string(k) + "_" + std::to_string(i) + noise(uint32_t(100 * k + i), size_t(i) * 301 + 40000);
}

// Shard k ("shard-00k.tar.gz", gzip'ed GNU tar) holds samples "s<k>_<i>" (i < counts[k]): a .jpg
// (payload(k, i)) and a .cls with label 100 * k + i.
void make_gz_shards(const TarDir& dir, const std::vector<int>& counts) {
  for (size_t k = 0; k < counts.size(); ++k) {
    std::string members;
    for (int i = 0; i < counts[k]; ++i) {
      const std::string key = "s" + std::to_string(k) + "_" + std::to_string(i);
      dir.write("src" + std::to_string(k) + "/" + key + ".jpg", payload(int64_t(k), i));
      dir.write("src" + std::to_string(k) + "/" + key + ".cls", std::to_string(100 * k + i) + "\n");
      members += " " + key + ".cls " + key + ".jpg";
    }
    const std::string name = "shard-00" + std::to_string(k) + ".tar";
    ASSERT_TRUE(dir.sh("tar --format=gnu -cf " + name + " -C src" + std::to_string(k) + members + " && gzip -nf " + name));
  }
}

struct Seen {
  std::vector<std::string> bytes;
  std::vector<int64_t> labels, indices;
};

Seen read_batches(Pipeline& pipe, int64_t max_batches = -1) {
  Seen s;
  int64_t b = 0;
  while (max_batches < 0 || b < max_batches) {
    auto out = pipe.next();
    if (!out) break;
    ++b;
    for (int64_t i = 0; i < out->outputs[0].size(); ++i) {
      const Tensor t = out->outputs[0].sample(i);
      s.bytes.emplace_back(static_cast<const char*>(t.data()), static_cast<size_t>(t.num_elements()));
      s.labels.push_back(*out->outputs[1].sample(i).typed<int64_t>());
      s.indices.push_back(*out->outputs[2].sample(i).typed<int64_t>());
    }
  }
  return s;
}

int64_t counter(const Pipeline& pipe, const std::string& name) {
  for (const auto& op : pipe.stats().operators)
    for (const auto& [k, v] : op.counters)
      if (k == name) return v;
  ADD_FAILURE() << "no counter " << name;
  return -1;
}

TEST(WebDatasetStreamTest, GzShardsGiveEverySampleOnceInArchiveOrder) {
  TarDir dir("wds_stream_once");
  make_gz_shards(dir, {5, 1, 9});
  Pipeline pipe(webdataset_spec(dir.dir().string(), "shard-{000..002}.tar.gz"), {.batch_size = 4, .num_threads = 3});
  ASSERT_EQ(pipe.num_samples(), 15);
  const Seen s = read_batches(pipe);
  std::vector<int64_t> want;
  for (int64_t k : {0, 1, 2})
    for (int64_t i = 0; i < std::vector<int64_t>{5, 1, 9}[size_t(k)]; ++i) want.push_back(100 * k + i);
  EXPECT_EQ(s.labels, want);  // no shuffle: shard order, then archive order
  EXPECT_EQ(s.indices, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}));
  for (size_t j = 0; j < s.bytes.size(); ++j) {
    const int64_t k = s.labels[j] / 100, i = s.labels[j] % 100;
    EXPECT_EQ(s.bytes[j], payload(k, i));
  }
  // Plain tar streamed (mode "streaming") reads the same.
  ASSERT_TRUE(dir.sh("gunzip -k shard-002.tar.gz"));
  Pipeline plain(webdataset_spec(dir.dir().string(), "shard-002.tar", {{"mode", std::string("streaming")}}),
                 {.batch_size = 4, .num_threads = 2});
  EXPECT_EQ(read_batches(plain).labels, std::vector<int64_t>(want.begin() + 6, want.end()));
}

TEST(WebDatasetStreamTest, ShuffleIsTheSameForAnyThreadCountAndBounded) {
  TarDir dir("wds_stream_shuffle");
  make_gz_shards(dir, {7, 3, 12, 1});
  auto run = [&](int threads) {
    Pipeline pipe(webdataset_spec(dir.dir().string(), "shard-{000..003}.tar.gz",
                              {{"shuffle", true}, {"shuffle_buffer", int64_t{4}}, {"seed", int64_t{3}}}),
                  {.batch_size = 5, .num_threads = threads, .prefetch_depth = 3});
    std::vector<std::vector<int64_t>> out;
    for (int e = 0; e < 2; ++e) out.push_back(read_batches(pipe).labels);
    EXPECT_EQ(counter(pipe, "webdataset_stream_buffer_peak"), 4);  // the buffer's bound, reached
    EXPECT_EQ(counter(pipe, "webdataset_stream_replays"), 0);
    EXPECT_LE(counter(pipe, "webdataset_stream_ready_peak"), 3 * 5);  // the positions in flight
    return out;
  };
  const auto one = run(1), four = run(4);
  EXPECT_EQ(one, four);
  EXPECT_NE(one[0], one[1]);  // a new order each epoch
  for (const auto& epoch : one) {
    EXPECT_EQ(epoch.size(), 23u);
    EXPECT_EQ(std::set<int64_t>(epoch.begin(), epoch.end()).size(), 23u);
  }
}

TEST(WebDatasetStreamTest, RanksSplitEverySampleExactlyOnceWithEqualBatches) {
  TarDir dir("wds_stream_ranks");
  make_gz_shards(dir, {11, 2, 1});  // uneven shards, fewer shards than 4 ranks
  for (int world : {2, 4}) {
    std::multiset<int64_t> padded;
    std::multiset<int64_t> exact;
    std::set<int64_t> batches;
    for (int rank = 0; rank < world; ++rank) {
      PipelineSpec::Args args = {{"shuffle", true}, {"shuffle_buffer", int64_t{3}}, {"shard_id", int64_t{rank}},
                                 {"num_shards", int64_t{world}}, {"seed", int64_t{9}}};
      Pipeline unpadded(webdataset_spec(dir.dir().string(), "shard-{000..002}.tar.gz", args),
                        {.batch_size = 1, .num_threads = 2});
      for (int64_t l : read_batches(unpadded).labels) exact.insert(l);
      args.push_back({"pad_shards", true});
      Pipeline pipe(webdataset_spec(dir.dir().string(), "shard-{000..002}.tar.gz", args), {.batch_size = 2, .num_threads = 2});
      const Seen s = read_batches(pipe);
      batches.insert(static_cast<int64_t>(s.labels.size()));
      padded.insert(s.labels.begin(), s.labels.end());
    }
    EXPECT_EQ(exact.size(), 14u) << "world " << world;  // each sample exactly once
    EXPECT_EQ(std::set<int64_t>(exact.begin(), exact.end()).size(), 14u) << "world " << world;
    EXPECT_EQ(batches.size(), 1u) << "ranks got different sample counts, world " << world;
    EXPECT_EQ(std::set<int64_t>(padded.begin(), padded.end()).size(), 14u);
    EXPECT_EQ(padded.size(), size_t((14 + world - 1) / world * world));
  }
}

TEST(WebDatasetStreamTest, TruncatedGzIsNamedUnderRaiseAndSkippedUnderSkip) {
  TarDir dir("wds_stream_bad");
  make_gz_shards(dir, {4, 6});
  const std::string whole = dir.read("shard-001.tar.gz");
  dir.write("shard-001.tar.gz", whole.substr(0, whole.size() * 2 / 3));
  {
    Pipeline pipe(webdataset_spec(dir.dir().string(), "shard-{000..001}.tar.gz"), {.batch_size = 2, .num_threads = 2});
    std::vector<std::string> errors;
    int64_t delivered = 0;
    for (int b = 0; b < 8; ++b) {
      try {
        auto out = pipe.next();
        if (!out) break;
        delivered += out->outputs[0].size();
      } catch (const DataError& e) {
        errors.push_back(e.what());
      }
    }
    ASSERT_GE(errors.size(), 1u);
    EXPECT_NE(errors[0].find("tar shard \"" + dir.path("shard-001.tar.gz").string() + "\""), std::string::npos) << errors[0];
    EXPECT_NE(errors[0].find("byte "), std::string::npos) << errors[0];
    EXPECT_NE(errors[0].find("key \"s1_"), std::string::npos) << errors[0];
    EXPECT_GE(delivered, 4);
  }
  {  // skip: shard 0 whole, shard 1 up to the damage, the slot of the error refilled
    PipelineOptions o{.batch_size = 3, .num_threads = 2};
    o.on_error = ErrorPolicy::kSkip;
    Pipeline pipe(webdataset_spec(dir.dir().string(), "shard-{000..001}.tar.gz"), o);
    const Seen s = read_batches(pipe);
    const std::set<int64_t> got(s.labels.begin(), s.labels.end());
    for (int64_t l : {0, 1, 2, 3, 100}) EXPECT_TRUE(got.count(l)) << l;
    EXPECT_EQ(s.labels.size(), size_t(pipe.num_samples()));
    EXPECT_GE(pipe.stats().failures, 1u);
  }
}

TEST(WebDatasetStreamTest, ResumeMidEpochGivesTheRemainingBatches) {
  TarDir dir("wds_stream_resume");
  make_gz_shards(dir, {9, 8, 7});
  const auto spec = webdataset_spec(dir.dir().string(), "shard-{000..002}.tar.gz",
                                {{"shuffle", true}, {"shuffle_buffer", int64_t{5}}, {"seed", int64_t{1}}});
  const PipelineOptions o{.batch_size = 4, .num_threads = 3, .seed = 5};
  Pipeline whole(spec, o);
  (void)read_batches(whole);
  const Seen epoch1 = read_batches(whole);
  Pipeline first(spec, o);
  (void)read_batches(first);
  (void)read_batches(first, 2);
  const PipelineState state = first.state();
  Pipeline resumed(spec, o);
  resumed.load_state(state);
  const Seen rest = read_batches(resumed);
  EXPECT_EQ(rest.labels, std::vector<int64_t>(epoch1.labels.begin() + 8, epoch1.labels.end()));
  EXPECT_EQ(counter(resumed, "webdataset_stream_ready_peak") <= 3 * 4, true);  // the skipped positions not kept
}

TEST(WebDatasetStreamTest, NominalEpochStartsWithoutCountingAndSplitsShards) {
  TarDir dir("wds_stream_nominal");
  make_gz_shards(dir, {3, 3, 3, 3});
  for (int rank = 0; rank < 2; ++rank) {
    Pipeline pipe(webdataset_spec(dir.dir().string(), "shard-{000..003}.tar.gz",
                              {{"epoch_samples", int64_t{10}}, {"shard_id", int64_t{rank}}, {"num_shards", int64_t{2}}}),
                  {.batch_size = 5, .num_threads = 2});
    EXPECT_EQ(pipe.num_samples(), 10);
    const Seen s = read_batches(pipe);
    ASSERT_EQ(s.labels.size(), 10u);
    // Whole shards rank, rank + 2 (6 samples), read again from the start for the other 4.
    const int64_t a = 100 * rank, b = 100 * (rank + 2);
    EXPECT_EQ(s.labels, (std::vector<int64_t>{a, a + 1, a + 2, b, b + 1, b + 2, a, a + 1, a + 2, b}));
    EXPECT_EQ(s.indices[0], -1);  // no counts: no global index
  }
}

// Bounded memory (TarLimits, issue 34): a .tar.gz of a few MB can hold members of 1000 MiB
// each (zeros compress); a sample whose fields would hold more than max_sample_bytes fails its
// shard before the member that passes the limit is read, naming shard, key and the limit; and
// the shuffle buffer holds at most max_buffered_bytes (one sample past it at most), every
// sample still once.
TEST(WebDatasetStreamTest, ACompressedShardCannotMakeAStreamHoldMoreThanItsBudget) {
  TarDir dir("wds_stream_budget");
  ASSERT_TRUE(dir.sh("mkdir -p big && for e in a b c d e f; do head -c 5242880 /dev/zero > big/k.$e; done && "
                     "tar --format=gnu -cf big.tar -C big k.a k.b k.c k.d k.e k.f && gzip -nf big.tar"));
  EXPECT_LT(std::filesystem::file_size(dir.path("big.tar.gz")), 200000u) << "30 MiB of zeros, compressed";
  TarLimits limits;
  limits.max_sample_bytes = 12 << 20;
  auto file = posix_file_system()->open(dir.path("big.tar.gz").string());
  ASSERT_TRUE(file.is_ok());
  SampleStream stream(open_member_stream(file_byte_source(**file), "big.tar.gz", ShardCompression::kCompressed, limits),
                      "big.tar.gz");
  StreamedSample s;
  auto r = stream.next(&s);
  ASSERT_FALSE(r.is_ok()) << "a sample of 30 MiB passed a 12 MiB limit";
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  for (const char* part : {"tar shard \"big.tar.gz\"", "key \"k\"", "k.c", "TarLimits::max_sample_bytes"})
    EXPECT_NE(r.status().message().find(part), std::string::npos) << r.status().message() << " / " << part;

  make_gz_shards(dir, {20, 20});  // payloads of 40-46 KB
  StreamConfig config;
  config.shards = {dir.path("shard-000.tar.gz").string(), dir.path("shard-001.tar.gz").string()};
  config.shuffle = true, config.shuffle_buffer = 30, config.seed = 4;
  config.limits.max_buffered_bytes = 200000;
  EpochStream epoch(config, *posix_file_system(), 0);
  std::set<std::string> keys;
  for (int i = 0; i < 40; ++i) {
    StreamItem it = epoch.next();
    ASSERT_TRUE(it.error.is_ok()) << it.error.message();
    keys.insert(it.sample.key);
  }
  EXPECT_EQ(keys.size(), 40u) << "every sample once";
  EXPECT_LE(epoch.buffer_bytes_peak(), 200000 + 50000);
  EXPECT_LT(epoch.buffer_peak(), 30) << "the byte budget, not B, bounded the buffer";
}

}  // namespace
}  // namespace hdl
