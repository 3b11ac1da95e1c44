#include "decoders/detail/video_convert.h"

extern "C" {
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

#include <algorithm>
#include <climits>
#include <cstring>
#include <string>
#include <utility>

#include "decoders/detail/video_io.h"

namespace hdl::detail::video {
namespace {

AVPixelFormat av_format_of(ColorFormat color) {
  return color == ColorFormat::kGray ? AV_PIX_FMT_GRAY8 : AV_PIX_FMT_RGB24;
}

// RGB to BGR in place, over an [H, W, 3] view with any strides.
void swap_red_blue(const TensorView& v) {
  auto* base = static_cast<uint8_t*>(v.data);
  for (int64_t y = 0; y < v.shape[0]; ++y) {
    uint8_t* p = base + y * v.strides[0];
    for (int64_t x = 0; x < v.shape[1]; ++x, p += v.strides[1]) std::swap(p[0], p[2 * v.strides[2]]);
  }
}

// Copies `src` (h rows of w pixels of c bytes, `stride` bytes apart) into `out` ([H, W, c],
// any strides), rotated clockwise by `rotation` degrees (as transpose=clock for 90, hflip+vflip
// for 180, transpose=cclock for 270). Quarter turns read the source down its columns, so they
// go by tiles that stay in cache.
template <int C>
void rotate_tile(const uint8_t* s, int64_t step, uint8_t* d, int64_t ps, int64_t n) {
  for (int64_t x = 0; x < n; ++x, d += ps)
    for (int k = 0; k < C; ++k) d[k] = s[x * step + k];
}

void write_rotated(const uint8_t* src, int64_t stride, int64_t w, int64_t h, int64_t c, int rotation,
                   const TensorView& out) {
  auto* dst = static_cast<uint8_t*>(out.data);
  const int64_t out_h = out.shape[0], out_w = out.shape[1];
  const int64_t rs = out.strides[0], ps = out.strides[1];
  constexpr int64_t kTile = 8;  // measured: 8 beats 16, 32 and 64 on a 1080p quarter turn
  for (int64_t x0 = 0; x0 < out_w; x0 += kTile) {
    const int64_t n = std::min(kTile, out_w - x0);
    for (int64_t y = 0; y < out_h; ++y) {
      const uint8_t* s;
      int64_t step;  // bytes from one source pixel to the next along an output row
      switch (rotation) {
        case 90: s = src + (h - 1 - x0) * stride + y * c, step = -stride; break;
        case 180: s = src + (h - 1 - y) * stride + (w - 1 - x0) * c, step = -c; break;
        case 270: s = src + x0 * stride + (w - 1 - y) * c, step = stride; break;
        default: s = src + y * stride + x0 * c, step = c; break;
      }
      uint8_t* d = dst + y * rs + x0 * ps;
      if (step == c && ps == c) {
        std::memcpy(d, s, size_t(n * c));
      } else if (c == 3) {
        rotate_tile<3>(s, step, d, ps, n);
      } else {
        rotate_tile<1>(s, step, d, ps, n);
      }
    }
  }
}

}  // namespace

FrameConverter::~FrameConverter() { sws_freeContext(sws_); }

Status FrameConverter::convert(const AVFrame* f, int w, int h, ColorFormat color, int rotation, const TensorView& out) {
  if (!out.device.is_cpu()) return Status::internal("a frame decoded on the CPU for a device output");
  const AVPixelFormat dst_fmt = av_format_of(color);
  const int64_t c = color_channels(color);
  // libswscale writes whole blocks of pixels: straight into `out` only when its rows are
  // packed and a multiple of 16 pixels wide, so that nothing lands outside the view.
  const int64_t row = out.strides[0];
  if (rotation == 0 && out.strides[1] == c && w % 16 == 0 && row >= w * c && row <= INT32_MAX) {
    HDL_RETURN_IF_ERROR(scale(f, w, h, dst_fmt, static_cast<uint8_t*>(out.data), int(row)));
  } else {
    const int64_t stride = (w * c + 63) / 64 * 64 + 64;
    uint8_t* buf = scratch_.get(size_t(stride * h));
    if (!buf) return Status::resource_exhausted("out of memory");
    HDL_RETURN_IF_ERROR(scale(f, w, h, dst_fmt, buf, int(stride)));
    write_rotated(buf, stride, w, h, c, rotation, out);
  }
  if (color == ColorFormat::kBGR) swap_red_blue(out);
  return Status::ok();
}

Status FrameConverter::scale(const AVFrame* f, int dst_w, int dst_h, AVPixelFormat dst_fmt, uint8_t* dst, int dst_stride) {
  const Key key{f->width, f->height, f->format, dst_w, dst_h, dst_fmt};
  if (!sws_ || !(key == key_)) HDL_RETURN_IF_ERROR(configure(key));
  const int colorspace = enum_value(f->colorspace), range = enum_value(f->color_range);
  if (colorspace != colorspace_ || range != range_) {
    int *inv_table = nullptr, *table = nullptr;
    int in_full = 0, out_full = 0, brightness = 0, contrast = 0, saturation = 0;
    sws_getColorspaceDetails(sws_, &inv_table, &in_full, &table, &out_full, &brightness, &contrast, &saturation);
    int cs = colorspace;
    if (cs < 1 || cs > 10 || cs == 8) cs = AVCOL_SPC_BT470BG;  // vf_scale's parse_yuv_type("auto")
    const int* matrix = sws_getCoefficients(cs);
    if (range != AVCOL_RANGE_UNSPECIFIED) in_full = range == AVCOL_RANGE_JPEG;
    sws_setColorspaceDetails(sws_, matrix, in_full, matrix, out_full, brightness, contrast, saturation);
    colorspace_ = colorspace;
    range_ = range;
  }
  uint8_t* planes[4] = {dst, nullptr, nullptr, nullptr};
  int strides[4] = {dst_stride, 0, 0, 0};
  if (sws_scale(sws_, f->data, f->linesize, 0, f->height, planes, strides) != dst_h)
    return Status::internal("libswscale converted fewer rows than asked");
  return Status::ok();
}

Status FrameConverter::configure(const Key& k) {
  sws_freeContext(sws_);
  sws_ = sws_alloc_context();
  if (!sws_) return Status::resource_exhausted("out of memory");
  av_opt_set_int(sws_, "sws_flags", SWS_BICUBIC, 0);
  av_opt_set_int(sws_, "srcw", k.w, 0);
  av_opt_set_int(sws_, "srch", k.h, 0);
  av_opt_set_int(sws_, "src_format", k.fmt, 0);
  av_opt_set_int(sws_, "dstw", k.dst_w, 0);
  av_opt_set_int(sws_, "dsth", k.dst_h, 0);
  av_opt_set_int(sws_, "dst_format", k.dst_fmt, 0);
  if (k.fmt == AV_PIX_FMT_YUV420P) av_opt_set_int(sws_, "src_v_chr_pos", 128, 0);
  if (sws_init_context(sws_, nullptr, nullptr) < 0) {
    sws_freeContext(sws_);
    sws_ = nullptr;
    const char* name = av_get_pix_fmt_name(AVPixelFormat(k.fmt));
    return Status::unsupported(std::string("libswscale cannot convert pixel format ") + (name ? name : "?"));
  }
  key_ = k;
  colorspace_ = -1;
  range_ = -1;
  return Status::ok();
}

}  // namespace hdl::detail::video
