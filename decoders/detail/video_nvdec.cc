#include "decoders/detail/video_nvdec.h"

extern "C" {
#include <libavutil/hwcontext.h>
#include <libavutil/pixdesc.h>
}

#include <mutex>
#include <string>

#include "decoders/detail/video_io.h"

#if HDL_HAVE_CUDA
extern "C" {
#include <libavutil/hwcontext_cuda.h>
}
#include "decoders/kernels/cuda/yuv.h"
#include "media/cuda/allocator.h"
#include "media/cuda/runtime.h"
#include "media/cuda/stream.h"

#include "media/cuda/detail/check.h"
#endif

namespace hdl::detail::video {
namespace {

#if HDL_HAVE_CUDA
// A decoded NVDEC frame's planes as the conversion kernel reads them.
Result<kernels::YuvFrame> device_planes(const AVFrame* f) {
  if (!f->hw_frames_ctx) return Status::internal("NVDEC frame without a frames context");
  const auto* frames = reinterpret_cast<const AVHWFramesContext*>(f->hw_frames_ctx->data);
  kernels::YuvFrame y;
  switch (frames->sw_format) {
    case AV_PIX_FMT_NV12: y.layout = kernels::YuvLayout::kSemiPlanar420; y.bytes = 1; break;
    case AV_PIX_FMT_P010LE:
    case AV_PIX_FMT_P016LE: y.layout = kernels::YuvLayout::kSemiPlanar420; y.bytes = 2; break;
    case AV_PIX_FMT_YUV444P: y.layout = kernels::YuvLayout::kPlanar444; y.bytes = 1; break;
    case AV_PIX_FMT_YUV444P16LE: y.layout = kernels::YuvLayout::kPlanar444; y.bytes = 2; break;
    default: {
      const char* name = av_get_pix_fmt_name(frames->sw_format);
      return Status::unsupported(std::string("NVDEC surface format ") + (name ? name : "?") + " is not converted here");
    }
  }
  for (int i = 0; i < 3; ++i) {
    y.plane[i] = f->data[i];
    y.pitch[i] = f->linesize[i];
  }
  y.width = f->width;
  y.height = f->height;
  return y;
}

// Whether libswscale reads `format` as full range when the frame does not say (the yuvj formats).
bool full_range_format(int format) {
  return format == AV_PIX_FMT_YUVJ420P || format == AV_PIX_FMT_YUVJ422P || format == AV_PIX_FMT_YUVJ444P ||
         format == AV_PIX_FMT_YUVJ440P || format == AV_PIX_FMT_YUVJ411P;
}
#endif

}  // namespace

bool has_cuda_hwaccel(const AVCodec* codec) {
  for (int i = 0;; ++i) {
    const AVCodecHWConfig* c = avcodec_get_hw_config(codec, i);
    if (!c) return false;
    if (c->device_type == AV_HWDEVICE_TYPE_CUDA && (c->methods & AV_CODEC_HW_CONFIG_METHOD_HW_DEVICE_CTX)) return true;
  }
}

AVPixelFormat pick_cuda_format(AVCodecContext* ctx, const AVPixelFormat* formats) {
  for (const AVPixelFormat* f = formats; *f != AV_PIX_FMT_NONE; ++f)
    if (*f == AV_PIX_FMT_CUDA) return *f;
  if (ctx->opaque) static_cast<HwFormat*>(ctx->opaque)->refused = true;
  return AV_PIX_FMT_NONE;
}

Result<AVBufferRef*> open_cuda_device(int index, void* stream) {
#if HDL_HAVE_CUDA
  Result<void*> context = cuda::runtime_context(Device::cuda(index));
  if (!context.is_ok()) return Status::unsupported("NVDEC: " + context.status().message());
  AVBufferRef* ref = av_hwdevice_ctx_alloc(AV_HWDEVICE_TYPE_CUDA);
  if (!ref) return Status::resource_exhausted("out of memory");
  auto* device = reinterpret_cast<AVHWDeviceContext*>(ref->data);
  auto* cu = static_cast<AVCUDADeviceContext*>(device->hwctx);
  cu->cuda_ctx = static_cast<CUcontext>(*context);  // not FFmpeg's: it leaves it alone when done
  cu->stream = static_cast<CUstream>(stream);
  if (const int err = av_hwdevice_ctx_init(ref); err < 0) {
    av_buffer_unref(&ref);
    return Status::unsupported("NVDEC: FFmpeg cannot use CUDA device " + std::to_string(index) + ": " +
                               av_error_text(err));
  }
  return ref;
#else
  (void)index, (void)stream;
  return Status::unsupported("NVDEC: not available: built without CUDA");
#endif
}

Status cuda_device_status(int index) {
  if (index < 0 || index >= 64) return Status::invalid_argument("CUDA device index " + std::to_string(index) + " out of range");
  static std::once_flag once[64];
  static Status status[64];
  std::call_once(once[index], [&] {
    QuietLog quiet;
    Result<AVBufferRef*> ref = open_cuda_device(index, nullptr);
    if (ref.is_ok()) av_buffer_unref(&*ref);
    status[index] = ref.status();
  });
  return status[index];
}

Status convert_on_device(const AVFrame* f, const VideoInfo& info, const VideoDecoderOptions& options, int rotation,
                         const TensorView& out) {
#if HDL_HAVE_CUDA
  if (f->width != info.width || f->height != info.height)
    return Status::unsupported("NVDEC gave a " + std::to_string(f->width) + "x" + std::to_string(f->height) +
                               " frame for a " + std::to_string(info.width) + "x" + std::to_string(info.height) + " video");
  HDL_ASSIGN_OR_RETURN(const kernels::YuvFrame planes, device_planes(f));
  const int range = enum_value(f->color_range);
  const bool full = range == AVCOL_RANGE_JPEG ||
                    (range == AVCOL_RANGE_UNSPECIFIED && full_range_format(av_get_pix_fmt(info.pixel_format.c_str())));
  const kernels::YuvMatrix matrix = kernels::yuv_matrix(enum_value(f->colorspace), full);
  cuda::Stream stream = cuda::Stream::borrow(options.cuda_stream, options.device);
  HDL_RETURN_IF_ERROR(kernels::cuda::yuv_to_rgb(planes, matrix, rotation, options.color, out, stream));
  // The frame's planes are NVDEC's mapped output surface, which FFmpeg unmaps when the frame is
  // released (as soon as this frame is handled). Unmapping is not ordered on the stream
  // (NVIDIA's decoder samples synchronise before it), so the kernel reading it finishes first;
  // work the sink queues after this reads `out`, not the surface.
  return stream.synchronize();
#else
  (void)f, (void)info, (void)options, (void)rotation, (void)out;
  return Status::unsupported("NVDEC: not available: built without CUDA");
#endif
}

Status copy_on_device(const TensorView& from, const TensorView& to, const VideoDecoderOptions& options) {
#if HDL_HAVE_CUDA
  const auto stream = static_cast<cudaStream_t>(options.cuda_stream);
  const auto* src = static_cast<const uint8_t*>(from.data);
  auto* dst = static_cast<uint8_t*>(to.data);
  const int64_t h = to.shape[0], w = to.shape[1], c = to.shape[2];
  if (from.strides[1] == c && to.strides[1] == c) {  // packed rows: one 2-D copy
    HDL_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(dst, size_t(to.strides[0]), src, size_t(from.strides[0]), size_t(w * c),
                                               size_t(h), cudaMemcpyDeviceToDevice, stream));
    return Status::ok();
  }
  // Pixels apart: per image row, a 2-D copy whose rows are its pixels.
  for (int64_t y = 0; y < h; ++y) {
    HDL_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(dst + y * to.strides[0], size_t(to.strides[1]), src + y * from.strides[0],
                                               size_t(from.strides[1]), size_t(c), size_t(w), cudaMemcpyDeviceToDevice,
                                               stream));
  }
  return Status::ok();
#else
  (void)from, (void)to, (void)options;
  return Status::unsupported("not available: built without CUDA");
#endif
}

Result<TensorView> device_frame(StoragePtr& storage, const VideoDecoderOptions& options, const Shape& shape) {
#if HDL_HAVE_CUDA
  const size_t bytes = size_t(shape.num_elements());
  if (!storage || storage->capacity() < bytes) {
    storage.reset();  // cudaFree waits for the work that may still read it
    storage = Storage::allocate(cuda::device_allocator(options.device.index), bytes);
  }
  TensorView v(storage->data(), shape, DType::kU8, Layout::kHWC);
  v.device = options.device;
  return v;
#else
  (void)options, (void)shape;
  return Status::unsupported("NVDEC: not available: built without CUDA");
#endif
}

}  // namespace hdl::detail::video
