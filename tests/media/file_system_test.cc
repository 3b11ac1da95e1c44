// The real (POSIX) FileSystem: what it reports for the failures a test can cause for real.
// The rest (EIO, short reads) cannot be caused on demand and is injected in
// fault_injection_test.cc (tests/pipeline).
#include "media/file_system.h"
#include "media/remote_file_system.h"

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

// A local file ignores the hint (RandomAccessFile::will_need): the same bytes after it.
TEST(LocalFileTest, WillNeedIsHarmlessLocally) {
  const std::string path = ::testing::TempDir() + "/will_need_" + std::to_string(::getpid());
  std::string bytes(100000, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = char(i * 7 + 3);
  std::ofstream(path, std::ios::binary) << bytes;
  auto f = posix_file_system()->open(path);
  ASSERT_TRUE(f.is_ok()) << f.status().message();
  (*f)->will_need(0, 1 << 30);
  (*f)->will_need(-5, 10);
  std::string got(bytes.size(), '\0');
  ASSERT_TRUE(read_exactly(**f, 0, int64_t(got.size()), got.data()).is_ok());
  EXPECT_TRUE(got == bytes);
  std::filesystem::remove(path);
}

// Requests in flight from the environment: HDL_HTTP_MAX_IN_FLIGHT (0: off) and
// HDL_HTTP_PREFETCH_BYTES; a bad value names the variable.
TEST(RemoteOptionsTest, InFlightFromTheEnvironment) {
  ::unsetenv("HDL_HTTP_MAX_IN_FLIGHT");
  ::unsetenv("HDL_HTTP_PREFETCH_BYTES");
  RemoteOptions o = RemoteOptions::from_environment();
  EXPECT_EQ(o.max_in_flight, 32);
  EXPECT_EQ(o.prefetch_bytes, int64_t(64) << 20);
  ::setenv("HDL_HTTP_MAX_IN_FLIGHT", "0", 1);
  ::setenv("HDL_HTTP_PREFETCH_BYTES", "1000000", 1);
  o = RemoteOptions::from_environment();
  EXPECT_EQ(o.max_in_flight, 0);
  EXPECT_EQ(o.prefetch_bytes, 1000000);
  ::setenv("HDL_HTTP_MAX_IN_FLIGHT", "8", 1);
  EXPECT_EQ(RemoteOptions::from_environment().max_in_flight, 8);
  for (const char* bad : {"-1", "many"}) {
    ::setenv("HDL_HTTP_MAX_IN_FLIGHT", bad, 1);
    try {
      RemoteOptions::from_environment();
      ADD_FAILURE() << "accepted HDL_HTTP_MAX_IN_FLIGHT=" << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("HDL_HTTP_MAX_IN_FLIGHT"), std::string::npos) << e.what();
    }
  }
  ::unsetenv("HDL_HTTP_MAX_IN_FLIGHT");
  ::unsetenv("HDL_HTTP_PREFETCH_BYTES");
}

}  // namespace hdl
