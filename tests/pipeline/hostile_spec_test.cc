// Hostile configuration: JSON pipeline specs and file lists nobody checked. Each must fail with
// a ConfigError naming where (JSON path, or list and line), never a stack overflow, a hang or
// memory out of proportion to the text. The inputs are generated here. The few wall-clock
// checks are hang guards with generous bounds, not speed tests.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <signal.h>
#include <sys/stat.h>

#include "pipeline/dataset.h"
#include "pipeline/errors.h"
#include "pipeline/graph.h"
#include "pipeline/spec_json.h"
#include "tests/test_util.h"

namespace hdl {
namespace {
namespace fs = std::filesystem;

// The ConfigError text of `f()` ("" and a test failure when it does not throw one).
// The ConfigError text of `f()`, or "" when it throws none.
template <typename F>
std::string error_or_empty(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

template <typename F>
std::string config_error(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ConfigError";
  return "";
}

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

std::string spec_with_args(const std::string& args) {
  return R"({"nodes": [{"name": "r", "op": "file_reader", "args": {"file_list": "x.txt"}},
                       {"name": "d", "op": "image_decoder", "inputs": [{"node": "r"}], "args": )" +
         args + R"(}], "outputs": [{"node": "d"}]})";
}

// ---- JSON specs ----------------------------------------------------------------------------

TEST(HostileSpec, DeepNestingIsRefusedBeforeParsing) {
  const auto start = std::chrono::steady_clock::now();
  for (const char* open : {"[", "{\"a\":"}) {
    std::string deep;
    for (int i = 0; i < 100000; ++i) deep += open;  // unterminated too: refused before parsing
    std::string e = config_error([&] { spec_from_json(deep); });
    EXPECT_HAS(e, "$: nested deeper than 64 levels (byte " + std::to_string(64 * std::strlen(open)) + ", line 1)");
  }
  // Nested inside a valid document, closed properly: the same, at its byte.
  std::string arg = std::string(100000, '[') + std::string(100000, ']');
  std::string e = config_error([&] { spec_from_json(spec_with_args(R"({"x": )" + arg + "}")); });
  EXPECT_HAS(e, "nested deeper than 64 levels");
  EXPECT_HAS(e, "line 2");
  // Brackets inside strings do not count; 64 levels are fine.
  std::string ok = R"({"nodes": [], "outputs": [], "x": ")" + std::string(1000, '[') + R"("})";
  e = error_or_empty([&] { spec_from_json(ok); });
  EXPECT_EQ(e.find("nested deeper"), std::string::npos) << e;
  std::string sixty_four = std::string(63, '[') + std::string(63, ']');  // inside the object: 64
  e = error_or_empty([&] { spec_from_json(R"({"nodes": )" + sixty_four + "}"); });
  EXPECT_EQ(e.find("nested deeper"), std::string::npos) << e;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10)) << "hang guard";
}

TEST(HostileSpec, HugeTextIsRefusedBeforeParsing) {
  std::string huge = spec_with_args(R"({"x": ")" + std::string(kSpecMaxBytes, 'a') + R"("})");
  std::string e = config_error([&] { spec_from_json(huge); });
  EXPECT_HAS(e, "$: spec is ");
  EXPECT_HAS(e, "over the limit of 16777216");
}

TEST(HostileSpec, HugeArgumentListsParseLinearly) {
  // A million numbers (about 7 MB) is within the size limit: parsed, typed, kept.
  std::string list = "[";
  for (int i = 0; i < 1000000; ++i) list += (i ? ",1" : "1");
  list += "]";
  const auto start = std::chrono::steady_clock::now();
  PipelineSpec spec = spec_from_json(spec_with_args(R"({"xs": )" + list + "}"));
  EXPECT_EQ(spec.nodes()[1].args.at("xs").get<std::vector<int64_t>>().size(), 1000000u);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10)) << "hang guard";
  // A long name is quoted cut short in the message.
  std::string e = config_error([&] {
    spec_from_json(R"({"nodes": [], "outputs": [{"node": ")" + std::string(1 << 20, 'n') + R"("}]})");
  });
  EXPECT_HAS(e, "$.outputs[0].node: no node named \"nnnn");
  EXPECT_HAS(e, "... (1048576 bytes)");
  EXPECT_LT(e.size(), 300u);
}

