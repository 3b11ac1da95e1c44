#include "decoders/detail/video_io.h"

#include <algorithm>
#include <cstdarg>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "decoders/video_decoder.h"

namespace hdl {
namespace detail::video {
namespace {

constexpr int kIoBufferSize = 64 * 1024;

// FFmpeg's log callback is process-wide, so ours drops only what is logged on a thread inside a
// VideoDecoder call.
thread_local int t_quiet = 0;

void quiet_log(void* avcl, int level, const char* fmt, va_list args) {
  if (t_quiet > 0) return;
  av_log_default_callback(avcl, level, fmt, args);
}

// Demuxers that name other files (HLS, DASH, concat) must not open anything: the file is all
// the input there is.
int refuse_io_open(AVFormatContext*, AVIOContext**, const char*, int, AVDictionary**) {
  return AVERROR(EPERM);
}


}  // namespace

std::string av_error_text(int err) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(err, buf, sizeof(buf));
  return buf;
}

QuietLog::QuietLog() {
  static std::once_flag once;
  std::call_once(once, [] { av_log_set_callback(quiet_log); });
  ++t_quiet;
}

QuietLog::~QuietLog() { --t_quiet; }

int FileIo::read(void* opaque, uint8_t* buf, int n) {
  auto* io = static_cast<FileIo*>(opaque);
  Result<int64_t> got = io->file->read(io->pos, n, buf);
  if (!got.is_ok()) {
    if (io->error.is_ok()) io->error = got.status();
    return AVERROR(EIO);
  }
  if (*got <= 0) return AVERROR_EOF;
  io->pos += *got;
  return int(*got);
}

int64_t FileIo::seek(void* opaque, int64_t offset, int whence) {
  auto* io = static_cast<FileIo*>(opaque);
  switch (whence & ~AVSEEK_FORCE) {
    case AVSEEK_SIZE: return io->size;
    case SEEK_SET: break;
    case SEEK_CUR: offset += io->pos; break;
    case SEEK_END: offset += io->size; break;
    default: return AVERROR(EINVAL);
  }
  if (offset < 0) return AVERROR(EINVAL);
  io->pos = offset;
  return offset;
}

Input::~Input() {
  avformat_close_input(&fmt_);  // leaves our AVIOContext alone (AVFMT_FLAG_CUSTOM_IO)
  if (avio_) av_freep(&avio_->buffer);
  avio_context_free(&avio_);
}

Status Input::open(const RandomAccessFile& file, const AVInputFormat* format, const char* what) {
  io_.file = &file;
  io_.size = file.size();
  auto* buffer = static_cast<uint8_t*>(av_malloc(kIoBufferSize));
  if (!buffer) return Status::resource_exhausted("out of memory");
  avio_ = avio_alloc_context(buffer, kIoBufferSize, 0, &io_, &FileIo::read, nullptr, &FileIo::seek);
  if (!avio_) {
    av_free(buffer);
    return Status::resource_exhausted("out of memory");
  }
  fmt_ = avformat_alloc_context();
  if (!fmt_) return Status::resource_exhausted("out of memory");
  fmt_->pb = avio_;
  fmt_->flags |= AVFMT_FLAG_CUSTOM_IO;
  fmt_->io_open = refuse_io_open;
  if (int err = avformat_open_input(&fmt_, "", format, nullptr); err < 0)  // frees fmt_
    return error(err, std::string(what) + " (libavformat: ");
  const std::string name = fmt_->iformat->name;
  mpeg_stream_ = name == "mpeg" || name == "mpegts";
  return Status::ok();
}

Status Input::error(int err, const std::string& what) const {
  if (!io_.error.is_ok()) return io_.error;
  if (err == AVERROR(ENOMEM)) return Status::resource_exhausted("out of memory");
  return Status::invalid_data(what + av_error_text(err) + ")");
}

Status find_stream_info(const Input& in, int64_t max_pixels) {
  AVFormatContext* fmt = in.fmt();
  std::vector<AVDictionary*> options(fmt->nb_streams, nullptr);
  for (AVDictionary*& d : options) av_dict_set_int(&d, "max_pixels", max_pixels, 0);
  avformat_find_stream_info(fmt, options.empty() ? nullptr : options.data());
  for (AVDictionary*& d : options) av_dict_free(&d);
  return in.io_error();
}

const AVInputFormat* find_demuxer(const std::string& name) {
  void* it = nullptr;
  while (const AVInputFormat* f = av_demuxer_iterate(&it))
    if (name == f->name) return f;
  return nullptr;
}

}  // namespace detail::video

namespace {

class MemoryFile final : public RandomAccessFile {
 public:
  explicit MemoryFile(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  int64_t size() const override { return int64_t(bytes_.size()); }
  Result<int64_t> read(int64_t offset, int64_t n, void* dst) const override {
    if (offset < 0 || n < 0) return Status::invalid_argument("negative offset or length");
    if (offset >= size()) return int64_t(0);
    const int64_t k = std::min(n, size() - offset);
    std::memcpy(dst, bytes_.data() + offset, size_t(k));
    return k;
  }

 private:
  std::span<const uint8_t> bytes_;
};

}  // namespace

std::unique_ptr<RandomAccessFile> memory_file(std::span<const uint8_t> bytes) {
  return std::make_unique<MemoryFile>(bytes);
}

}  // namespace hdl
