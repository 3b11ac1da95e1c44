// The local cache of remote objects (media/cache_file_system.h) over an in-memory stand-in for
// a remote store, which counts what is asked of it: hits and misses, LRU eviction within the
// limit, an entry in use surviving eviction, objects larger than the cache streamed, a changed
// object fetched again, URLs that cannot name a path outside the directory, a truncated entry
// detected and replaced, two processes sharing one directory. (The cache over real nginx, a
// whole webdataset epoch twice: tests/pipeline/readers/object_store_test.cc.)
#include "media/cache_file_system.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "media/detail/cache_dir.h"
#include "media/detail/crc32c.h"
#include "media/detail/sha256.h"

namespace hdl {
namespace {

namespace fs = std::filesystem;

// Bytes that differ per (object, version), so that a stale or misplaced entry shows.
std::string object_bytes(int64_t size, int seed) {
  std::string s(size_t(size), '\0');
  uint32_t x = 2463534242u + uint32_t(seed) * 7919u;
  for (char& c : s) x ^= x << 13, x ^= x >> 17, x ^= x << 5, c = char(x);
  return s;
}

// A remote store in memory: url -> (bytes, stamp); counts opens, reads and bytes read.
class FakeRemote final : public RemoteFileSystem {
 public:
  void put(const std::string& url, std::string bytes, int64_t stamp) {
    std::lock_guard lock(mu_);
    objects_[url] = {std::make_shared<const std::string>(std::move(bytes)), stamp};
  }
  Result<std::unique_ptr<RandomAccessFile>> open(const std::string& path) override {
    opens += 1;
    std::lock_guard lock(mu_);
    auto it = objects_.find(path);
    if (it == objects_.end()) return Status::not_found("no object " + path);
    return std::unique_ptr<RandomAccessFile>(std::make_unique<File>(this, it->second.first, it->second.second));
  }
  RemoteStats stats() const override { return {}; }
  Result<std::vector<RemoteObject>> list(const std::string&) override { return Status::unsupported("no list"); }

  std::atomic<int64_t> opens{0}, reads{0}, bytes{0};

 private:
  class File final : public RandomAccessFile {
   public:
    File(FakeRemote* r, std::shared_ptr<const std::string> b, int64_t stamp) : r_(r), b_(std::move(b)), stamp_(stamp) {}
    int64_t size() const override { return int64_t(b_->size()); }
    int64_t modified_ns() const override { return stamp_; }
    Result<int64_t> read(int64_t offset, int64_t n, void* dst) const override {
      r_->reads += 1;
      if (offset >= size()) return int64_t{0};
      n = std::min(n, size() - offset);
      std::memcpy(dst, b_->data() + offset, size_t(n));
      r_->bytes += n;
      return n;
    }
    FakeRemote* r_;
    std::shared_ptr<const std::string> b_;
    int64_t stamp_;
  };
  std::mutex mu_;
  std::map<std::string, std::pair<std::shared_ptr<const std::string>, int64_t>> objects_;
};

// Byte strings compared without printing them: sizes and the first differing offset.
::testing::AssertionResult Same(const std::string& got, const std::string& want) {
  if (got == want) return ::testing::AssertionSuccess();
  size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  return ::testing::AssertionFailure() << "got " << got.size() << " bytes, want " << want.size()
                                       << "; they differ from byte " << i;
}

class CacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* t = ::testing::UnitTest::GetInstance()->current_test_info();
    parent_ = fs::path(HDL_BINARY_DIR) / "tmp" / ("cache_" + std::string(t->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(parent_);
    dir_ = parent_ / "cache";
    remote_ = std::make_shared<FakeRemote>();
  }
  void TearDown() override { fs::remove_all(parent_); }

  std::shared_ptr<RemoteFileSystem> cache(int64_t limit) {
    CacheOptions o;
    o.dir = dir_.string(), o.limit_bytes = limit;
    return cached_file_system(remote_, o);
  }
  // The whole object read through `file` in 64 KiB reads.
  static std::string read_all(const RandomAccessFile& file) {
    std::string out(size_t(file.size()), '\0');
    for (int64_t at = 0; at < file.size(); at += 65536) {
      Status st = read_exactly(file, at, std::min<int64_t>(65536, file.size() - at), out.data() + at);
      EXPECT_TRUE(st.is_ok()) << st.message();
    }
    return out;
  }
  std::string read_url(FileSystem& fs, const std::string& url) {
    auto f = fs.open(url);
    EXPECT_TRUE(f.is_ok()) << f.status().message();
    return f.is_ok() ? read_all(**f) : "";
  }
  static int64_t counter(const FileSystem& fs, const std::string& name) {
    for (const auto& [k, v] : fs.counters())
      if (k == name) return v;
    ADD_FAILURE() << "no counter " << name;
    return -1;
  }
  // The cache directory's file names (entries and anything else).
  std::vector<std::string> files() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_))
      if (e.path().filename() != ".lock") out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  int64_t bytes_on_disk() const {
    int64_t n = 0;
    for (const auto& e : fs::directory_iterator(dir_))
      if (e.path().filename() != ".lock") n += int64_t(e.file_size());
    return n;
  }
  std::string entry_of(const std::string& url, int64_t stamp) const {
    return detail::CacheDir::entry_name(url, stamp);
  }

