#include "pipeline/dataset.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

#include "pipeline/errors.h"
#include "tests/test_util.h"

namespace hdl {
namespace {
namespace fs = std::filesystem;

// Runs torchvision's ImageFolder (the independent reference) and returns its output lines:
// "CLASS name idx" lines, then "SAMPLE relative_path label" lines.
std::vector<std::string> torchvision_image_folder(const fs::path& root) {
  const std::string cmd =
      "/usr/bin/python3 -c 'import sys, os, torchvision\n"
      "ds = torchvision.datasets.ImageFolder(sys.argv[1], loader=lambda p: p)\n"
      "for c, i in ds.class_to_idx.items(): print(\"CLASS\", c, i)\n"
      "for p, l in ds.samples: print(\"SAMPLE\", os.path.relpath(p, sys.argv[1]), l)\n' '" +
      root.string() + "' 2>/dev/null";
  std::vector<std::string> lines;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return lines;
  char buf[4096];
  while (fgets(buf, sizeof buf, f)) {
    std::string s(buf);
    if (!s.empty() && s.back() == '\n') s.pop_back();
    lines.push_back(s);
  }
  pclose(f);
  return lines;
}

std::vector<std::string> our_lines(const Dataset& d) {
  std::vector<std::string> lines;
  for (const auto& [c, i] : d.class_to_idx()) lines.push_back("CLASS " + c + " " + std::to_string(i));
  for (int64_t i = 0; i < d.size(); ++i)
    lines.push_back("SAMPLE " + std::string(d.relative_path(i)) + " " + std::to_string(d.label(i)));
  return lines;
}

TEST(Dataset, ImageFolderMatchesTorchvisionOnTheCorpus) {
  HDL_REQUIRE_CORPUS();
  const fs::path root = testing::corpus_dir() / "imagenet" / "train";
  const Dataset d = Dataset::image_folder(root.string(), default_image_extensions());
  const auto reference = torchvision_image_folder(root);
  ASSERT_FALSE(reference.empty()) << "torchvision reference unavailable";
  EXPECT_EQ(our_lines(d), reference);
  EXPECT_GT(d.size(), 2000);
}

class TreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(HDL_BINARY_DIR) / "tmp" / ("tree_" + std::to_string(::getpid()));
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void touch(const std::string& rel) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << "x";
  }
  fs::path root_;
};

TEST_F(TreeTest, EdgeCasesMatchTorchvision) {
  // Mixed-case extensions, nested folders, names that sort differently by byte and by case,
  // files that are not images, a symlinked class folder.
  touch("b/x.JPEG");
  touch("b/a.jpg");
  touch("b/sub/z.png");
  touch("b/sub2/a.JpG");
  touch("b/Sub/c.bmp");
  touch("b/notes.txt");
  touch("B_upper/one.webp");
  touch("a/deep/er/img.tiff");
  touch("a/img.PGM");
  touch("a/.hidden.jpg");
  fs::create_directories(root_ / "real_c");
  touch("real_c/q.jpeg");
  fs::create_directory_symlink(root_ / "real_c", root_ / "c_link");
  const Dataset d = Dataset::image_folder(root_.string(), default_image_extensions());
  const auto reference = torchvision_image_folder(root_);
  ASSERT_FALSE(reference.empty());
  EXPECT_EQ(our_lines(d), reference);
}

TEST_F(TreeTest, EmptyClassIsRefusedLikeTorchvision) {
  touch("a/x.jpg");
  touch("empty/readme.txt");
  try {
    Dataset::image_folder(root_.string(), default_image_extensions());
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("found no valid file for the classes empty"), std::string::npos) << e.what();
  }
  EXPECT_EQ(Dataset::image_folder(root_.string(), default_image_extensions(), true).size(), 1);
}

TEST_F(TreeTest, CustomExtensionsAreCaseInsensitive) {
  touch("a/x.JPEG");
  touch("a/y.png");
  const Dataset d = Dataset::image_folder(root_.string(), {".jpeg"});
  ASSERT_EQ(d.size(), 1);
  EXPECT_EQ(d.relative_path(0), "a/x.JPEG");
  EXPECT_EQ(d.path(0), (root_ / "a" / "x.JPEG").string());
}

