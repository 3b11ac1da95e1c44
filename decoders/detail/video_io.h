// FFmpeg I/O for the video decoder (private to decoders/; decoders/video_decoder.h is the API).
//
// One job: getting a container's bytes into libavformat and FFmpeg's failures out as Status.
// An Input opens a container over a RandomAccessFile (libavformat reads through an AVIOContext
// whose callbacks call RandomAccessFile::read at a position of our own; demuxers that would open
// other files, such as HLS or concat, are refused). The first I/O error is kept, so that it, not
// FFmpeg's generic EIO, is what the caller sees. QuietLog keeps FFmpeg's complaints about bad
// input off stderr on the calling thread (decoders/README.md: bad bytes are Status values,
// never messages).
//
// Thread safety: an Input is used by one thread at a time; the functions and QuietLog may be
// used from any thread.
#pragma once

extern "C" {
#include <libavformat/avformat.h>
}

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "media/file_system.h"
#include "media/status.h"

namespace hdl::detail::video {

/// FFmpeg's words for error code `err`.
std::string av_error_text(int err);

/// While one exists on a thread, FFmpeg's log messages from that thread are dropped; others go
/// to FFmpeg's default callback. (Decoder threads log through the codec context, whose
/// log_level_offset already puts them below any level.)
class QuietLog {
 public:
  QuietLog();
  ~QuietLog();
  QuietLog(const QuietLog&) = delete;
  QuietLog& operator=(const QuietLog&) = delete;
};

/// The AVIOContext callbacks' state: FFmpeg reads the file through RandomAccessFile::read at a
/// position of our own. `error` keeps the first I/O error.
struct FileIo {
  const RandomAccessFile* file = nullptr;
  int64_t size = 0;
  int64_t pos = 0;
  Status error;

  static int read(void* opaque, uint8_t* buf, int n);
  static int64_t seek(void* opaque, int64_t offset, int whence);
};

/// An open container (AVFormatContext over an AVIOContext over the file).
class Input {
 public:
  Input() = default;
  Input(const Input&) = delete;
  Input& operator=(const Input&) = delete;
  ~Input();

  /// Opens `file` as `format` (nullptr: probe the bytes); `what` prefixes a failure's message.
  Status open(const RandomAccessFile& file, const AVInputFormat* format, const char* what);

  AVFormatContext* fmt() const { return fmt_; }
  /// Reads go to `file` from now on: another RandomAccessFile over the same bytes (the same
  /// file opened again), the position kept.
  void rebind(const RandomAccessFile& file) { io_.file = &file; }
  /// An MPEG program or transport stream: no index, so libavformat seeks by bisecting the file
  /// on decode timestamps, landing at the start of a PES packet whose timestamps the demuxer
  /// then hands to the tail of the frame before it (which it returns first).
  bool mpeg_stream() const { return mpeg_stream_; }
  const Status& io_error() const { return io_.error; }

  /// The Status for FFmpeg error `err`: the file's own I/O error if there was one (FFmpeg only
  /// saw EIO), else kInvalidData "<what><FFmpeg's words>)" (what ends with an open parenthesis).
  Status error(int err, const std::string& what) const;

 private:
  FileIo io_;
  AVIOContext* avio_ = nullptr;
  AVFormatContext* fmt_ = nullptr;
  bool mpeg_stream_ = false;
};

/// Reads the start of the file for the streams' parameters, decoding a few frames of each:
/// bounded by libavformat's probesize (5 MB) and analyzeduration (5 s), as in the CLI, and its
/// decoders refuse frames over max_pixels before allocating them. Failing to find some
/// parameters is not an error (the CLI goes on too); an I/O error is.
Status find_stream_info(const Input& in, int64_t max_pixels);

/// The demuxer libavformat calls `name`, or nullptr.
const AVInputFormat* find_demuxer(const std::string& name);

/// The value stored in an FFmpeg enum field, read as the int it is. Decoders copy colour fields
/// from the bitstream unchecked (H.264's VUI gives 0-255 for matrix_coefficients, which lands in
/// AVFrame::colorspace as is), and loading a value outside the enum's range from an lvalue of the
/// enum type is undefined behaviour (UBSan: "load of value 243, which is not a valid value for
/// type 'enum AVColorSpace'"); its bytes are an int, so read them as one.
template <typename Enum>
int enum_value(const Enum& field) {
  static_assert(std::is_enum_v<Enum> && sizeof(Enum) == sizeof(int));
  int v;
  std::memcpy(&v, &field, sizeof v);
  return v;
}

}  // namespace hdl::detail::video
