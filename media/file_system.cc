#include "media/file_system.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hdl {
namespace {

class PosixFile final : public RandomAccessFile {
 public:
  explicit PosixFile(int fd) : fd_(fd) {}
  ~PosixFile() override { ::close(fd_); }
  PosixFile(const PosixFile&) = delete;
  PosixFile& operator=(const PosixFile&) = delete;

  int fd() const { return fd_; }
  void set_stat(int64_t size, int64_t modified_ns) { size_ = size, modified_ns_ = modified_ns; }
  int64_t size() const override { return size_; }
  int64_t modified_ns() const override { return modified_ns_; }

  Result<int64_t> read(int64_t offset, int64_t n, void* dst) const override {
    for (;;) {
      const ssize_t got = ::pread(fd_, dst, static_cast<size_t>(n), static_cast<off_t>(offset));
      if (got >= 0) return static_cast<int64_t>(got);
      if (errno != EINTR) return errno_status(errno);
    }
  }

 private:
  int fd_;
  int64_t size_ = 0;
  int64_t modified_ns_ = 0;
};

class PosixFileSystem final : public FileSystem {
 public:
  Result<std::unique_ptr<RandomAccessFile>> open(const std::string& path) override {
    int fd;
    do fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) return errno_status(errno);
    auto file = std::make_unique<PosixFile>(fd);  // owns fd from here: closed on every return
    struct stat st {};
    if (::fstat(fd, &st) != 0) return errno_status(errno);
    if (!S_ISREG(st.st_mode)) return Status::io_error("not a regular file");
    file->set_stat(st.st_size, int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec);
    return std::unique_ptr<RandomAccessFile>(std::move(file));
  }
};

}  // namespace

std::shared_ptr<FileSystem> posix_file_system() {
  static const std::shared_ptr<FileSystem> fs = std::make_shared<PosixFileSystem>();
  return fs;
}

Status errno_status(int err) {
  return err == ENOENT ? Status::not_found(std::strerror(err)) : Status::io_error(std::strerror(err));
}

Status read_exactly(const RandomAccessFile& file, int64_t offset, int64_t n, void* dst) {
  auto* p = static_cast<char*>(dst);
  int64_t done = 0;
  while (done < n) {
    HDL_ASSIGN_OR_RETURN(const int64_t got, file.read(offset + done, n - done, p + done));
    if (got == 0)
      return Status::io_error("file shrank while being read (got " + std::to_string(done) + " of " +
                              std::to_string(n) + " bytes)");
    if (got < 0 || got > n - done)
      return Status::internal("read returned " + std::to_string(got) + " bytes, asked for " +
                              std::to_string(n - done));
    done += got;
  }
  return Status::ok();
}

}  // namespace hdl
