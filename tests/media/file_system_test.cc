// The real (POSIX) FileSystem: what it reports for the failures a test can cause for real.
// The rest (EIO, short reads) cannot be caused on demand and is injected in
// fault_injection_test.cc (tests/pipeline).
#include "media/file_system.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

namespace hdl {
namespace {

namespace fs = std::filesystem;

class FileSystemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(HDL_BINARY_DIR) / "tmp" / ("file_system_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_ / "locked", fs::perms::owner_all, ec);
    fs::remove_all(dir_, ec);
  }
  fs::path write(const std::string& name, size_t bytes) {
    const fs::path p = dir_ / name;
    std::ofstream f(p, std::ios::binary);
    for (size_t i = 0; i < bytes; ++i) f.put(static_cast<char>(i * 7 + 3));
    return p;
  }
  fs::path dir_;
};

TEST_F(FileSystemTest, ReadsAWholeFileAtOffsets) {
  const fs::path p = write("a.bin", 10000);
  auto file = posix_file_system()->open(p.string());
  ASSERT_TRUE(file.is_ok()) << file.status().message();
  ASSERT_EQ((*file)->size(), 10000);
  std::vector<char> buf(10000);
  ASSERT_TRUE(read_exactly(**file, 0, 10000, buf.data()).is_ok());
  for (size_t i = 0; i < buf.size(); ++i) ASSERT_EQ(buf[i], static_cast<char>(i * 7 + 3)) << i;
  auto got = (*file)->read(9990, 100, buf.data());  // a short read at the end, then 0
  ASSERT_TRUE(got.is_ok());
  EXPECT_EQ(*got, 10);
  EXPECT_EQ(*(*file)->read(10000, 100, buf.data()), 0);
}

TEST_F(FileSystemTest, MissingFileIsNotFound) {
  auto file = posix_file_system()->open((dir_ / "nope.jpg").string());
  ASSERT_FALSE(file.is_ok());
  EXPECT_EQ(file.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(file.status().message(), "No such file or directory");
}

TEST_F(FileSystemTest, DirectoryIsNotARegularFile) {
  auto file = posix_file_system()->open(dir_.string());
  ASSERT_FALSE(file.is_ok());
  EXPECT_EQ(file.status().code(), StatusCode::kIoError);
  EXPECT_EQ(file.status().message(), "not a regular file");
}

TEST_F(FileSystemTest, UnreadableFileIsPermissionDenied) {
  if (::geteuid() == 0) GTEST_SKIP() << "running as root: permissions are not enforced";
  const fs::path p = write("locked", 100);
  fs::permissions(p, fs::perms::none);
  auto file = posix_file_system()->open(p.string());
  ASSERT_FALSE(file.is_ok());
  EXPECT_EQ(file.status().code(), StatusCode::kIoError);
  EXPECT_EQ(file.status().message(), "Permission denied");
}

TEST_F(FileSystemTest, FileThatShrinksAfterOpenIsAnError) {
  const fs::path p = write("shrinks.bin", 5000);
  auto file = posix_file_system()->open(p.string());
  ASSERT_TRUE(file.is_ok());
  fs::resize_file(p, 1000);  // another process truncates it between open and read
  std::vector<char> buf(5000);
  const Status st = read_exactly(**file, 0, (*file)->size(), buf.data());
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_EQ(st.message(), "file shrank while being read (got 1000 of 5000 bytes)");
}

TEST(ErrnoStatus, MapsLikeTheRealFileSystem) {
  EXPECT_EQ(errno_status(ENOENT).code(), StatusCode::kNotFound);
  EXPECT_EQ(errno_status(EIO).code(), StatusCode::kIoError);
  EXPECT_EQ(errno_status(EIO).message(), "Input/output error");
  EXPECT_EQ(errno_status(EACCES).message(), "Permission denied");
}

}  // namespace
}  // namespace hdl
