// Pixel conversion of frames decoded on the CPU (private to decoders/).
//
// One job: an AVFrame in any pixel format into an RGB / BGR / gray uint8 view, with the pixels
// of the ffmpeg CLI. libswscale is configured as the ffmpeg 5.1 CLI's automatically inserted
// scale filter configures it (libavfilter/vf_scale.c: config_props and scale_frame): flags
// "bicubic", MPEG-2 vertical chroma siting for yuv420p input, and per frame the frame's colour
// matrix (in_color_matrix "auto": unspecified or unknown is BT.601) and range. That makes the
// output equal to `ffmpeg -i F -pix_fmt rgb24` byte for byte. The display matrix's rotation is
// applied as the CLI's autorotate does (transpose=clock for 90, hflip+vflip for 180,
// transpose=cclock for 270). BGR is converted as RGB, then swapped: libswscale's bgr24 output
// differs from its rgb24 by a level here and there for 10-bit input, and BGR must be RGB
// reversed, as for images. Frames decoded by NVDEC are converted elsewhere (video_nvdec.h).
//
// Thread safety: a FrameConverter or Scratch is used by one thread at a time.
#pragma once

extern "C" {
#include <libavutil/frame.h>
#include <libavutil/mem.h>
#include <libavutil/pixfmt.h>
}

#include <cstddef>
#include <cstdint>

#include "decoders/decoder.h"
#include "media/status.h"
#include "media/tensor.h"

struct SwsContext;

namespace hdl::detail::video {

/// Grows-only byte buffer with room for libswscale's over-writes.
class Scratch {
 public:
  uint8_t* get(size_t n) {
    n += 64;
    if (n > size_) {
      av_free(data_);
      data_ = static_cast<uint8_t*>(av_malloc(n));
      size_ = data_ ? n : 0;
    }
    return data_;
  }
  ~Scratch() { av_free(data_); }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

/// Converts CPU-decoded frames, keeping its libswscale context and scratch buffer from one
/// frame to the next (one per decoder).
class FrameConverter {
 public:
  FrameConverter() = default;
  ~FrameConverter();
  FrameConverter(const FrameConverter&) = delete;
  FrameConverter& operator=(const FrameConverter&) = delete;

  /// Converts `f` (`w` x `h` pixels, the probed size) into `out`: [H, W, C] uint8 host memory,
  /// any strides, in display orientation after `rotation` degrees clockwise (0, 90, 180, 270),
  /// C = color_channels(color). kUnsupported when libswscale cannot convert the frame's pixel
  /// format; kInternal for a device view.
  Status convert(const AVFrame* f, int w, int h, ColorFormat color, int rotation, const TensorView& out);

 private:
  struct Key {
    int w, h, fmt, dst_w, dst_h, dst_fmt;
    bool operator==(const Key&) const = default;
  };

  // Converts `f` to `dst_w` x `dst_h` pixels of `dst_fmt` at `dst` (rows `dst_stride` bytes
  // apart). libswscale may write up to 15 pixels past the end of a row: the caller makes room.
  Status scale(const AVFrame* f, int dst_w, int dst_h, AVPixelFormat dst_fmt, uint8_t* dst, int dst_stride);
  Status configure(const Key& k);

  SwsContext* sws_ = nullptr;
  Key key_{};
  int colorspace_ = -1;
  int range_ = -1;
  Scratch scratch_;  // a converted frame on its way to a rotated or unconvertible-into output
};

}  // namespace hdl::detail::video