TEST_F(TreeTest, FileList) {
  fs::create_directories(root_);
  std::ofstream(root_ / "list.txt") << "# comment\n"
                                     << "train/a b.jpg 3\n"
                                     << "\n"
                                     << "  train/c.jpg\t7  \n";
  const Dataset d = Dataset::file_list((root_ / "list.txt").string());
  ASSERT_EQ(d.size(), 2);
  EXPECT_EQ(d.relative_path(0), "train/a b.jpg");
  EXPECT_EQ(d.label(0), 3);
  EXPECT_EQ(d.relative_path(1), "train/c.jpg");
  EXPECT_EQ(d.label(1), 7);
  EXPECT_EQ(d.root(), root_.string());

  std::ofstream(root_ / "bad.txt") << "a.jpg 1\nb.jpg x\n";
  try {
    Dataset::file_list((root_ / "bad.txt").string());
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("line 2: label \"x\" is not an integer"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Dataset::file_list((root_ / "missing.txt").string()), ConfigError);
}

TEST(Dataset, FileListFromTextIsTheSameParser) {
  const Dataset d = Dataset::file_list_from_text("# c\ntrain/a b.jpg 3\n\n  train/c.jpg\t7  \r\n", "mem", "/data");
  ASSERT_EQ(d.size(), 2);
  EXPECT_EQ(d.relative_path(0), "train/a b.jpg");
  EXPECT_EQ(d.label(1), 7);
  EXPECT_EQ(d.path(1), "/data/train/c.jpg");
  try {
    Dataset::file_list_from_text("a.jpg 1\nb.jpg x\n", "mem", "");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("file_list \"mem\" line 2: label \"x\""), std::string::npos) << e.what();
  }
  EXPECT_THROW(Dataset::file_list_from_text("# only a comment\n", "mem", ""), ConfigError);
}

TEST(Dataset, FromSamplesKeepsPathsByteForByte) {
  // No text format in between: spaces, a newline, a '#' at the start, non-UTF-8 bytes stay.
  const std::vector<std::string> paths = {"train/a b.jpg", "odd\nname.jpg", "#hash.jpg", "x\xff.jpg"};
  const Dataset d = Dataset::from_samples(paths, {3, -1, 7, 0}, "/data");
  ASSERT_EQ(d.size(), 4);
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(d.relative_path(i), paths[i]);
  EXPECT_EQ(d.path(1), "/data/odd\nname.jpg");
  EXPECT_EQ(d.label(1), -1);
  EXPECT_EQ(d.label(2), 7);
  EXPECT_TRUE(d.classes().empty());
  // No labels: each sample's index (DALI's file reader does the same). No root: as given.
  const Dataset plain = Dataset::from_samples({"/abs/x.jpg", "rel/y.jpg"}, {});
  EXPECT_EQ(plain.label(0), 0);
  EXPECT_EQ(plain.label(1), 1);
  EXPECT_EQ(plain.path(0), "/abs/x.jpg");
  EXPECT_EQ(plain.path(1), "rel/y.jpg");
  EXPECT_EQ(Dataset::from_samples({}, {}).size(), 0);
}