TEST(HostileSpec, AbsurdNumbersNameTheirPath) {
  std::string e = config_error([&] { spec_from_json(spec_with_args(R"({"seed": 18446744073709551615})")); });
  EXPECT_HAS(e, "$.nodes[1].args.seed: integer 18446744073709551615 is out of range");
  e = config_error([&] { spec_from_json(spec_with_args(R"({"size": [1, 9223372036854775808]})")); });
  EXPECT_HAS(e, "$.nodes[1].args.size[1]: integer 9223372036854775808 is out of range");
  // Past a double: nlohmann-json's lexer refuses the literal (it cannot say where; it quotes it).
  e = config_error([&] { spec_from_json(spec_with_args(R"({"scale": 1e400})")); });
  EXPECT_HAS(e, "$: not valid JSON: ");
  EXPECT_HAS(e, "number overflow parsing '1e400'");
  e = config_error([&] { spec_from_json(spec_with_args(R"({"scale": [0.5, -1e999]})")); });
  EXPECT_HAS(e, "number overflow parsing '-1e999'");
  // An output index that does not fit an int.
  for (const char* out : {"4294967296", "18446744073709551615", "-1", "1.5", "[0]"}) {
    e = config_error([&] {
      spec_from_json(std::string(R"({"nodes": [{"name": "a", "op": "x"}], "outputs": [{"node": "a", "output": )") + out + "}]}");
    });
    EXPECT_HAS(e, "$.outputs[0].output: expected an output index in [0, 2147483647]");
  }
  // 1e308 and -0 are numbers JSON and a double hold: parsed as they are.
  PipelineSpec spec = spec_from_json(spec_with_args(R"({"big": 1e308, "zero": -0, "negzero": -0.0})"));
  EXPECT_EQ(spec.nodes()[1].args.at("big").get<double>(), 1e308);
  EXPECT_EQ(spec.nodes()[1].args.at("zero").get<int64_t>(), 0);
  EXPECT_TRUE(std::signbit(spec.nodes()[1].args.at("negzero").get<double>()));
}

// Absurd values that parse are refused by the operator's schema when the pipeline is built,
// naming the node and the argument.
TEST(HostileSpec, AbsurdArgumentValuesAreRefusedByTheSchema) {
  const fs::path dir = fs::path(HDL_BINARY_DIR) / "tmp" / "hostile_spec";
  fs::create_directories(dir);
  const fs::path list = dir / "list.txt";
  std::ofstream(list) << "a.jpg 0\n";
  auto build = [&](const std::string& args) {
    std::string text = spec_with_args(args);
    text.replace(text.find("x.txt"), 5, list.string());
    Graph::build(spec_from_json(text));
  };
  std::string e = config_error([&] { build(R"({"max_pixels": 1e308})"); });
  EXPECT_HAS(e, "max_pixels");
  e = config_error([&] { build(R"({"max_scans": 9223372036854775807})"); });
  EXPECT_HAS(e, "max_scans");
  EXPECT_HAS(e, "must be in [0, 1000000]");
  e = config_error([&] { build(R"({"max_pixels": -0})"); });
  EXPECT_HAS(e, "max_pixels");
}

// ---- file lists ----------------------------------------------------------------------------

class HostileFileList : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(HDL_BINARY_DIR) / "tmp" / "hostile_list" /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  std::string write(const std::string& bytes) {
    const fs::path p = dir_ / "list.txt";
    std::ofstream(p, std::ios::binary) << bytes;
    return p.string();
  }
  std::string error_for(const std::string& bytes) {
    const std::string p = write(bytes);
    return config_error([&] { Dataset::file_list(p); });
  }
  fs::path dir_;
};

TEST_F(HostileFileList, BinaryJunkNamesTheLine) {
  std::string e = error_for(std::string("a.jpg 1\nb\0c.jpg 2\n", 18));
  EXPECT_HAS(e, "list.txt\" line 2: NUL byte in \"b\\x00c.jpg 2\" (a binary file?)");
  e = error_for("a.jpg 1\rb.jpg 2\rc.jpg 3\n");  // classic Mac line ends: one line with CRs
  EXPECT_HAS(e, "line 1: CR byte inside \"a.jpg 1\\x0db.jpg 2\\x0dc.jpg 3\" (CR line endings?");
  e = error_for("a.jpg 1\nb.jpg 99999999999999999999\n");
  EXPECT_HAS(e, "line 2: label \"99999999999999999999\" is out of range (int64)");
  e = error_for("a.jpg 1\nb.jpg 0x10\n");
  EXPECT_HAS(e, "line 2: label \"0x10\" is not an integer");
  e = error_for("a.jpg 1\n\xff\xfe\x01\x02 3 x\n");  // junk bytes are shown escaped
  EXPECT_HAS(e, "line 2: label \"x\" is not an integer");
  e = error_for("a.jpg 1\n\xff\xfe\x01\x02\n");
  EXPECT_HAS(e, "line 2: expected \"path label\", got \"\\xff\\xfe\\x01\\x02\"");
  e = error_for("a.jpg 1\n" + std::string(5000, 'p') + " 2\n");
  EXPECT_HAS(e, "line 2: path is 5000 bytes, longer than PATH_MAX (4095)");
}

