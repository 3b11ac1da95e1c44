// Frame buffers for libavcodec that outlive a codec context (private to decoders/).
//
// libavcodec's default get_buffer2() keeps a buffer pool per codec context and allocates every
// buffer zeroed (av_buffer_allocz). A clip decoder opens a codec context per video, so each
// video paid, for every frame buffer it held at once (the reference frames, and with grouped
// clips the frames kept for the later clips), a memset over fresh pages that the kernel had
// zeroed first; freed with the context, glibc handed the pages back to the kernel (a profile of
// grouped random clips: 5.3% of the CPU in that memset and its page faults, 1.2% in munmap and
// madvise). A FramePool is one decoder's cache of such buffers across videos and calls:
// get_buffer2() lays a frame out as the default does (the same linesizes from
// avcodec_align_dimensions2, the same padding after each plane), from the smallest cached
// block that holds the plane (up to 4x its size), not zeroed (the decoders write every pixel they give out: the
// reference tests hold the bytes). Codecs without AV_CODEC_CAP_DR1 and hardware frames keep
// the default, as FFmpeg's contract asks.
//
// Thread safety: get_buffer2() and the release of a buffer may come from any thread (a
// codec's frame threads, the thread that drops a kept frame). Buffers outlive the pool.
#pragma once

extern "C" {
#include <libavcodec/avcodec.h>
}

#include <cstddef>
#include <cstdint>
#include <memory>

namespace hdl::detail::video {

class FramePool {
 public:
  /// `max_cached_bytes`: free blocks beyond this are freed instead of kept.
  explicit FramePool(size_t max_cached_bytes = size_t(128) << 20);
  ~FramePool();
  FramePool(const FramePool&) = delete;
  FramePool& operator=(const FramePool&) = delete;

  /// Makes `ctx` (not yet opened, CPU decoding) take its frame buffers from this pool: sets its
  /// get_buffer2 and opaque. The pool must outlive the context.
  void attach(AVCodecContext* ctx);
  /// Blocks obtained from the allocator so far (the rest of the buffers were reused).
  int64_t allocations() const;

 private:
  struct Core;
  static int get_buffer2(AVCodecContext* ctx, AVFrame* frame, int flags);
  std::shared_ptr<Core> core_;
};

}  // namespace hdl::detail::video
