#include "decoders/detail/video_frame_pool.h"

extern "C" {
#include <libavutil/imgutils.h>
#include <libavutil/mem.h>
}

#include <climits>
#include <cstring>
#include <map>
#include <mutex>

namespace hdl::detail::video {
namespace {

// The bytes after each plane, as libavcodec's default pool adds (16 + STRIDE_ALIGN - 1, with
// the widest STRIDE_ALIGN of an x86 build, 64): decoders may read a little past a plane's end.
constexpr size_t kPlanePadding = 16 + 64 - 1;

}  // namespace

struct FramePool::Core : std::enable_shared_from_this<FramePool::Core> {
  struct Block {
    std::shared_ptr<Core> core;  // set while the block is out: the pool's state outlives it
    uint8_t* data = nullptr;
    size_t capacity = 0;
  };

  explicit Core(size_t max_cached) : max_cached_bytes(max_cached) {}
  ~Core() { free_all(); }

  void free_all() {
    for (auto& [cap, b] : free) {
      av_free(b->data);
      delete b;
    }
    free.clear();
    cached = 0;
  }

  // A buffer of `size` bytes: the smallest cached block that holds it and is at most
  // kMaxOversize times larger (so that a small plane does not tie up a large block), else a
  // new block.
  static constexpr size_t kMaxOversize = 64;
  AVBufferRef* get(size_t size) {
    Block* b = nullptr;
    {
      std::lock_guard lock(mu);
      auto it = free.lower_bound(size);
      if (it != free.end() && it->first / kMaxOversize <= size) {
        b = it->second;
        cached -= it->first;
        free.erase(it);
      } else {
        ++allocations;
      }
    }
    if (!b) {
      auto* data = static_cast<uint8_t*>(av_malloc(size));
      if (!data) return nullptr;
      b = new Block{nullptr, data, size};
    }
    b->core = shared_from_this();
    AVBufferRef* ref = av_buffer_create(b->data, size, &Core::release, b, 0);
    if (!ref) release(b, b->data);
    return ref;
  }

  static void release(void* opaque, uint8_t*) {
    auto* b = static_cast<Block*>(opaque);
    const std::shared_ptr<Core> core = std::move(b->core);  // dropped after the lock below
    std::lock_guard lock(core->mu);
    if (core->alive && core->cached + b->capacity <= core->max_cached_bytes) {
      core->free.emplace(b->capacity, b);
      core->cached += b->capacity;
      return;
    }
    av_free(b->data);
    delete b;
  }

  const size_t max_cached_bytes;
  std::mutex mu;
  std::multimap<size_t, Block*> free;  // by capacity
  size_t cached = 0;
  int64_t allocations = 0;
  bool alive = true;  // false once the FramePool is gone: blocks coming back are freed
};

FramePool::FramePool(size_t max_cached_bytes) : core_(std::make_shared<Core>(max_cached_bytes)) {}

FramePool::~FramePool() {
  std::lock_guard lock(core_->mu);
  core_->alive = false;
  core_->free_all();
}

void FramePool::attach(AVCodecContext* ctx) {
  ctx->get_buffer2 = &FramePool::get_buffer2;
  ctx->opaque = core_.get();
}

int64_t FramePool::allocations() const {
  std::lock_guard lock(core_->mu);
  return core_->allocations;
}

int FramePool::get_buffer2(AVCodecContext* ctx, AVFrame* f, int flags) {
  if (ctx->hw_frames_ctx || ctx->codec_type != AVMEDIA_TYPE_VIDEO || !ctx->codec ||
      !(ctx->codec->capabilities & AV_CODEC_CAP_DR1) || f->width <= 0 || f->height <= 0)
    return avcodec_default_get_buffer2(ctx, f, flags);
  auto* core = static_cast<Core*>(ctx->opaque);
  const auto format = static_cast<AVPixelFormat>(f->format);
  // The default's layout: dimensions aligned for the codec, then the width widened until every
  // plane's linesize is a multiple of its alignment.
  int w = f->width, h = f->height;
  int align[AV_NUM_DATA_POINTERS];
  avcodec_align_dimensions2(ctx, &w, &h, align);
  int linesize[4];
  for (;;) {
    if (int err = av_image_fill_linesizes(linesize, format, w); err < 0) return err;
    bool aligned = true;
    for (int i = 0; i < 4; ++i) aligned &= align[i] <= 0 || linesize[i] % align[i] == 0;
    if (aligned) break;
    w += w & ~(w - 1);  // the lowest set bit: the next try is aligned one power of two further
  }
  ptrdiff_t linesizes[4];
  for (int i = 0; i < 4; ++i) linesizes[i] = linesize[i];
  size_t size[4];
  if (int err = av_image_fill_plane_sizes(size, format, h, linesizes); err < 0) return err;
  std::memset(f->data, 0, sizeof(f->data));
  std::memset(f->linesize, 0, sizeof(f->linesize));
  f->extended_data = f->data;
  for (int i = 0; i < 4 && size[i] > 0; ++i) {
    if (size[i] > size_t(INT_MAX) - kPlanePadding) {
      av_frame_unref(f);
      return AVERROR(EINVAL);
    }
    f->buf[i] = core->get(size[i] + kPlanePadding);
    if (!f->buf[i]) {
      av_frame_unref(f);
      return AVERROR(ENOMEM);
    }
    f->data[i] = f->buf[i]->data;
    f->linesize[i] = linesize[i];
  }
  return 0;
}

}  // namespace hdl::detail::video