TEST(Dataset, FromSamplesNamesTheBadEntry) {
  auto message = [](const std::vector<std::string>& paths, const std::vector<int64_t>& labels) {
    try {
      Dataset::from_samples(paths, labels);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(message({"a.jpg", "b.jpg"}, {1}), "samples: 2 files and 1 labels (give one label per file, or none)");
  EXPECT_EQ(message({"a.jpg", ""}, {}), "samples: files[1] is empty");
  EXPECT_EQ(message({std::string("a\0b.jpg", 7)}, {}), "samples: files[0] holds a NUL byte");
  const std::string msg = message({"a.jpg", "b.jpg", std::string(5000, 'x')}, {});
  EXPECT_NE(msg.find("samples: files[2] is 5000 bytes, longer than PATH_MAX (4095)"), std::string::npos) << msg;
}

TEST(Dataset, FileListWithSegments) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const FileListFormat f = FileListFormat::kPathLabelStartEnd;
  // Paths with spaces, the same video on several lines, an open end, tabs, CRLF, a comment.
  const Dataset d = Dataset::file_list_from_text(
      "# Charades-style\nvideos/a b.mp4 3 1.5 4\nvideos/a b.mp4 7 0 -\n\n  c.mp4\t2\t10\t12.25  \r\n", "ann.txt", "/data", f);
  ASSERT_EQ(d.size(), 3);
  ASSERT_TRUE(d.has_segments());
  EXPECT_EQ(d.relative_path(0), "videos/a b.mp4");
  EXPECT_EQ(d.relative_path(1), "videos/a b.mp4");
  EXPECT_EQ(d.label(0), 3);
  EXPECT_EQ(d.label(1), 7);
  EXPECT_EQ(d.label(2), 2);
  EXPECT_EQ(d.segment(0).start, 1.5);
  EXPECT_EQ(d.segment(0).end, 4.0);
  EXPECT_EQ(d.segment(1).start, 0.0);
  EXPECT_EQ(d.segment(1).end, kInf);
  EXPECT_EQ(d.segment(2).end, 12.25);
  EXPECT_EQ(d.path(2), "/data/c.mp4");
  EXPECT_EQ(d.source(0), "file_list \"ann.txt\" line 2");
  EXPECT_EQ(d.source(2), "file_list \"ann.txt\" line 5");
  // The same text as "path label" lines: the last token is the label, the rest the path.
  const Dataset plain = Dataset::file_list_from_text("v.mp4 3 1.5 4\n", "ann.txt", "");
  EXPECT_FALSE(plain.has_segments());
  EXPECT_EQ(plain.relative_path(0), "v.mp4 3 1.5");
  EXPECT_EQ(plain.label(0), 4);
  EXPECT_EQ(plain.segment(0).start, 0.0);
  EXPECT_EQ(plain.segment(0).end, kInf);
  // Nonsense segments are listed as they are: the reader reports them per sample.
  const Dataset odd = Dataset::file_list_from_text("v.mp4 1 5 2\nv.mp4 1 -3 1e1\n", "ann.txt", "", f);
  EXPECT_EQ(odd.segment(0).start, 5.0);
  EXPECT_EQ(odd.segment(1).start, -3.0);
  EXPECT_EQ(odd.segment(1).end, 10.0);
  auto message = [&](const std::string& text) {
    try {
      Dataset::file_list_from_text(text, "ann.txt", "", f);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(message("ok.mp4 1 0 1\nv.mp4 1 2\n").find("ann.txt\" line 2: expected \"path label start end\""), std::string::npos)
      << message("ok.mp4 1 0 1\nv.mp4 1 2\n");
  EXPECT_NE(message("1 0 1\n").find("line 1: expected \"path label start end\""), std::string::npos);
  EXPECT_NE(message("v.mp4 1 abc 2\n").find("line 1: start \"abc\" is not a number of seconds"), std::string::npos);
  EXPECT_NE(message("v.mp4 1 - 2\n").find("line 1: start \"-\" is not a number"), std::string::npos);
  EXPECT_NE(message("v.mp4 1 0 2s\n").find("line 1: end \"2s\" is not a number of seconds or -"), std::string::npos);
  EXPECT_NE(message("v.mp4 1 0 inf\n").find("line 1: end \"inf\""), std::string::npos);
  EXPECT_NE(message("v.mp4 1 nan 2\n").find("line 1: start \"nan\""), std::string::npos);
  EXPECT_NE(message("v.mp4 x 0 2\n").find("line 1: label \"x\" is not an integer"), std::string::npos);
  EXPECT_EQ(parse_file_list_format("path label start end"), f);
  EXPECT_THROW(parse_file_list_format("path,label"), ConfigError);
}

TEST(Dataset, FromSamplesWithSegments) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const Dataset d = Dataset::from_samples({"a.mp4", "a.mp4"}, {1, 2}, "/v", {{0.5, 2}, {3, kInf}});
  ASSERT_TRUE(d.has_segments());
  EXPECT_EQ(d.segment(1).start, 3.0);
  EXPECT_EQ(d.segment(1).end, kInf);
  EXPECT_EQ(d.source(1), "samples[1]");
  EXPECT_FALSE(Dataset::from_samples({"a.mp4"}, {}).has_segments());
  try {
    Dataset::from_samples({"a.mp4", "b.mp4"}, {}, "", {{0, 1}});
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "samples: 2 files and 1 segments (give one segment per file, or none)");
  }
  try {
    Dataset::from_samples({"a.mp4"}, {}, "", {{std::nan(""), 1}});
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("samples: segments[0]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hdl