  fs::path parent_, dir_;
  std::shared_ptr<FakeRemote> remote_;
};

TEST(Sha256, MatchesTheFipsExamples) {
  EXPECT_EQ(detail::sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(detail::sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(detail::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(detail::sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(ParseByteSize, NumbersAndUnits) {
  EXPECT_EQ(parse_byte_size("123", "x"), 123);
  EXPECT_EQ(parse_byte_size("500M", "x"), int64_t(500) << 20);
  EXPECT_EQ(parse_byte_size("10G", "x"), int64_t(10) << 30);
  EXPECT_EQ(parse_byte_size("10GiB", "x"), int64_t(10) << 30);
  EXPECT_EQ(parse_byte_size("1.5k", "x"), 1536);
  EXPECT_EQ(parse_byte_size("2T", "x"), int64_t(2) << 40);
  for (const char* bad : {"", "abc", "-1", "0", "10X", "10GG", " 5", "1e400"}) {
    try {
      parse_byte_size(bad, "cache_limit");
      ADD_FAILURE() << "accepted \"" << bad << "\"";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("cache_limit"), std::string::npos) << e.what();
    }
  }
}

TEST(CacheOptions, FromTheEnvironment) {
  ::setenv("HDL_CACHE_DIR", "/some/dir", 1);
  ::setenv("HDL_CACHE_LIMIT", "500M", 1);
  CacheOptions o = CacheOptions::from_environment();
  EXPECT_EQ(o.dir, "/some/dir");
  EXPECT_EQ(o.limit_bytes, int64_t(500) << 20);
  ::setenv("HDL_CACHE_LIMIT", "lots", 1);
  try {
    CacheOptions::from_environment();
    ADD_FAILURE() << "accepted HDL_CACHE_LIMIT=lots";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("HDL_CACHE_LIMIT"), std::string::npos) << e.what();
  }
  ::unsetenv("HDL_CACHE_DIR");
  ::unsetenv("HDL_CACHE_LIMIT");
  o = CacheOptions::from_environment();
  EXPECT_EQ(o.dir, "");
  EXPECT_EQ(o.limit_bytes, int64_t(10) << 30);
}

TEST_F(CacheTest, MissThenHitWithoutRemoteReads) {
  const std::string a = object_bytes(300000, 1);
  remote_->put("http://h/a.tar", a, 11);
  auto c = cache(int64_t(1) << 20);
  EXPECT_TRUE(Same(read_url(*c, "http://h/a.tar"), a));
  EXPECT_EQ(counter(*c, "cache_misses"), 1);
  EXPECT_EQ(counter(*c, "cache_bytes_written"), 300000);
  const int64_t reads = remote_->reads;
  EXPECT_TRUE(Same(read_url(*c, "http://h/a.tar"), a));
  EXPECT_EQ(counter(*c, "cache_hits"), 1);
  EXPECT_EQ(remote_->reads, reads) << "a hit read the remote";
  EXPECT_EQ(counter(*c, "cache_bytes_read"), 300000 + 300000);  // the miss, after its download, too
  EXPECT_EQ(files(), std::vector<std::string>{entry_of("http://h/a.tar", 11)});
  // A local path is the inner file system's business: not counted, not cached.
  EXPECT_FALSE(c->open("/nonexistent/x").is_ok());
  EXPECT_EQ(counter(*c, "cache_misses"), 1);
}

TEST_F(CacheTest, SmallReadsDoNotDownload) {
  remote_->put("http://h/a.tar", object_bytes(100000, 1), 1);
  auto c = cache(int64_t(1) << 20);
  auto f = c->open("http://h/a.tar");
  ASSERT_TRUE(f.is_ok());
  char header[512];
  for (int64_t at = 0; at < 10 * 512; at += 512) ASSERT_TRUE(read_exactly(**f, at, 512, header).is_ok());
  EXPECT_TRUE(files().empty()) << "tar-header-sized reads downloaded the object";
  EXPECT_EQ(remote_->bytes, 10 * 512);
  char data[4096];
  ASSERT_TRUE(read_exactly(**f, 20000, 4096, data).is_ok());
  EXPECT_EQ(files().size(), 1u);
  EXPECT_EQ(counter(*c, "cache_bytes_written"), 100000);
}

// Jobs one after another (a cache object each): a later job evicts the entries of earlier
// ones, least recently used first.
TEST_F(CacheTest, EvictsTheLeastRecentlyUsedOfEarlierJobsWithinTheLimit) {
  for (int i = 0; i < 4; ++i) remote_->put("http://h/" + std::to_string(i), object_bytes(100000, i), 1);
  auto pause = [] { std::this_thread::sleep_for(std::chrono::milliseconds(30)); };  // > the file clock's tick
  read_url(*cache(250000), "http://h/0");  // room for two
  pause();
  read_url(*cache(250000), "http://h/1");
  pause();
  EXPECT_TRUE(Same(read_url(*cache(250000), "http://h/0"), object_bytes(100000, 0)));  // a hit: 0 is the most recent
  pause();
  auto c = cache(250000);
  read_url(*c, "http://h/2");  // evicts 1
  EXPECT_EQ(counter(*c, "cache_evictions"), 1);
  std::vector<std::string> want = {entry_of("http://h/0", 1), entry_of("http://h/2", 1)};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(files(), want);
  EXPECT_LE(bytes_on_disk(), 250000);
  pause();
  auto d = cache(250000);
  read_url(*d, "http://h/3");  // evicts 0, the older of the two
  want = {entry_of("http://h/2", 1), entry_of("http://h/3", 1)};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(files(), want);
  EXPECT_EQ(counter(*d, "cache_misses"), 1);
}

// One job over a data set larger than the cache, epoch after epoch: it keeps what fits and
// streams the rest (plain LRU would evict every object before its next use, and hit nothing).
TEST_F(CacheTest, AJobKeepsWhatFitsInsteadOfEvictingItsOwnEntries) {
  for (int i = 0; i < 5; ++i) remote_->put("http://h/" + std::to_string(i), object_bytes(100000, i), 1);
  auto c = cache(250000);
  for (int epoch = 0; epoch < 3; ++epoch)
    for (int i = 0; i < 5; ++i) EXPECT_TRUE(Same(read_url(*c, "http://h/" + std::to_string(i)), object_bytes(100000, i)));
  EXPECT_EQ(counter(*c, "cache_evictions"), 0);
  EXPECT_EQ(counter(*c, "cache_bytes_written"), 200000);  // 0 and 1, once
  EXPECT_EQ(counter(*c, "cache_hits"), 2 * 2);             // 0 and 1 in epochs 2 and 3
  EXPECT_EQ(counter(*c, "cache_streamed"), 3 * 3);
}

TEST_F(CacheTest, AnEntryBeingReadSurvivesEviction) {
  for (int i = 0; i < 4; ++i) remote_->put("http://h/" + std::to_string(i), object_bytes(100000, i), 1);
  auto first = cache(250000);  // an earlier job, still reading 0
  auto held = first->open("http://h/0");
  ASSERT_TRUE(held.is_ok());
  EXPECT_TRUE(Same(read_all(**held), object_bytes(100000, 0)));  // downloaded; held open
  read_url(*first, "http://h/1");
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  auto c = cache(250000);  // a later job: the earlier job's entries may go, 0 first, but 0 is read
  read_url(*c, "http://h/2");
  EXPECT_TRUE(fs::exists(dir_ / entry_of("http://h/0", 1)));
  EXPECT_FALSE(fs::exists(dir_ / entry_of("http://h/1", 1)));
  EXPECT_EQ(counter(*c, "cache_evictions"), 1);
  auto held2 = c->open("http://h/2");  // a hit, held too: nothing can be evicted now
  ASSERT_TRUE(held2.is_ok());
  EXPECT_TRUE(Same(read_url(*c, "http://h/3"), object_bytes(100000, 3)));  // streamed, not cached
  EXPECT_EQ(counter(*c, "cache_streamed"), 1);
  EXPECT_FALSE(fs::exists(dir_ / entry_of("http://h/3", 1)));
  EXPECT_TRUE(Same(read_all(**held), object_bytes(100000, 0)));
  EXPECT_EQ(files().size(), 2u) << "a .part file was left behind";
}

TEST_F(CacheTest, AnObjectLargerThanTheCacheStreams) {
  const std::string big = object_bytes(200000, 5);
  remote_->put("http://h/big", big, 1);
  auto c = cache(100000);
  EXPECT_TRUE(Same(read_url(*c, "http://h/big"), big));
  EXPECT_TRUE(Same(read_url(*c, "http://h/big"), big));
  EXPECT_TRUE(files().empty());
  EXPECT_EQ(counter(*c, "cache_streamed"), 2);
  EXPECT_EQ(counter(*c, "cache_bytes_written"), 0);
  EXPECT_EQ(remote_->bytes, 2 * 200000);
}

TEST_F(CacheTest, AChangedObjectIsFetchedAgain) {
  remote_->put("s3://b/k.tar", object_bytes(100000, 1), 1000);
  auto c = cache(150000);
  EXPECT_TRUE(Same(read_url(*c, "s3://b/k.tar"), object_bytes(100000, 1)));
  remote_->put("s3://b/k.tar", object_bytes(100000, 2), 2000);  // same size, a new stamp
  EXPECT_TRUE(Same(read_url(*c, "s3://b/k.tar"), object_bytes(100000, 2)));
  EXPECT_EQ(counter(*c, "cache_misses"), 2);
  // The old version made room for the new one (there was room for one only).
  EXPECT_EQ(files(), std::vector<std::string>{entry_of("s3://b/k.tar", 2000)});
  EXPECT_TRUE(Same(read_url(*c, "s3://b/k.tar"), object_bytes(100000, 2)));
  EXPECT_EQ(counter(*c, "cache_hits"), 1);
}

TEST_F(CacheTest, ATruncatedEntryIsDetectedAndFetchedAgain) {
  const std::string a = object_bytes(100000, 3);
  remote_->put("http://h/a", a, 7);
  auto c = cache(int64_t(1) << 20);
  read_url(*c, "http://h/a");
  const fs::path entry = dir_ / entry_of("http://h/a", 7);
  fs::resize_file(entry, 4096);  // a crash, a full disk, a hand
  EXPECT_TRUE(Same(read_url(*c, "http://h/a"), a));
  EXPECT_EQ(counter(*c, "cache_misses"), 2);
  EXPECT_EQ(fs::file_size(entry), 100000u + detail::kCacheFooterBytes);  // the object, then its footer
  fs::resize_file(entry, 100001 + detail::kCacheFooterBytes);  // grown: not the object either
  EXPECT_TRUE(Same(read_url(*c, "http://h/a"), a));
  EXPECT_EQ(counter(*c, "cache_misses"), 3);
  EXPECT_EQ(fs::file_size(entry), 100000u + detail::kCacheFooterBytes);
}

TEST_F(CacheTest, UrlsStayInsideTheDirectory) {
  const std::vector<std::string> urls = {
      "http://h/../../escape", "http://h/a/..", "http://h/", "s3://b/../../../../tmp/x",
      "http://h/%2e%2e/%2F..%2f", "http://h/a b\t\x01\xc3\xbc*?sig=../../x", "HTTP://H/CASE/" + std::string(300, 'z'),
      "s3://b/" + std::string(200, '/') + "..", "http://h/.hidden", "http://h/-"};
  for (size_t i = 0; i < urls.size(); ++i) remote_->put(urls[i], object_bytes(5000, int(i)), 1);
  auto c = cache(int64_t(1) << 20);
  for (size_t i = 0; i < urls.size(); ++i) EXPECT_TRUE(Same(read_url(*c, urls[i]), object_bytes(5000, int(i)))) << urls[i];
  // Everything written is a plain file directly in the directory, named as entries are.
  size_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(parent_)) {
    if (e.path() == dir_) continue;
    EXPECT_EQ(e.path().parent_path(), dir_) << e.path();
    EXPECT_TRUE(e.is_regular_file()) << e.path();
    const std::string name = e.path().filename().string();
    if (name == ".lock") continue;
    EXPECT_TRUE(detail::CacheDir::is_entry_name(name)) << name;
    EXPECT_EQ(name.find('/'), std::string::npos);
    EXPECT_LE(name.size(), 160u);
    n += 1;
  }
  EXPECT_EQ(n, urls.size());
  // A query string (a presigned URL's signature) is not part of the key.
  EXPECT_EQ(entry_of("http://h/a.tar?X-Amz-Signature=1", 5), entry_of("http://h/a.tar?X-Amz-Signature=2", 5));
  EXPECT_EQ(entry_of("HTTP://H/a.tar", 5), entry_of("http://h/a.tar", 5));
  EXPECT_NE(entry_of("http://h/A.tar", 5), entry_of("http://h/a.tar", 5));
}

TEST_F(CacheTest, ThreadsReadingOneMissAllGetTheBytes) {
  const std::string a = object_bytes(3 << 20, 9);
  remote_->put("http://h/a", a, 1);
  auto c = cache(int64_t(16) << 20);
  auto f = c->open("http://h/a");
  ASSERT_TRUE(f.is_ok());
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::string buf(70000, '\0');
      for (int64_t at = t * 1000; at + 70000 <= int64_t(a.size()); at += 250000) {
        if (!read_exactly(**f, at, 70000, buf.data()).is_ok() || buf != a.substr(size_t(at), 70000)) wrong += 1;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(counter(*c, "cache_bytes_written"), int64_t(a.size())) << "downloaded more than once";
}

// Two processes (fork) with their own cache objects over one directory read the same objects
// in opposite orders, each with two threads: both get every byte right, nothing is left
// half-written, and no object is downloaded more than twice.
TEST_F(CacheTest, TwoProcessesShareOneDirectory) {
  constexpr int kObjects = 8;
  for (int i = 0; i < kObjects; ++i) remote_->put("http://h/s" + std::to_string(i), object_bytes(600000 + i * 1000, i), 1);
  fs::create_directories(parent_);
  pid_t kids[2];
  for (int k = 0; k < 2; ++k) {
    kids[k] = ::fork();
    ASSERT_GE(kids[k], 0);
    if (kids[k] == 0) {
      auto c = cache(int64_t(64) << 20);
      std::atomic<int> wrong{0};
      auto work = [&](int t) {
        for (int j = 0; j < kObjects; ++j) {
          const int i = k == 0 ? (j + t * 3) % kObjects : (kObjects - 1 - j + t * 3) % kObjects;
          auto f = c->open("http://h/s" + std::to_string(i));
          if (!f.is_ok()) { wrong += 1; continue; }
          std::string got(size_t((*f)->size()), '\0');
          for (int64_t at = 0; at < (*f)->size(); at += 100000)
            if (!read_exactly(**f, at, std::min<int64_t>(100000, (*f)->size() - at), got.data() + at).is_ok()) wrong += 1;
          if (got != object_bytes(600000 + i * 1000, i)) wrong += 1;
        }
      };
      std::thread t1(work, 0), t2(work, 1);
      t1.join(), t2.join();
      FILE* out = std::fopen((parent_ / ("written" + std::to_string(k))).c_str(), "w");
      std::fprintf(out, "%lld\n", static_cast<long long>(counter(*c, "cache_bytes_written")));
      std::fclose(out);
      ::_exit(wrong == 0 ? 0 : 1);
    }
  }
  for (pid_t kid : kids) {
    int status = 0;
    ASSERT_EQ(::waitpid(kid, &status, 0), kid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a process read wrong bytes";
  }
  int64_t written = 0, total = 0;
  for (int k = 0; k < 2; ++k) {
    long long w = 0;
    FILE* in = std::fopen((parent_ / ("written" + std::to_string(k))).c_str(), "r");
    ASSERT_TRUE(in);
    ASSERT_EQ(std::fscanf(in, "%lld", &w), 1);
    std::fclose(in);
    written += w;
  }
  for (int i = 0; i < kObjects; ++i) {
    const fs::path e = dir_ / entry_of("http://h/s" + std::to_string(i), 1);
    ASSERT_TRUE(fs::exists(e));
    EXPECT_EQ(fs::file_size(e), uintmax_t(600000 + i * 1000 + detail::kCacheFooterBytes));
    total += 600000 + i * 1000;
  }
  EXPECT_EQ(files().size(), size_t(kObjects)) << "a .part file was left behind";
  EXPECT_LE(written, 2 * total);
  auto c = cache(int64_t(64) << 20);  // and a third process finds them all
  for (int i = 0; i < kObjects; ++i) EXPECT_TRUE(Same(read_url(*c, "http://h/s" + std::to_string(i)), object_bytes(600000 + i * 1000, i)));
  EXPECT_EQ(counter(*c, "cache_hits"), kObjects);
}

TEST(Crc32c, KnownValuesAndContinuation) {
  EXPECT_EQ(detail::crc32c("123456789", 9), 0xE3069283u);  // the check value of CRC-32C
  EXPECT_EQ(detail::crc32c("", 0), 0u);
  const std::string a = object_bytes(100003, 5);
  EXPECT_EQ(detail::crc32c(a.data() + 77, a.size() - 77, detail::crc32c(a.data(), 77)), detail::crc32c(a.data(), a.size()));
}

// The cache holds private objects: its directory and entries are this user's alone, and a
// directory another user owns, or others may write to, is refused (they could plant files under
// the names the cache reads).
TEST_F(CacheTest, TheDirectoryAndItsEntriesAreTheOwnersAlone) {
  const mode_t old = ::umask(022);
  remote_->put("http://h/a", object_bytes(100000, 1), 1);
  auto c = cache(int64_t(1) << 20);
  read_url(*c, "http://h/a");
  ::umask(old);
  EXPECT_EQ(fs::status(dir_).permissions() & fs::perms::all, fs::perms::owner_all);
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.status().permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write) << e.path();
  // An older cache's 0755 directory and 0644 entries are made private.
  fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                            fs::perms::others_exec);
  const fs::path entry = dir_ / entry_of("http://h/a", 1);
  fs::permissions(entry, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
  auto again = cache(int64_t(1) << 20);
  read_url(*again, "http://h/a");
  EXPECT_EQ(counter(*again, "cache_hits"), 1);
  EXPECT_EQ(fs::status(dir_).permissions() & fs::perms::all, fs::perms::owner_all);
  EXPECT_EQ(fs::status(entry).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  // Writable by others: refused, naming the directory.
  fs::permissions(dir_, fs::perms::all);
  try {
    cache(int64_t(1) << 20);
    ADD_FAILURE() << "a cache directory anyone may write to was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(dir_.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("others may write to it"), std::string::npos) << e.what();
  }
  fs::permissions(dir_, fs::perms::owner_all);
  // Another user's: refused (as root, a directory handed to nobody; else one of root's).
  fs::path theirs = "/usr";
  if (::geteuid() == 0) {
    theirs = parent_ / "theirs";
    fs::create_directories(theirs);
    ASSERT_EQ(::chown(theirs.c_str(), 65534, 65534), 0);
    fs::permissions(theirs, fs::perms::owner_all);
  }
  CacheOptions o;
  o.dir = theirs.string();
  try {
    cached_file_system(remote_, o);
    ADD_FAILURE() << "another user's directory was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("belongs to uid"), std::string::npos) << e.what();
  }
}

// Each entry carries the CRC-32C of its bytes: a region of zeros (a crash mid-write, a bad
// disk) or a file planted under an entry's name with the right size is never served; it is
// counted, removed and downloaded again.
TEST_F(CacheTest, AnEntryWhoseBytesFailItsCheckIsNotServed) {
  const std::string a = object_bytes(300000, 4);
  remote_->put("http://h/a", a, 3);
  read_url(*cache(int64_t(1) << 20), "http://h/a");
  const fs::path entry = dir_ / entry_of("http://h/a", 3);
  {
    std::fstream f(entry, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(8192);
    const std::string zeros(4096, '\0');
    f.write(zeros.data(), std::streamsize(zeros.size()));
  }
  auto c = cache(int64_t(1) << 20);  // another process: it has not read this entry yet
  EXPECT_TRUE(Same(read_url(*c, "http://h/a"), a));
  EXPECT_EQ(counter(*c, "cache_corrupt"), 1);
  EXPECT_EQ(counter(*c, "cache_hits"), 0);
  EXPECT_TRUE(Same(read_url(*cache(int64_t(1) << 20), "http://h/a"), a));  // downloaded again, whole
  // A planted file of the right size (the object's bytes changed, and a footer copied from a
  // real entry): not served either.
  std::string planted = a;
  planted[1000] ^= 1;
  std::string footer(size_t(detail::kCacheFooterBytes), '\0');
  {
    std::ifstream in(entry, std::ios::binary);
    in.seekg(std::streamoff(a.size()));
    in.read(footer.data(), std::streamsize(footer.size()));
  }
  fs::remove(entry);
  {
    std::ofstream out(entry, std::ios::binary);
    out << planted << footer;
  }
  fs::permissions(entry, fs::perms::owner_read | fs::perms::owner_write);
  auto d = cache(int64_t(1) << 20);
  EXPECT_TRUE(Same(read_url(*d, "http://h/a"), a));
  EXPECT_EQ(counter(*d, "cache_corrupt"), 1);
}

TEST_F(CacheTest, ADirectoryThatCannotBeMadeIsAnError) {
  fs::create_directories(parent_);
  { std::ofstream(parent_ / "file") << "x"; }
  CacheOptions o;
  o.dir = (parent_ / "file" / "cache").string();
  EXPECT_THROW(cached_file_system(remote_, o), std::invalid_argument);
  o.dir = dir_.string(), o.limit_bytes = 0;
  EXPECT_THROW(cached_file_system(remote_, o), std::invalid_argument);
  o.dir = "";
  EXPECT_EQ(cached_file_system(remote_, o), remote_);  // no directory: no cache
}

}  // namespace
}  // namespace hdl
