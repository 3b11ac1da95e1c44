// The shard index: built from shards GNU tar made, every field's (offset, size) reads the
// file's bytes with one pread; encode/parse round-trips (names with spaces and '%' too); DALI's
// stamp-less v1.2 files parse and older versions are kUnsupported; corrupt files are errors
// naming the line; load_or_build_index writes, reuses, and rebuilds a stale, corrupt or
// stamp-less sidecar with one warning.
#include "pipeline/readers/tar/shard_index.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/time.h>

#include "media/file_system.h"
#include "tests/pipeline/readers/tar_test_util.h"

namespace hdl {
namespace {

using testing::TarDir;

class ShardIndexTest : public ::testing::Test {
 protected:
  ShardIndexTest() : dir_("shard_index") {
    dir_.write("src/k1.jpg", std::string(700, 'a'));
    dir_.write("src/k1.cls", "1");
    dir_.write("src/k 2.JPG", std::string(1500, 'b'));
    dir_.write("src/k 2.txt", "100%");
    dir_.write("src/d/k3.seg.png", std::string(10, 'c'));
    EXPECT_TRUE(dir_.sh("cd src && tar cf ../s.tar --format=pax k1.jpg k1.cls 'k 2.JPG' 'k 2.txt' d/k3.seg.png"));
    shard_ = dir_.path("s.tar").string();
  }
  Result<ShardIndex> build() {
    auto f = posix_file_system()->open(shard_);
    if (!f.is_ok()) return f.status();
    return build_shard_index(**f, shard_);
  }
  TarDir dir_;
  std::string shard_;
};

TEST_F(ShardIndexTest, FieldsReadWithOnePread) {
  auto index = build();
  ASSERT_TRUE(index.is_ok()) << index.status().to_string();
  EXPECT_TRUE(index->stamped);
  EXPECT_EQ(index->url, shard_);
  ASSERT_EQ(index->samples.size(), 3u);
  EXPECT_EQ(index->samples[1].key, "k 2");
  EXPECT_EQ(index->samples[1].fields[0].ext, "jpg");
  EXPECT_EQ(index->samples[2].key, "d/k3");
  EXPECT_EQ(index->samples[2].fields[0].ext, "seg.png");
  auto golden = dir_.golden("s.tar");
  auto f = posix_file_system()->open(shard_);
  size_t g = 0;
  for (const auto& s : index->samples)
    for (const auto& field : s.fields) {
      ASSERT_LT(g, golden.size());
      EXPECT_EQ(field.member_name, golden[g].name);
      EXPECT_EQ(field.offset, golden[g].offset);
      EXPECT_EQ(field.size, golden[g].size);
      std::string data(size_t(field.size), '\0');
      ASSERT_TRUE(read_exactly(**f, field.offset, field.size, data.data()).is_ok());
      EXPECT_EQ(data, dir_.read("src/" + field.member_name));
      ++g;
    }
  EXPECT_EQ(g, golden.size());
}

TEST_F(ShardIndexTest, EncodeParseRoundTrip) {
  auto index = build();
  ASSERT_TRUE(index.is_ok());
  std::string bytes = encode_shard_index(*index);
  EXPECT_EQ(bytes.substr(0, 10), "v1.2 3 hdl");
  EXPECT_NE(bytes.find("JPG "), std::string::npos);        // the suffix as archived, for DALI
  EXPECT_NE(bytes.find("k%202.txt"), std::string::npos);  // no spaces inside a token
  auto parsed = parse_shard_index(bytes, shard_, "s.tar.idx");
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  ASSERT_EQ(parsed->samples.size(), index->samples.size());
  EXPECT_EQ(parsed->shard_size, index->shard_size);
  EXPECT_EQ(parsed->shard_modified_ns, index->shard_modified_ns);
  for (size_t i = 0; i < parsed->samples.size(); ++i) {
    EXPECT_EQ(parsed->samples[i].key, index->samples[i].key);
    ASSERT_EQ(parsed->samples[i].fields.size(), index->samples[i].fields.size());
    for (size_t j = 0; j < parsed->samples[i].fields.size(); ++j) {
      const auto &a = parsed->samples[i].fields[j], &b = index->samples[i].fields[j];
      EXPECT_EQ(a.ext, b.ext);
      EXPECT_EQ(a.member_name, b.member_name);
      EXPECT_EQ(a.offset, b.offset);
      EXPECT_EQ(a.size, b.size);
    }
  }
  EXPECT_EQ(encode_shard_index(*parsed), bytes);
}

TEST_F(ShardIndexTest, DaliFilesAndCorruptFiles) {
  // What DALI's wds2idx writes (no stamp; "__meta__" members listed): it parses.
  auto dali = parse_shard_index("v1.2 2\njpg 512 700 k1.jpg cls 2048 1 k1.cls\njpg 3072 5 k2.jpg\n", "s.tar", "d.idx");
  ASSERT_TRUE(dali.is_ok()) << dali.status().to_string();
  EXPECT_FALSE(dali->stamped);
  EXPECT_EQ(dali->samples.size(), 2u);
  EXPECT_EQ(parse_shard_index("v1.1 1\njpg 512 700\n", "s", "d.idx").status().code(), StatusCode::kUnsupported);
  struct Case {
    const char* bytes;
    const char* says;
  } cases[] = {
      {"", "no version"},
      {"hello world\n", "not a webdataset index"},
      {"v9.9 1\n", "unsupported index version"},
      {"v1.2 x\n", "no sample count"},
      {"v1.2 1 hdl1 10\n", "malformed stamp"},
      {"v1.2 2\njpg 512 1 a.jpg\n", "ends after 1 of 2"},
      {"v1.2 1\njpg 512 1\n", "groups of four"},
      {"v1.2 1\njpg 513 1 a.jpg\n", "multiple of 512"},
      {"v1.2 1\njpg 0 1 a.jpg\n", "no room for a header"},
      {"v1.2 2\njpg 512 1 a.jpg\njpg 1024 1 b.jpg\n", "no room for a header"},
      {"v1.2 1\njpg 512 -1 a.jpg\n", "malformed offset"},
      {"v1.2 1 hdl1 600 0\njpg 512 100 a.jpg\n", "past the shard's size"},
      {"v1.2 1\npng 512 1 a.jpg\n", "does not match"},
      {"v1.2 1\njpg 512 1 a.jpg jpg 1536 1 b.jpg\n", "two samples"},
      {"v1.2 2\njpg 512 1 a.jpg\ncls 1536 1 a.cls\n", "split over two lines"},
      {"v1.2 3\njpg 512 1 a.jpg\njpg 1536 1 b.jpg\ncls 2560 1 a.cls\n", "duplicate key"},
      {"v1.2 1\njpg 512 1 a.jpg\njpg 1536 1 b.jpg\n", "more sample lines"},
      {"v1.2 99999999\n", "more than the file can hold"},
  };
  for (const auto& c : cases) {
    auto r = parse_shard_index(c.bytes, "s.tar", "bad.idx");
    ASSERT_FALSE(r.is_ok()) << c.bytes;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidData) << c.bytes;
    EXPECT_NE(r.status().message().find("shard index \"bad.idx\""), std::string::npos);
    EXPECT_NE(r.status().message().find(c.says), std::string::npos) << r.status().message();
  }
}

TEST_F(ShardIndexTest, LoadOrBuildWritesReusesAndRebuilds) {
  auto fs = posix_file_system();
  IndexOptions opts;
  std::string warning;
  const std::string idx = shard_ + ".idx";
  auto first = load_or_build_index(*fs, shard_, opts, &warning);
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  EXPECT_EQ(warning, "");
  ASSERT_TRUE(std::filesystem::exists(idx));
  // A valid sidecar is used as it is: drop a sample from it and see the result follow.
  std::string bytes = dir_.read("s.tar.idx");
  auto parsed = parse_shard_index(bytes, shard_, idx);
  ASSERT_TRUE(parsed.is_ok());
  parsed->samples.pop_back();
  ASSERT_TRUE(write_shard_index(idx, *parsed).is_ok());
  auto second = load_or_build_index(*fs, shard_, opts, &warning);
  ASSERT_TRUE(second.is_ok());
  EXPECT_EQ(warning, "");
  EXPECT_EQ(second->samples.size(), 2u);
  // kNone ignores it.
  IndexOptions none;
  none.policy = IndexCachePolicy::kNone;
  EXPECT_EQ(load_or_build_index(*fs, shard_, none, &warning)->samples.size(), 3u);
  // A shard modified since: stale, rebuilt, rewritten, one warning.
  struct timeval times[2] = {{1000, 0}, {1000, 0}};
  ASSERT_EQ(::utimes(shard_.c_str(), times), 0);
  auto third = load_or_build_index(*fs, shard_, opts, &warning);
  ASSERT_TRUE(third.is_ok());
  EXPECT_EQ(third->samples.size(), 3u);
  EXPECT_NE(warning.find("is stale"), std::string::npos) << warning;
  EXPECT_NE(warning.find(idx), std::string::npos) << warning;
  EXPECT_EQ(load_or_build_index(*fs, shard_, opts, &warning)->samples.size(), 3u);
  EXPECT_EQ(warning, "");  // the rewritten sidecar is valid
  // Corrupt and stamp-less sidecars are rebuilt with a warning.
  dir_.write("s.tar.idx", "v1.2 1\ngarbage\n");
  EXPECT_TRUE(load_or_build_index(*fs, shard_, opts, &warning).is_ok());
  EXPECT_NE(warning.find("does not parse"), std::string::npos) << warning;
  dir_.write("s.tar.idx", "v1.2 1\njpg 512 700 k1.jpg\n");
  IndexOptions ro;
  ro.policy = IndexCachePolicy::kReadOnly;
  EXPECT_EQ(load_or_build_index(*fs, shard_, ro, &warning)->samples.size(), 3u);
  EXPECT_NE(warning.find("no size/mtime stamp"), std::string::npos) << warning;
  EXPECT_EQ(dir_.read("s.tar.idx"), "v1.2 1\njpg 512 700 k1.jpg\n");  // read-only: untouched
  // A shard that is not a tar fails; a missing one is kNotFound.
  dir_.write("junk.tar", std::string(3000, 'j'));
  auto junk = load_or_build_index(*fs, dir_.path("junk.tar").string(), opts, &warning);
  ASSERT_FALSE(junk.is_ok());
  EXPECT_NE(junk.status().message().find("not a tar file"), std::string::npos);
  EXPECT_EQ(load_or_build_index(*fs, dir_.path("none.tar").string(), opts, &warning).status().code(),
            StatusCode::kNotFound);
}

}  // namespace
}  // namespace hdl
