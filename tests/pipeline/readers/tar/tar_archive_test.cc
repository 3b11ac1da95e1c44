// The tar parser and the streaming mode on shards made at test time by GNU tar (ustar, gnu,
// pax formats; long and unicode names; directories and symlinks) and Python's tarfile (USTAR,
// GNU, PAX with global headers): members, data offsets and sizes equal Python tarfile's, and
// the bytes at each offset are the files'; samples group as webdataset groups them; compressed
// shards stream through libarchive to the same samples; every kind of bad input is a Status
// naming shard, key and offset.
#include "pipeline/readers/tar/tar_archive.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "media/file_system.h"
#include "pipeline/readers/tar/shard_sample.h"
#include "pipeline/readers/tar/tar_stream.h"
#include "tests/pipeline/readers/tar_test_util.h"

namespace hdl {
namespace {

using testing::TarDir;

std::string bytes_of(int n, int seed) {
  std::string s(size_t(n), '\0');
  uint32_t x = uint32_t(seed) * 2654435761u + 1;
  for (auto& c : s) {
    x = x * 1664525u + 1013904223u;
    c = char(x >> 24);
  }
  return s;
}

const std::string kLongDir = std::string(90, 'd');
const std::string kLongName = kLongDir + "/" + std::string(60, 'k') + ".Seg.PNG";
const std::string kUnicode = "\xc3\xbcn\xc3\xaf/\xe6\x96\x87\xe4\xbb\xb6.txt";  // "ünï/文件.txt"

// The source files, in archive order: {name, bytes}.
std::vector<std::pair<std::string, std::string>> source_files() {
  return {{"n01/a001.jpg", bytes_of(1000, 1)}, {"n01/a001.cls", "3"},
          {"n01/a001.JSON", "{\"x\": 1}"},     {"n01/a002.jpg", bytes_of(513, 2)},
          {"n01/a002.cls", "7"},               {"n01/a003.jpg", ""},
          {kLongName, bytes_of(2048, 3)},      {kUnicode, "hello"}};
}

struct Member {
  std::string name;
  int64_t offset, size;
};

Result<std::vector<Member>> parse_file(const std::string& path, TarLimits limits = {}) {
  auto file = posix_file_system()->open(path);
  if (!file.is_ok()) return file.status();
  auto src = file_byte_source(**file);
  TarReader reader(*src, path, limits);
  std::vector<Member> out;
  for (;;) {
    auto m = reader.next();
    if (!m.is_ok()) return m.status();
    if (!*m) return out;
    out.push_back({(*m)->name, (*m)->data_offset, (*m)->size});
  }
}

Result<std::vector<StreamedSample>> stream_file(const std::string& path, ShardCompression c,
                                                TarLimits limits = {}) {
  auto file = posix_file_system()->open(path);
  if (!file.is_ok()) return file.status();
  SampleStream stream(open_member_stream(file_byte_source(**file), path, c, limits), path);
  std::vector<StreamedSample> out;
  for (;;) {
    StreamedSample s;
    auto r = stream.next(&s);
    if (!r.is_ok()) return r.status();
    if (!*r) return out;
    out.push_back(std::move(s));
  }
}

class TarArchiveTest : public ::testing::Test {
 protected:
  TarArchiveTest() : dir_("tar_archive") {
    for (auto& [name, bytes] : source_files()) dir_.write("src/" + name, bytes);
  }
  // "tar ... <files in order>" run in src/, writing ../<out>.
  std::string file_list() const {
    std::string list;
    for (auto& [name, bytes] : source_files()) list += " '" + name + "'";
    return list;
  }
  // Checks the members of `rel` against Python tarfile and against the files' bytes.
  void check_against_golden(const std::string& rel) {
    auto golden = dir_.golden(rel);
    auto members = parse_file(dir_.path(rel).string());
    ASSERT_TRUE(members.is_ok()) << members.status().to_string();
    ASSERT_EQ(members->size(), golden.size());
    std::string shard = dir_.read(rel);
    const auto src = source_files();
    std::map<std::string, std::string> files(src.begin(), src.end());
    for (size_t i = 0; i < golden.size(); ++i) {
      const Member& m = (*members)[i];
      EXPECT_EQ(m.name, golden[i].name);
      EXPECT_EQ(m.offset, golden[i].offset) << m.name;
      EXPECT_EQ(m.size, golden[i].size) << m.name;
      if (files.count(m.name))
        EXPECT_EQ(shard.substr(size_t(m.offset), size_t(m.size)), files[m.name]) << m.name;
    }
  }
  TarDir dir_;
};

TEST_F(TarArchiveTest, GnuTarFormatsMatchPythonTarfile) {
  for (std::string fmt : {"ustar", "gnu", "pax", "v7"}) {
    SCOPED_TRACE(fmt);
    // v7 cannot hold names over 100 bytes: only the short ones.
    std::string list = fmt == "v7" ? " n01/a001.jpg n01/a001.cls n01/a002.jpg" : file_list();
    ASSERT_TRUE(dir_.sh("cd src && tar cf ../" + fmt + ".tar --format=" + fmt + list));
    check_against_golden(fmt + ".tar");
    auto members = parse_file(dir_.path(fmt + ".tar").string());
    ASSERT_TRUE(members.is_ok());
    EXPECT_EQ(members->size(), fmt == "v7" ? 3u : source_files().size());
  }
}

TEST_F(TarArchiveTest, DirectoriesLinksAndMetaMembersAreSkipped) {
  ASSERT_TRUE(dir_.sh("cd src && ln -s a001.jpg n01/link.jpg && printf x > __index__ && "
                      "tar cf ../x.tar --format=gnu --no-recursion n01 n01/a001.jpg n01/link.jpg "
                      "__index__ n01/a001.cls && ln n01/a002.jpg n01/hard.jpg && "
                      "tar cf ../h.tar --format=pax n01/a002.jpg n01/hard.jpg"));
  auto members = parse_file(dir_.path("x.tar").string());
  ASSERT_TRUE(members.is_ok()) << members.status().to_string();
  ASSERT_EQ(members->size(), 3u);  // the dir and the symlink are not regular; __index__ is
  EXPECT_EQ((*members)[1].name, "__index__");
  check_against_golden("x.tar");
  auto samples = stream_file(dir_.path("x.tar").string(), ShardCompression::kNone);
  ASSERT_TRUE(samples.is_ok()) << samples.status().to_string();
  ASSERT_EQ(samples->size(), 1u);  // __index__ is webdataset metadata
  EXPECT_EQ((*samples)[0].fields.size(), 2u);
  check_against_golden("h.tar");  // the hard link member is not regular
}

TEST_F(TarArchiveTest, PythonTarfileFormatsIncludingPaxGlobalHeaders) {
  std::string files = "[";
  for (auto& [name, bytes] : source_files()) files += "'" + name + "', ";
  files += "]";
  ASSERT_TRUE(dir_.python(
      "import tarfile, os\n"
      "os.chdir('src')\n"
      "for fmt, name in [(tarfile.USTAR_FORMAT, 'ustar'), (tarfile.GNU_FORMAT, 'gnu'),\n"
      "                  (tarfile.PAX_FORMAT, 'pax')]:\n"
      "    kw = {'pax_headers': {'comment': 'global ' * 40}} if fmt == tarfile.PAX_FORMAT else {}\n"
      "    with tarfile.open('../py_' + name + '.tar', 'w', format=fmt, encoding='utf-8', **kw) as t:\n"
      "        t.add('n01', recursive=False)\n"
      "        for f in " + files + ":\n"
      "            t.add(f)\n"
      "        info = tarfile.TarInfo('n01/a009.lnk'); info.type = tarfile.SYMTYPE; info.linkname = 'x' * (99 if fmt == tarfile.USTAR_FORMAT else 150)\n"
      "        t.addfile(info)\n"));
  for (std::string fmt : {"ustar", "gnu", "pax"}) {
    SCOPED_TRACE(fmt);
    check_against_golden("py_" + fmt + ".tar");
  }
}

TEST_F(TarArchiveTest, SamplesGroupAsWebdataset) {
  ASSERT_TRUE(dir_.sh("cd src && printf z > n01/noext && printf z > n01/.hidden && "
                      "tar cf ../s.tar --format=gnu n01/a001.jpg n01/a001.cls n01/a001.JSON "
                      "n01/noext n01/a002.jpg n01/.hidden n01/a002.cls n01/a003.jpg '" + kLongName +
                      "' '" + kUnicode + "'"));
  auto samples = stream_file(dir_.path("s.tar").string(), ShardCompression::kNone);
  ASSERT_TRUE(samples.is_ok()) << samples.status().to_string();
  ASSERT_EQ(samples->size(), 5u);
  const auto& s = *samples;
  EXPECT_EQ(s[0].key, "n01/a001");
  EXPECT_EQ(s[0].url, dir_.path("s.tar").string());
  ASSERT_EQ(s[0].fields.size(), 3u);
  EXPECT_EQ(s[0].fields[2].ext, "json");  // lower-cased
  EXPECT_EQ(s[0].fields[2].member_name, "n01/a001.JSON");
  ASSERT_NE(s[0].find("jpg"), nullptr);
  EXPECT_EQ(std::string(s[0].find("jpg")->data.begin(), s[0].find("jpg")->data.end()), bytes_of(1000, 1));
  EXPECT_EQ(s[1].key, "n01/a002");  // the dotless and the hidden members belong to no sample
  EXPECT_EQ(s[1].fields.size(), 2u);
  EXPECT_EQ(s[2].key, "n01/a003");
  EXPECT_TRUE(s[2].fields[0].data.empty());
  EXPECT_EQ(s[3].key, kLongDir + "/" + std::string(60, 'k'));
  EXPECT_EQ(s[3].fields[0].ext, "seg.png");
  EXPECT_EQ(s[4].key, "\xc3\xbcn\xc3\xaf/\xe6\x96\x87\xe4\xbb\xb6");
  // Only wanted fields are read.
  auto file = posix_file_system()->open(dir_.path("s.tar").string());
  ASSERT_TRUE(file.is_ok());
  SampleStream only_cls(open_member_stream(file_byte_source(**file), "s.tar", ShardCompression::kNone),
                        "s.tar", SampleStreamOptions{{"cls"}});
  StreamedSample one;
  ASSERT_TRUE(*only_cls.next(&one));
  ASSERT_EQ(one.fields.size(), 1u);
  EXPECT_EQ(one.fields[0].ext, "cls");
}

TEST(ShardSampleTest, SplitMemberNameFollowsBasePlusExt) {
  std::string k, e;
  EXPECT_TRUE(split_member_name("a/b.c/d.tar.gz", &k, &e));
  EXPECT_EQ(k, "a/b.c/d");
  EXPECT_EQ(e, "tar.gz");
  EXPECT_TRUE(split_member_name("x.", &k, &e));
  EXPECT_EQ(e, "");
  EXPECT_FALSE(split_member_name("a/b.c/d", &k, &e));
  EXPECT_FALSE(split_member_name("dir/.hidden", &k, &e));
  EXPECT_FALSE(split_member_name("__key__", &k, &e));
  EXPECT_FALSE(split_member_name("__meta__/x.jpg", &k, &e));
  EXPECT_TRUE(split_member_name("__a/x.jpg", &k, &e));
}

TEST_F(TarArchiveTest, CompressedShardsStreamThroughLibarchive) {
  ASSERT_TRUE(dir_.sh("cd src && tar cf ../p.tar --format=pax" + file_list() +
                      " && tar czf ../p.tar.gz --format=pax" + file_list() + " && cp ../p.tar.gz ../p.tgz"));
  EXPECT_EQ(shard_compression("a/p.TGZ"), ShardCompression::kCompressed);
  EXPECT_EQ(shard_compression("p.tar"), ShardCompression::kNone);
  auto plain = stream_file(dir_.path("p.tar").string(), ShardCompression::kNone);
  auto gz = stream_file(dir_.path("p.tgz").string(), shard_compression("p.tgz"));
  ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();
  ASSERT_TRUE(gz.is_ok()) << gz.status().to_string();
  ASSERT_EQ(plain->size(), gz->size());
  for (size_t i = 0; i < plain->size(); ++i) {
    EXPECT_EQ((*plain)[i].key, (*gz)[i].key);
    ASSERT_EQ((*plain)[i].fields.size(), (*gz)[i].fields.size());
    for (size_t f = 0; f < (*plain)[i].fields.size(); ++f) {
      EXPECT_EQ((*plain)[i].fields[f].ext, (*gz)[i].fields[f].ext);
      EXPECT_EQ((*plain)[i].fields[f].data, (*gz)[i].fields[f].data);
      EXPECT_EQ((*gz)[i].fields[f].data_offset, -1);
    }
  }
  // A gzip stream given to the plain parser says what it is.
  auto wrong = parse_file(dir_.path("p.tar.gz").string());
  ASSERT_FALSE(wrong.is_ok());
  EXPECT_EQ(wrong.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(wrong.status().message().find("gzip"), std::string::npos);
  // A truncated gzip stream is an error, not a short shard.
  std::string gzb = dir_.read("p.tar.gz");
  dir_.write("cut.tar.gz", gzb.substr(0, gzb.size() / 2));
  auto cut = stream_file(dir_.path("cut.tar.gz").string(), ShardCompression::kCompressed);
  EXPECT_FALSE(cut.is_ok());
}

// A ustar header by hand: the tar spec, not our parser, decides these bytes.
std::string header(const std::string& name, const std::string& size_field, char type = '0',
                   bool signed_sum = false) {
  std::string h(512, '\0');
  std::memcpy(h.data(), name.data(), std::min<size_t>(name.size(), 100));
  std::memcpy(h.data() + 100, "0000644", 7);
  std::memcpy(h.data() + 124, size_field.data(), std::min<size_t>(size_field.size(), 12));
  h[156] = type;
  std::memcpy(h.data() + 257, "ustar\0" "00", 8);
  std::memset(h.data() + 148, ' ', 8);
  int64_t sum = 0;
  for (unsigned char c : h) sum += signed_sum ? int64_t(static_cast<signed char>(c)) : int64_t(c);
  char buf[8];
  std::snprintf(buf, sizeof buf, "%06o", unsigned(sum & 0777777));
  std::memcpy(h.data() + 148, buf, 7);
  return h;
}
std::string octal(int64_t v) {
  char buf[13];
  std::snprintf(buf, sizeof buf, "%011llo", static_cast<long long>(v));
  return buf;
}
std::string pad(std::string data) {
  data.resize((data.size() + 511) / 512 * 512, '\0');
  return data;
}

TEST_F(TarArchiveTest, Base256SizesAndSignedChecksums) {
  std::string b256(12, '\0');
  b256[0] = char(0x80);
  b256[11] = char(5);  // 5 bytes
  std::string shard = header("k1.bin", b256) + pad("hello") +
                      header("k2.\xe9\xe9\xe9", octal(3), '0', /*signed_sum=*/true) + pad("abc") +
                      std::string(1024, '\0');
  auto src = memory_byte_source(shard);
  TarReader reader(*src, "hand.tar");
  auto m = reader.next();
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_EQ((*m)->size, 5);
  EXPECT_EQ((*m)->data_offset, 512);
  m = reader.next();
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_EQ((*m)->name, "k2.\xe9\xe9\xe9");
  std::string data(3, '\0');
  ASSERT_TRUE(reader.read_data(data.data()).is_ok());
  EXPECT_EQ(data, "abc");
  m = reader.next();
  ASSERT_TRUE(m.is_ok());
  EXPECT_EQ(*m, nullptr);
}

// Expects `bytes` to fail with `code`, the message naming the shard and containing `parts`.
void expect_error(const std::string& bytes, StatusCode code, std::vector<std::string> parts,
                  TarLimits limits = {}) {
  SampleStream stream(open_member_stream(memory_byte_source(bytes), "bad.tar", ShardCompression::kNone, limits),
                      "bad.tar");
  Status st;
  for (int i = 0; i < 100 && st.is_ok(); ++i) {
    StreamedSample s;
    auto r = stream.next(&s);
    if (!r.is_ok()) st = r.status();
    else if (!*r) break;
  }
  ASSERT_FALSE(st.is_ok()) << "no error for " << parts[0];
  EXPECT_EQ(st.code(), code) << st.to_string();
  EXPECT_NE(st.message().find("tar shard \"bad.tar\""), std::string::npos) << st.message();
  for (auto& p : parts) EXPECT_NE(st.message().find(p), std::string::npos) << st.message() << " / " << p;
}

TEST_F(TarArchiveTest, BadInputsAreClearErrors) {
  ASSERT_TRUE(dir_.sh("cd src && tar cf ../g.tar --format=gnu" + file_list()));
  const std::string good = dir_.read("g.tar");
  auto members = parse_file(dir_.path("g.tar").string());
  ASSERT_TRUE(members.is_ok());
  const Member& second = (*members)[1];  // n01/a001.cls, header at offset - 512
  // Member data past the end of the file.
  expect_error(good.substr(0, size_t((*members)[0].offset + 100)), StatusCode::kInvalidData,
               {"key \"n01/a001\"", "byte 512", "truncated"});
  // A header cut short.
  expect_error(good.substr(0, size_t(second.offset - 200)), StatusCode::kInvalidData,
               {"header cut short", "byte " + std::to_string(second.offset - 512)});
  // A flipped byte in the second header.
  std::string flipped = good;
  flipped[size_t(second.offset - 512 + 20)] ^= 0x40;
  expect_error(flipped, StatusCode::kInvalidData, {"checksum", "byte " + std::to_string(second.offset - 512)});
  // Not a tar file at all.
  expect_error(std::string(2000, 'x'), StatusCode::kInvalidData, {"not a tar file", "byte 0"});
  // A member over the limit.
  TarLimits small;
  small.max_member_bytes = 600;
  expect_error(good, StatusCode::kResourceExhausted, {"key \"n01/a001\"", "byte 0", "limit"}, small);
  // A key that comes back after another; a field twice in one sample.
  std::string dup = header("a.jpg", octal(1)) + pad("1") + header("b.jpg", octal(1)) + pad("2") +
                    header("a.cls", octal(1)) + pad("3");
  expect_error(dup, StatusCode::kInvalidData, {"key \"a\"", "byte 2048", "duplicate key"});
  std::string twice = header("a.jpg", octal(1)) + pad("1") + header("a.JPG", octal(1)) + pad("2");
  expect_error(twice, StatusCode::kInvalidData, {"key \"a\"", "byte 1024", "\"jpg\" appears twice"});
  // Malformed size and PAX records.
  expect_error(header("a.jpg", "12x4"), StatusCode::kInvalidData, {"malformed size", "byte 0"});
  std::string pax = "30 path=abc\n";
  expect_error(header("pax", octal(int64_t(pax.size())), 'x') + pad(pax) + header("a.jpg", octal(0)),
               StatusCode::kInvalidData, {"malformed PAX"});
  // An extended header with nothing after it.
  std::string ln = "long.jpg";
  expect_error(header("././@LongLink", octal(int64_t(ln.size())), 'L') + pad(ln), StatusCode::kInvalidData,
               {"not followed by its member"});
  // Sparse members are refused, not misread.
  expect_error(header("s.jpg", octal(0), 'S'), StatusCode::kUnsupported, {"sparse"});
}

TEST_F(TarArchiveTest, EndsAtZeroBlockOrBlockBoundary) {
  std::string one = header("a.jpg", octal(3)) + pad("abc");
  for (std::string tail : {std::string(), std::string(512, '\0'), std::string(1024, '\0') + "junk"}) {
    const std::string bytes = one + tail;  // the source does not own its bytes
    auto src = memory_byte_source(bytes);
    TarReader r(*src, "t.tar");
    auto m = r.next();
    ASSERT_TRUE(m.is_ok() && *m) << m.status().to_string();
    m = r.next();
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    EXPECT_EQ(*m, nullptr);
  }
  auto empty = memory_byte_source("");
  TarReader r(*empty, "empty.tar");
  auto m = r.next();
  ASSERT_TRUE(m.is_ok());
  EXPECT_EQ(*m, nullptr);
}

}  // namespace
}  // namespace hdl
