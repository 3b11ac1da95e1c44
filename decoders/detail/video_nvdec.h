// NVDEC, through FFmpeg's cuda hwaccel (private to decoders/).
//
// One job: decoding on the GPU's hardware video decoders and bringing the frames into device
// views. A decoder context gets FFmpeg's CUDA device (opened on CUDA's primary context, the one
// the CUDA runtime, this library's kernels and torch use, with the caller's stream as the
// device's stream: FFmpeg copies each decoded picture out of NVDEC's surfaces on it) and a
// get_format that accepts only AV_PIX_FMT_CUDA. When NVDEC cannot take the stream (FFmpeg's
// hwaccel init checks the GPU's decoder capabilities: codec, profile, chroma format, bit depth,
// size), FFmpeg offers the software formats only and get_format refuses them: the decode fails,
// reported as kUnsupported "NVDEC ...", and the caller decodes the video on the CPU. Decoded
// surfaces are converted to RGB by the decoder's device kernel (decoders/kernels/cuda/yuv.h).
// Built without CUDA, every entry point answers kUnsupported.
//
// Thread safety: cuda_device_status() and has_cuda_hwaccel() from any thread; the rest on the
// thread that owns the decoder.
#pragma once

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavutil/buffer.h>
#include <libavutil/frame.h>
}

#include "decoders/video_decoder.h"
#include "media/shape.h"
#include "media/status.h"
#include "media/storage.h"
#include "media/tensor.h"

namespace hdl::detail::video {

/// Whether this FFmpeg build has a cuda hwaccel for `codec`.
bool has_cuda_hwaccel(const AVCodec* codec);

/// What get_format saw, reached through AVCodecContext::opaque.
struct HwFormat {
  bool refused = false;
};

/// AVCodecContext::get_format for NVDEC: AV_PIX_FMT_CUDA, or none (and HwFormat::refused set)
/// when FFmpeg offers only software formats.
AVPixelFormat pick_cuda_format(AVCodecContext* ctx, const AVPixelFormat* formats);

/// FFmpeg's CUDA device `index` on the CUDA runtime's context (the primary one, which this
/// library's kernels and torch use; FFmpeg's own "primary_ctx" option refuses it once the runtime
/// has activated it, its scheduling flags being other than FFmpeg wants), with `stream` (a
/// cudaStream_t) as the stream of its copies. The caller owns the reference.
Result<AVBufferRef*> open_cuda_device(int index, void* stream);

/// Whether FFmpeg opens CUDA device `index` at all (libcuda there, the device usable): asked
/// once per process and device.
Status cuda_device_status(int index);

/// An NVDEC frame `f` of the video `info` converted by the device kernel into `out` (a device
/// view), on the options' stream; returns once the kernel has read the frame's surface.
Status convert_on_device(const AVFrame* f, const VideoInfo& info, const VideoDecoderOptions& options, int rotation,
                         const TensorView& out);

/// Enqueues on the options' stream the copy of device frame `from` into `to` (a repeated frame of
/// decode_into()): [H, W, C] uint8 device views of one shape, unit channel stride.
Status copy_on_device(const TensorView& from, const TensorView& to, const VideoDecoderOptions& options);

/// decode()'s frame on the device: [H, W, C] uint8 in `storage` (device memory of the options'
/// device, kept and grown).
Result<TensorView> device_frame(StoragePtr& storage, const VideoDecoderOptions& options, const Shape& shape);

}  // namespace hdl::detail::video