TEST_F(HostileFileList, MegabyteLineIsRefusedWithoutReadingItWhole) {
  std::string e = error_for("a.jpg 1\n" + std::string(size_t(8) << 20, 'x'));  // 8 MB, no newline
  EXPECT_HAS(e, "line 2: line is longer than the limit of 65536 bytes (not a file list?)");
  EXPECT_LT(e.size(), 300u);
}

TEST_F(HostileFileList, DocumentedAcceptances) {
  // CRLF and LF mixed, a byte order mark, negative labels, int64's extremes, non-UTF-8 paths,
  // other control bytes in a name (Linux allows them).
  const std::string p = write("\xEF\xBB\xBF" "a.jpg 1\r\nb.jpg -1\n\nc\xff.jpg -9223372036854775808\r\nd.jpg 9223372036854775807\n"
                              "e\x01\x1b.jpg 5");
  const Dataset d = Dataset::file_list(p);
  ASSERT_EQ(d.size(), 5);
  EXPECT_EQ(d.relative_path(4), "e\x01\x1b.jpg");
  EXPECT_EQ(d.relative_path(0), "a.jpg");
  EXPECT_EQ(d.label(1), -1);
  EXPECT_EQ(d.relative_path(2), "c\xff.jpg");
  EXPECT_EQ(d.label(2), INT64_MIN);
  EXPECT_EQ(d.label(3), INT64_MAX);
}

TEST_F(HostileFileList, ListOfUnknownSizeIsReadWhole) {
  // A FIFO has no size: the parser starts from the smallest buffer and must grow it, keeping
  // the line cut at the first read whole, and still refuse an over-long line.
  ::signal(SIGPIPE, SIG_IGN);  // the refused list's writer finds the reader gone
  const auto through_fifo = [&](const std::string& text) {
    const fs::path p = dir_ / "list.fifo";
    fs::remove(p);
    EXPECT_EQ(::mkfifo(p.c_str(), 0600), 0);
    std::thread writer([&] { std::ofstream(p, std::ios::binary) << text; });
    std::string error;
    Dataset d;
    try {
      d = Dataset::file_list(p.string(), "root");
    } catch (const ConfigError& e) {
      error = e.what();
    }
    writer.join();
    return std::make_pair(std::move(d), error);
  };
  std::string text;
  for (int i = 0; i < 50000; ++i) text += "dir/img_" + std::to_string(i) + ".jpg " + std::to_string(i % 7) + "\n";
  auto [d, error] = through_fifo(text);
  ASSERT_EQ(error, "");
  ASSERT_EQ(d.size(), 50000);
  EXPECT_EQ(d.relative_path(0), "dir/img_0.jpg");
  EXPECT_EQ(d.relative_path(49999), "dir/img_49999.jpg");
  EXPECT_EQ(d.label(49999), 49999 % 7);
  error = through_fifo("a.jpg 1\n" + std::string(size_t(2) << 20, 'x')).second;
  EXPECT_HAS(error, "line 2: line is longer than the limit of 65536 bytes");
}

TEST_F(HostileFileList, MillionsOfLinesParseLinearly) {
  std::string text;
  constexpr int kLines = 1000000;
  text.reserve(size_t(kLines) * 40);
  for (int i = 0; i < kLines; ++i) text += "train/n" + std::to_string(i % 1000) + "/img_" + std::to_string(i) + ".JPEG " + std::to_string(i % 1000) + "\n";
  const std::string p = write(text);
  const auto start = std::chrono::steady_clock::now();
  const Dataset d = Dataset::file_list(p);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20)) << "hang guard";
  ASSERT_EQ(d.size(), kLines);
  EXPECT_EQ(d.relative_path(kLines - 1), "train/n999/img_999999.JPEG");
  EXPECT_EQ(d.label(kLines - 1), 999);
}

}  // namespace
}  // namespace hdl
