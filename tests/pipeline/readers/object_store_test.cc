// Datasets in object stores (media/remote_file_system.h) against real servers on 127.0.0.1,
// started by tests/media/object_store_servers.py: Debian's nginx (HTTP, ranges, keep-alive),
// moto's S3 server, and tests/media/fault_proxy.py in front of each (drops, 500, 503 SlowDown,
// stalls, cut bodies, on a seeded schedule). Shards of corpus photos made with GNU tar are read
// by webdataset_reader pipelines from local disk, over HTTP and over S3, with and without
// faults: the samples must be exactly the local ones, each once; the retry counter shows the
// retries; errors name the URL, the status and S3's code, and never a secret. A test skips,
// saying why, when a server is missing.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "media/cache_file_system.h"
#include "media/remote_file_system.h"
#include "pipeline/pipeline.h"
#include "tests/pipeline/readers/tar_test_util.h"

namespace hdl {
namespace {

using testing::TarDir;
constexpr int kShards = 3, kPerShard = 12;
const char* kSecret = "SeCrEt/DoNotPrint+1234567890abcdefghijklmn";

// The shards (shard-000.tar ...: corpus JPEGs as .jpg, label = their index as .cls) and the
// servers serving them, for one test.
class ObjectStoreTest : public ::testing::Test {
 protected:
  void start(const std::string& want, double fail_rate) {
    dir_ = std::make_unique<TarDir>("object_store");
    ASSERT_TRUE(dir_->python(
        "import glob, os, subprocess\n"
        "jpgs = sorted(glob.glob('" HDL_CORPUS_DIR "/imagenet/train/*/*.JPEG'))[:" + std::to_string(kShards * kPerShard) + "]\n"
        "assert len(jpgs) == " + std::to_string(kShards * kPerShard) + ", 'corpus missing'\n"
        "os.makedirs('root', exist_ok=True)\n"
        "for k in range(" + std::to_string(kShards) + "):\n"
        "    os.makedirs(f'src{k}', exist_ok=True); members = []\n"
        "    for i in range(" + std::to_string(kPerShard) + "):\n"
        "        n = k * " + std::to_string(kPerShard) + " + i; key = f's{n:04d}'\n"
        "        open(f'src{k}/{key}.jpg', 'wb').write(open(jpgs[n], 'rb').read())\n"
        "        open(f'src{k}/{key}.cls', 'w').write(str(n))\n"
        "        members += [key + '.jpg', key + '.cls']\n"
        "    subprocess.run(['tar', '--format=gnu', '-cf', f'root/shard-{k:03d}.tar', '-C', f'src{k}'] + members, check=True)\n"));
    const std::string cmd = "/usr/bin/python3 " HDL_SOURCE_DIR "/tests/media/object_store_servers.py --root root --state state"
                            " --want " + want + " --fail-rate " + std::to_string(fail_rate) +
                            " --seed 11 --stall-s 3 --parent " + std::to_string(::getpid()) + " --lifetime 600 &";
    ASSERT_TRUE(dir_->sh(cmd));
    started_ = true;
    const auto path = dir_->path("state/servers.txt");
    for (int i = 0; i < 3000 && !std::filesystem::exists(path); ++i)  // a first run may make moto's venv
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);)
      if (size_t eq = line.find('='); eq != std::string::npos) info_[line.substr(0, eq)] = line.substr(eq + 1);
    ASSERT_TRUE(std::filesystem::exists(path)) << "object_store_servers.py did not start; see " << dir_->path("state/servers.log");
  }
  void TearDown() override {
    // The harness stops its servers on SIGTERM (and by itself once this process is gone).
    if (!info_.count("pid")) return;
    const pid_t pid = std::stoi(info_["pid"]);
    ::kill(pid, SIGTERM);
    // Gone before the folder is removed (nginx deletes its pid file there as it stops).
    for (int i = 0; i < 200 && ::kill(pid, 0) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  // "" when the server is up; else why not (the test skips with it).
  std::string missing(const std::string& name) {
    if (info_.count(name)) return "";
    return info_.count("skip_" + name) ? info_["skip_" + name] : name + " did not start";
  }
  std::string url(const std::string& server, const std::string& rel = "") {
    return "http://127.0.0.1:" + info_[server] + "/" + rel;
  }
  std::string root() const { return dir_->path("root").string(); }

  std::unique_ptr<TarDir> dir_;
  bool started_ = false;
  std::map<std::string, std::string> info_;
};

PipelineSpec reader_spec(const std::string& urls) {
  PipelineSpec spec;
  auto r = spec.add("webdataset_reader", {}, {{"urls", std::vector<std::string>{urls}}, {"index", std::string("none")}}, {},
                    "reader");
  spec.set_outputs({r[0], r[1]});
  return spec;
}

// Every (label, bytes) an epoch delivers, in delivery order; the reader's counters in pipe.stats()
// into *counters when given.
std::vector<std::pair<int64_t, std::string>> read_all(const std::string& urls, std::shared_ptr<FileSystem> fs,
                                                      std::map<std::string, int64_t>* counters = nullptr) {
  PipelineOptions o;
  o.batch_size = 5, o.num_threads = 2, o.file_system = std::move(fs);
  Pipeline pipe(reader_spec(urls), o);
  std::vector<std::pair<int64_t, std::string>> out;
  for (const auto& b : pipe.epoch_batches())
    for (int64_t i = 0; i < b.outputs[0].size(); ++i) {
      const Tensor t = b.outputs[0].sample(i);
      out.emplace_back(*b.outputs[1].sample(i).typed<int64_t>(),
                       std::string(static_cast<const char*>(t.data()), size_t(t.num_elements())));
    }
  if (counters) {
    const PipelineStats stats = pipe.stats();
    for (const auto& [name, value] : stats.operators[0].counters) (*counters)[name] = value;
  }
  return out;
}

void expect_each_once(const std::vector<std::pair<int64_t, std::string>>& got,
                      const std::vector<std::pair<int64_t, std::string>>& local) {
  ASSERT_EQ(got.size(), size_t(kShards * kPerShard));
  auto a = got, b = local;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  EXPECT_TRUE(a == b) << "the samples differ from the local ones";
  for (size_t i = 1; i < a.size(); ++i) EXPECT_NE(a[i - 1].first, a[i].first) << "sample delivered twice";
}

RemoteOptions fast_retries() {
  RemoteOptions o;
  o.request_timeout_ms = 1000, o.backoff_initial_ms = 5, o.backoff_max_ms = 100, o.max_attempts = 30, o.jitter_seed = 3;
  o.low_speed_time_s = 1;
  return o;
}

S3Config moto_config(const std::string& endpoint) {
  S3Config c;
  c.endpoint = endpoint, c.access_key_id = "AKIDTESTING", c.secret_access_key = kSecret;
  c.credentials_source = "the test";
  return c;
}

const std::string kSpec = "shard-{000..002}.tar";

TEST_F(ObjectStoreTest, HttpFromNginxIsTheLocalDisk) {
  start("nginx", 0.0);
  if (std::string why = missing("nginx"); !why.empty()) GTEST_SKIP() << why;
  const auto local = read_all(root() + "/" + kSpec, nullptr);
  auto fs = url_file_system(RemoteOptions());
  // The pipeline: exactly the local samples, in the same order.
  EXPECT_EQ(read_all(url("nginx") + kSpec, fs), local);
  const RemoteStats s = fs->stats();
  EXPECT_GT(s.requests, 0);
  EXPECT_EQ(s.retries, 0);
  EXPECT_LE(s.connections, 8) << "keep-alive: connections are reused";
  EXPECT_GT(s.bytes, 0);
  // Reads at any offset are the file's bytes; past the end, 0.
  auto f = fs->open(url("nginx", "shard-001.tar"));
  ASSERT_TRUE(f.is_ok()) << f.status().message();
  const std::string bytes = dir_->read("root/shard-001.tar");
  ASSERT_EQ((*f)->size(), int64_t(bytes.size()));
  EXPECT_GT((*f)->modified_ns(), 0);
  for (int64_t off : {int64_t(0), int64_t(511), int64_t(bytes.size()) - 700}) {
    std::string got(600, '\0');
    ASSERT_TRUE(read_exactly(**f, off, 600, got.data()).is_ok());
    EXPECT_EQ(got, bytes.substr(size_t(off), 600));
  }
  char c;
  EXPECT_EQ(*(*f)->read(int64_t(bytes.size()), 1, &c), 0);
  // A missing file: kNotFound naming the URL and the status.
  auto missing_file = fs->open(url("nginx", "nope.tar"));
  ASSERT_FALSE(missing_file.is_ok());
  EXPECT_EQ(missing_file.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing_file.status().message().find(url("nginx", "nope.tar")), std::string::npos) << missing_file.status().message();
  EXPECT_NE(missing_file.status().message().find("HTTP 404"), std::string::npos) << missing_file.status().message();
}

TEST_F(ObjectStoreTest, S3FromMotoIsTheLocalDisk) {
  start("moto", 0.0);
  if (std::string why = missing("moto"); !why.empty()) GTEST_SKIP() << why;
  const auto local = read_all(root() + "/" + kSpec, nullptr);
  auto fs = s3_file_system(moto_config(url("moto")), RemoteOptions());
  EXPECT_EQ(read_all("s3://hdl/" + kSpec, fs), local);
  EXPECT_EQ(fs->stats().retries, 0);
  // ListObjectsV2.
  auto listed = fs->list("s3://hdl/shard-00");
  ASSERT_TRUE(listed.is_ok()) << listed.status().message();
  ASSERT_EQ(listed->size(), size_t(kShards));
  EXPECT_EQ((*listed)[1].url, "s3://hdl/shard-001.tar");
  EXPECT_EQ((*listed)[1].size, int64_t(dir_->read("root/shard-001.tar").size()));
  // A missing key: kNotFound with the URL, the status and S3's code; no secret.
  auto nope = fs->open("s3://hdl/nope.tar");
  ASSERT_FALSE(nope.is_ok());
  const std::string m = nope.status().message();
  EXPECT_EQ(nope.status().code(), StatusCode::kNotFound) << m;
  EXPECT_NE(m.find("s3://hdl/nope.tar"), std::string::npos) << m;
  EXPECT_NE(m.find("HTTP 404"), std::string::npos) << m;
  EXPECT_NE(m.find("NoSuchKey"), std::string::npos) << m;
  EXPECT_EQ(m.find(kSecret), std::string::npos);
  // The default file system takes s3:// paths, configured from the environment.
  ::setenv("AWS_ENDPOINT_URL", url("moto").c_str(), 1);
  ::setenv("AWS_ACCESS_KEY_ID", "AKIDTESTING", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", kSecret, 1);
  EXPECT_EQ(read_all("s3://hdl/" + kSpec, nullptr), local);
}

TEST_F(ObjectStoreTest, UnderFaultsEverySampleComesOnceAndRetriesAreCounted) {
  start("nginx,moto", 0.15);
  const std::string no_nginx = missing("nginx").empty() ? missing("proxy_nginx") : missing("nginx");
  const std::string no_moto = missing("moto").empty() ? missing("proxy_moto") : missing("moto");
  if (!no_nginx.empty() && !no_moto.empty()) GTEST_SKIP() << no_nginx << "; " << no_moto;
  const auto local = read_all(root() + "/" + kSpec, nullptr);
  if (no_nginx.empty()) {
    auto fs = http_file_system(fast_retries());
    std::map<std::string, int64_t> counters;
    expect_each_once(read_all(url("proxy_nginx") + kSpec, fs, &counters), local);
    const RemoteStats s = fs->stats();
    EXPECT_GT(s.retries, 0) << s.requests << " requests";
    // pipe.stats() shows the file system's counts (taken at the epoch's end: the pipeline went
    // on prefetching the next epoch, so the file system has counted a few more since).
    EXPECT_GT(counters["remote_retries"], 0) << "pipe.stats() shows no retries";
    EXPECT_LE(counters["remote_retries"], s.retries);
    EXPECT_GT(counters["remote_requests"], 0);
    EXPECT_LE(counters["remote_requests"], s.requests);
    EXPECT_EQ(s.failures, 0);
    std::printf("nginx behind the fault proxy: %lld requests, %lld retries\n", (long long)s.requests, (long long)s.retries);
  } else {
    std::printf("SKIPPED the HTTP half: %s\n", no_nginx.c_str());
  }
  if (no_moto.empty()) {
    auto fs = s3_file_system(moto_config(url("proxy_moto")), fast_retries());
    expect_each_once(read_all("s3://hdl/" + kSpec, fs), local);
    const RemoteStats s = fs->stats();
    EXPECT_GT(s.retries, 0) << s.requests << " requests";
    std::printf("moto behind the fault proxy: %lld requests, %lld retries\n", (long long)s.requests, (long long)s.retries);
    // Authentication errors fail at once, with S3's code and where the credentials came from.
    auto denied = fs->open("s3://hdl/__auth__/x.tar");
    ASSERT_FALSE(denied.is_ok());
    const std::string m = denied.status().message();
    EXPECT_NE(m.find("HTTP 403"), std::string::npos) << m;
    EXPECT_NE(m.find("InvalidAccessKeyId"), std::string::npos) << m;
    EXPECT_NE(m.find("credentials: the test"), std::string::npos) << m;
    EXPECT_NE(m.find("s3://hdl/__auth__/x.tar"), std::string::npos) << m;
    EXPECT_EQ(m.find(kSecret), std::string::npos) << m;
    EXPECT_EQ(m.find("after"), std::string::npos) << "an auth error is not retried: " << m;
  } else {
    std::printf("SKIPPED the S3 half: %s\n", no_moto.c_str());
  }
}

// A whole webdataset epoch over nginx through the local cache (PipelineOptions::cache), twice
// in one pipeline, then in a second pipeline over the same cache directory: the local samples
// every time; the second epoch sends no request at all; the second pipeline sends HEADs only
// (the stamps that validate its entries: no body bytes, so no range GET) and hits every time.
TEST_F(ObjectStoreTest, EpochsThroughTheCacheSendNoRangeGetsOnceCached) {
  start("nginx", 0.0);
  if (std::string why = missing("nginx"); !why.empty()) GTEST_SKIP() << why;
  const auto local = read_all(root() + "/" + kSpec, nullptr);
  auto remote = [] { return default_file_system()->stats(); };
  PipelineOptions o;
  o.batch_size = 5, o.num_threads = 2;
  o.cache.dir = dir_->path("cache").string(), o.cache.limit_bytes = int64_t(64) << 20;
  auto epoch = [](Pipeline& pipe) {
    std::vector<std::pair<int64_t, std::string>> out;
    for (const auto& b : pipe.epoch_batches())
      for (int64_t i = 0; i < b.outputs[0].size(); ++i) {
        const Tensor t = b.outputs[0].sample(i);
        out.emplace_back(*b.outputs[1].sample(i).typed<int64_t>(),
                         std::string(static_cast<const char*>(t.data()), size_t(t.num_elements())));
      }
    return out;
  };
  {
    Pipeline pipe(reader_spec(url("nginx") + kSpec), o);
    EXPECT_EQ(epoch(pipe), local);
    const RemoteStats before = remote();
    EXPECT_EQ(epoch(pipe), local);
    EXPECT_EQ(remote().requests, before.requests) << "the second epoch asked the server";
    std::map<std::string, int64_t> c;
    const PipelineStats stats = pipe.stats();
    for (const auto& [name, value] : stats.operators[0].counters) c[name] = value;
    EXPECT_EQ(c["cache_bytes_written"], int64_t(std::filesystem::file_size(root() + "/shard-000.tar") +
                                                std::filesystem::file_size(root() + "/shard-001.tar") +
                                                std::filesystem::file_size(root() + "/shard-002.tar")));
    EXPECT_GT(c["cache_bytes_read"], 0);
  }
  const RemoteStats before = remote();
  Pipeline again(reader_spec(url("nginx") + kSpec), o);
  EXPECT_EQ(epoch(again), local);
  const RemoteStats after = remote();
  EXPECT_EQ(after.bytes, before.bytes) << "a range GET was sent for a cached shard";
  // HEADs: one per shard in prepare(), one per shard and thread that opened it first in run().
  EXPECT_LE(after.requests - before.requests, kShards * (1 + o.num_threads));
  std::map<std::string, int64_t> c;
  const PipelineStats stats = again.stats();
  for (const auto& [name, value] : stats.operators[0].counters) c[name] = value;
  EXPECT_EQ(c["cache_misses"], 0);
  EXPECT_GE(c["cache_hits"], kShards);
  EXPECT_EQ(c["cache_bytes_written"], 0);
}

// file_reader over URLs (whole files) through the cache: the files' bytes, and the cache's
// counters in pipe.stats(): misses and downloads the first time, hits only the second.
TEST_F(ObjectStoreTest, FileReaderThroughTheCacheCountsHitsAndMisses) {
  start("nginx", 0.0);
  if (std::string why = missing("nginx"); !why.empty()) GTEST_SKIP() << why;
  std::vector<std::string> urls;
  for (int k = 0; k < kShards; ++k) urls.push_back(url("nginx", "shard-00" + std::to_string(k) + ".tar"));
  PipelineOptions o;
  o.batch_size = kShards, o.num_threads = 2;
  o.cache.dir = dir_->path("cache").string();
  for (int run = 0; run < 2; ++run) {
    PipelineSpec spec;
    auto r = spec.add("file_reader", {}, {{"shuffle", false}}, {}, "files");
    spec.set_outputs({r[0], r[1]});
    spec.nodes()[0].samples = std::make_shared<const Dataset>(Dataset::from_samples(urls, {0, 1, 2}));
    Pipeline pipe(spec, o);
    auto b = pipe.next();
    ASSERT_TRUE(b.has_value());
    for (int k = 0; k < kShards; ++k) {
      const Tensor t = b->outputs[0].sample(k);
      EXPECT_TRUE(std::string(static_cast<const char*>(t.data()), size_t(t.num_elements())) ==
                  dir_->read("root/shard-00" + std::to_string(k) + ".tar")) << k;
    }
    std::map<std::string, int64_t> c;
    const PipelineStats stats = pipe.stats();
    for (const auto& [name, value] : stats.operators[0].counters) c[name] = value;
    // (The pipeline prefetches the next epoch, whose opens count too.)
    if (run == 0) EXPECT_GE(c["cache_misses"], kShards);
    if (run == 1) EXPECT_EQ(c["cache_misses"], 0);
    if (run == 1) EXPECT_GE(c["cache_hits"], kShards);
    EXPECT_EQ(c["cache_bytes_written"], run == 0 ? int64_t(dir_->read("root/shard-000.tar").size() +
                                                            dir_->read("root/shard-001.tar").size() +
                                                            dir_->read("root/shard-002.tar").size()) : 0);
  }
}

}  // namespace
}  // namespace hdl
