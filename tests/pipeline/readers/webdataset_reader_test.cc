// webdataset_reader: shards made by GNU tar at test time, read through pipelines: every sample
// exactly once with its bytes and label, a global shuffle that is the same for any thread
// count, an exact split across ranks with equal batches, the index sidecar reused, and bad
// shards or samples named (shard and key) without losing the others.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "pipeline/errors.h"
#include "pipeline/pipeline.h"
#include "tests/pipeline/readers/tar_test_util.h"

namespace hdl {
namespace {

using testing::TarDir;
using testing::webdataset_spec;

// Shard k holds samples "s<k>_<i>" (i < counts[k]) with a .jpg (its bytes name the sample) and
// a .cls (label = 100 * k + i).
void make_shards(const TarDir& dir, const std::vector<int>& counts) {
  for (size_t k = 0; k < counts.size(); ++k) {
    std::string members;
    for (int i = 0; i < counts[k]; ++i) {
      const std::string key = "s" + std::to_string(k) + "_" + std::to_string(i);
      dir.write("src" + std::to_string(k) + "/" + key + ".jpg", "bytes of " + key + std::string(size_t(i) * 37, 'x'));
      dir.write("src" + std::to_string(k) + "/" + key + ".cls", std::to_string(100 * k + i) + "\n");
      members += " " + key + ".cls " + key + ".jpg";
    }
    char name[32];
    std::snprintf(name, sizeof name, "shard-%03zu.tar", k);
    ASSERT_TRUE(dir.sh("tar --format=gnu -cf " + std::string(name) + " -C src" + std::to_string(k) + members));
  }
}

struct Seen {
  std::vector<std::string> bytes;  // in delivery order
  std::vector<int64_t> labels;
};

Seen read_epoch(Pipeline& pipe) {
  Seen s;
  for (const auto& out : pipe.epoch_batches())
    for (int64_t i = 0; i < out.outputs[0].size(); ++i) {
      const Tensor b = out.outputs[0].sample(i);
      s.bytes.emplace_back(static_cast<const char*>(b.data()), static_cast<size_t>(b.num_elements()));
      s.labels.push_back(*out.outputs[1].sample(i).typed<int64_t>());
    }
  return s;
}

TEST(WebDatasetReaderTest, EverySampleOnceWithItsBytesAndLabel) {
  TarDir dir("wds_reader_once");
  make_shards(dir, {5, 1, 9});
  Pipeline pipe(webdataset_spec(dir.dir().string(), "shard-{000..002}.tar"), {.batch_size = 4, .num_threads = 2});
  ASSERT_EQ(pipe.num_samples(), 15);
  const Seen s = read_epoch(pipe);
  ASSERT_EQ(s.bytes.size(), 15u);
  std::map<std::string, int64_t> got;
  for (size_t j = 0; j < s.bytes.size(); ++j) got[s.bytes[j].substr(0, s.bytes[j].find('x'))] = s.labels[j];
  const std::vector<int> counts = {5, 1, 9};
  for (size_t k = 0; k < counts.size(); ++k)
    for (int i = 0; i < counts[k]; ++i) {
      const std::string key = "s" + std::to_string(k) + "_" + std::to_string(i);
      ASSERT_TRUE(got.count("bytes of " + key)) << key;
      EXPECT_EQ(got["bytes of " + key], int64_t(100 * k + i)) << key;
    }
  // The bytes are the file's, whole.
  EXPECT_EQ(s.bytes[3], dir.read("src0/s0_3.jpg"));
  // The index sidecars were written and are reused.
  EXPECT_TRUE(std::filesystem::exists(dir.path("shard-000.tar.idx")));
  EXPECT_EQ(pipe.dataset().size(), 15);
}

TEST(WebDatasetReaderTest, ShuffleIsTheSameForAnyThreadCountAndNewEachEpoch) {
  TarDir dir("wds_reader_shuffle");
  make_shards(dir, {7, 3, 12, 1});
  auto order = [&](int threads, int epochs) {
    Pipeline pipe(webdataset_spec(dir.dir().string(), "shard-{000..003}.tar", {{"shuffle", true}}),
                  {.batch_size = 5, .num_threads = threads, .seed = 42});
    std::vector<std::vector<int64_t>> out;
    for (int e = 0; e < epochs; ++e) out.push_back(read_epoch(pipe).labels);
    return out;
  };
  const auto one = order(1, 2), three = order(3, 2);
  EXPECT_EQ(one, three);
  EXPECT_NE(one[0], one[1]);
  std::vector<int64_t> sorted = one[0];
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::set<int64_t>(sorted.begin(), sorted.end()).size(), 23u);
}

TEST(WebDatasetReaderTest, RanksSplitEverySampleExactlyOnceWithEqualBatches) {
  TarDir dir("wds_reader_ranks");
  make_shards(dir, {11, 2, 0 + 1});  // uneven shards, fewer shards than 4 ranks
  for (int world : {2, 4}) {
    std::multiset<int64_t> all;
    std::set<int64_t> batches;
    for (int rank = 0; rank < world; ++rank) {
      Pipeline pipe(webdataset_spec(dir.dir().string(), "shard-{000..002}.tar",
                                {{"shuffle", true}, {"shard_id", int64_t{rank}}, {"num_shards", int64_t{world}},
                                 {"pad_shards", true}, {"last_batch", std::string("drop")}}),
                    {.batch_size = 1, .num_threads = 2, .seed = 7});
      const Seen s = read_epoch(pipe);
      batches.insert(static_cast<int64_t>(s.labels.size()));
      all.insert(s.labels.begin(), s.labels.end());
    }
    EXPECT_EQ(batches.size(), 1u) << "ranks got different batch counts, world " << world;
    std::set<int64_t> distinct(all.begin(), all.end());
    EXPECT_EQ(distinct.size(), 14u) << "world " << world;  // every sample (padding repeats at most a few)
    EXPECT_LE(all.size(), 14u + size_t(world) - 1);
  }
}

TEST(WebDatasetReaderTest, BadShardAndSampleAreNamedAndTheRestIsDelivered) {
  TarDir dir("wds_reader_bad");
  make_shards(dir, {4, 3});
  // Shard 2: a sample without its .jpg. Shard 3: not a tar at all.
  dir.write("src2/lonely.cls", "5\n");
  dir.write("src2/ok.jpg", "ok bytes");
  dir.write("src2/ok.cls", "6");
  ASSERT_TRUE(dir.sh("tar --format=ustar -cf shard-002.tar -C src2 lonely.cls ok.cls ok.jpg"));
  dir.write("shard-003.tar", std::string(3000, 'z'));
  {
    Pipeline pipe(webdataset_spec(dir.dir().string(), "shard-{000..003}.tar"), {.batch_size = 2, .num_threads = 2});
    ASSERT_EQ(pipe.num_samples(), 4 + 3 + 2 + 1);
    std::vector<std::string> errors;
    int64_t delivered = 0;
    for (int b = 0; b < 5; ++b) {
      try {
        auto out = pipe.next();
        if (out) delivered += out->outputs[0].size();
      } catch (const DataError& e) {
        errors.push_back(e.what());
      }
    }
    ASSERT_EQ(errors.size(), 2u);
    EXPECT_NE(errors[0].find("tar shard \"" + dir.path("shard-002.tar").string() + "\" key \"lonely\""), std::string::npos)
        << errors[0];
    EXPECT_NE(errors[0].find("no field jpg or jpeg or png or webp"), std::string::npos) << errors[0];
    EXPECT_NE(errors[1].find("shard-003.tar"), std::string::npos) << errors[1];
  }
  {  // skip: every good sample is delivered (the failed slots refilled from the epoch's next)
    PipelineOptions o{.batch_size = 3, .num_threads = 2};
    o.on_error = ErrorPolicy::kSkip;
    Pipeline pipe(webdataset_spec(dir.dir().string(), "shard-{000..003}.tar", {{"last_batch", std::string("partial")}}), o);
    const Seen s = read_epoch(pipe);
    EXPECT_EQ(s.labels.size(), 10u);
    EXPECT_EQ(std::set<int64_t>(s.labels.begin(), s.labels.end()),
              (std::set<int64_t>{0, 1, 2, 3, 100, 101, 102, 6}));
  }
  {  // missing_field skip leaves the lonely sample out when the dataset is made
    Pipeline pipe(webdataset_spec(dir.dir().string(), "shard-002.tar", {{"missing_field", std::string("skip")}}),
                  {.batch_size = 1, .num_threads = 1});
    EXPECT_EQ(pipe.num_samples(), 1);
    EXPECT_EQ(read_epoch(pipe).labels, std::vector<int64_t>{6});
  }
}

TEST(WebDatasetReaderTest, ConfigurationErrorsNameTheArgument) {
  TarDir dir("wds_reader_config");
  EXPECT_THROW(Pipeline(webdataset_spec(dir.dir().string(), "shard-{000..002.tar"), {.batch_size = 1}), ConfigError);
  EXPECT_THROW(Pipeline(webdataset_spec(dir.dir().string(), "x.tar.gz", {{"mode", std::string("indexed")}}), {.batch_size = 1}),
               ConfigError);  // compressed shards are streamed only
  try {
    Pipeline(webdataset_spec(dir.dir().string(), "x.tar", {{"field", std::string(";")}}), {.batch_size = 1});
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("\"field\""), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hdl
