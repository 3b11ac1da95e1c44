// video_reader(device="mixed"): the clips of video_reader.h decoded by the GPU's hardware video
// decoders (NVDEC) where they can take the video, by CPU threads where not (docs/VIDEO.md,
// "NVDEC").
#include <atomic>
#include <map>
#include <mutex>
#include <optional>

#include "media/cuda/allocator.h"
#include "media/cuda/stream.h"
#include "pipeline/errors.h"
#include "pipeline/readers/video_reader.h"

namespace hdl {
namespace {

// Clips a mixed reader's host half decoded on the device, waiting for their batch's device
// half: by (epoch, position), the slot a sample fills (a replacement under on_error="skip"
// fills the same slot and replaces the entry).
class DeviceClips {
 public:
  struct Entry {
    Tensor pixels;      // [T, H, W, C] on the device, from the reader's pool
    cuda::Event ready;  // recorded on the host half's stream after the work writing `pixels`
  };

  void put(const SampleInfo& s, Entry e) {
    std::lock_guard lock(mu_);
    clips_[{s.epoch, s.position}] = std::move(e);
  }
  std::optional<Entry> take(const SampleInfo& s) {
    std::lock_guard lock(mu_);
    auto it = clips_.find({s.epoch, s.position});
    if (it == clips_.end()) return std::nullopt;
    Entry e = std::move(it->second);
    clips_.erase(it);
    return e;
  }

 private:
  std::mutex mu_;
  std::map<std::pair<int64_t, int64_t>, Entry> clips_;
};

// video_reader(device="mixed") (docs/VIDEO.md, "NVDEC"): clips decoded by the GPU's hardware
// video decoders where they can take the video, by CPU threads where not, into device batches.
//
// Host half (run, per clip on the cpu stage, a TBB task like every cpu operator): pick the clip
// and draw its geometry as the cpu reader does (same random stream, so the same clips, frames
// and windows for a seed), then decode it with this thread's NVDEC session (FFmpeg's cuda
// hwaccel, one session per worker thread: several threads keep several of the GPU's decoder
// engines busy) on this thread's stream; the YUV -> RGB kernel and the window's resize and crop
// write the clip into a device block, and an event recorded after them goes with it to the
// device half. The frames output stages an empty clip ([0, 0, 0, C]). A video NVDEC cannot take
// (codec, profile, chroma format, bit depth, size: FFmpeg's hwaccel refuses it) is remembered
// and decoded on the CPU from then on; a clip that fails on the device for another reason is
// decoded again on the CPU; the CPU's result, or its error under the pipeline's error policy,
// is what counts. CPU-decoded clips are staged in pinned memory, as a mixed image decoder's.
// Device half (run_batch, per batch in the device stage): the pipeline's stream waits for each
// device clip's event and copies it into the batch; staged CPU clips and the other outputs are
// uploaded. The blocks go back to the reader's pool after the batch's ready event.
class MixedVideoReader final : public VideoReader {
 public:
  explicit MixedVideoReader(const NodeSpec& n)
      : VideoReader(n), refused_(std::make_unique<std::atomic<uint8_t>[]>(static_cast<size_t>(dataset().size()))) {
    if (clip_output().fused().options.pillow)
      throw ConfigError("on the mixed stage video_reader resizes with the gpu kernels: pillow resampling runs on the "
                        "cpu stage (device \"cpu\")");
  }

  Status run(SampleIO& io) const override {
    HDL_ASSIGN_OR_RETURN(const Clip clip, pick(io));
    auto& st = *static_cast<VideoState*>(io.state());
    const ClipOutput& output = clip_output();
    HDL_ASSIGN_OR_RETURN(const std::optional<ops::ClipGeometry> geometry, output.draw_geometry(io, st, *clip.info));
    const ops::ClipGeometry* g = geometry ? &*geometry : nullptr;
    if (!refused_[clip.video].load(std::memory_order_relaxed)) {
      Status s = decode_on_device(io, st, clip, g);
      if (s.is_ok()) {
        device_clips_.fetch_add(1, std::memory_order_relaxed);
        return write_clip_outputs(io, clip);
      }
      if (s.code() == StatusCode::kUnsupported) {
        if (!refused_[clip.video].exchange(1)) refused_videos_.fetch_add(1, std::memory_order_relaxed);
      } else {
        device_failures_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    HDL_RETURN_IF_ERROR(output.decode_cpu(io, st, *clip.file, *clip.info, clip.frames, g, 0, video_counters()));
    cpu_clips_.fetch_add(1, std::memory_order_relaxed);
    return write_clip_outputs(io, clip);
  }

  Status run_batch(BatchIO& io) const override {
    cuda::Stream& stream = io.stream();
    const bool pixels = !clip_output().count_only();
    for (int64_t s = 0; s < io.size(); ++s) {
      for (int i = 0; i < 4; ++i) {
        const ConstTensorView& staged = io.staged(i, s);
        if (i == 0 && pixels && staged.shape[0] == 0) {  // decoded on the device by the host half
          const SampleInfo& info = io.sample_io(s).sample();
          std::optional<DeviceClips::Entry> clip = clips_.take(info);
          if (!clip)
            return Status::internal("no device clip for sample " + std::to_string(info.dataset_index) + " at position " +
                                    std::to_string(info.position) + " of epoch " + std::to_string(info.epoch));
          HDL_RETURN_IF_ERROR(stream.wait(clip->ready));
          HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, s, clip->pixels.shape(), DType::kU8, Layout::kFHWC));
          HDL_RETURN_IF_ERROR(copy(clip->pixels.view(), out, stream));
          io.hold_until_ready(std::move(clip->pixels));
          continue;
        }
        HDL_ASSIGN_OR_RETURN(TensorView out, io.output(i, s, staged.shape, staged.dtype, staged.layout));
        HDL_RETURN_IF_ERROR(copy(staged, out, stream));
      }
    }
    return Status::ok();
  }

  std::vector<std::pair<std::string, int64_t>> counters() const override {
    std::vector<std::pair<std::string, int64_t>> c = VideoReader::counters();
    c.insert(c.end(), {{"video_device_clips", device_clips_.load()},
                       {"video_cpu_clips", cpu_clips_.load()},
                       {"video_device_refused_videos", refused_videos_.load()},
                       {"video_device_failures", device_failures_.load()}});
    return c;
  }

 private:
  // Decodes the clip with this thread's NVDEC session; ok when it is in clips_ (or, for frame
  // counts, in the staged output).
  Status decode_on_device(SampleIO& io, VideoState& st, const Clip& clip, const ops::ClipGeometry* g) const {
    HDL_ASSIGN_OR_RETURN(ops::DeviceDecode* dev, device_decode(io, st));
    HDL_RETURN_IF_ERROR(dev->decoder->device_supports(*clip.info));
    if (clip_output().count_only()) {
      VideoDecodeReport report;
      HDL_RETURN_IF_ERROR(dev->decoder->decode_only(*clip.file, *clip.info, clip.frames, &report));
      HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, Shape{}, DType::kI64, Layout::kNone));
      *out.typed<int64_t>() = static_cast<int64_t>(clip.frames.size());
      video_counters().add(report);
      return Status::ok();
    }
    Result<Tensor> pixels = clip_output().decode_device(*dev, *clip.file, *clip.info, clip.frames, g,
                                                        pool(io.device()), video_counters());
    Result<cuda::Event> ready = pixels.is_ok() ? cuda::Event::create(io.device()) : Result<cuda::Event>(pixels.status());
    if (ready.is_ok()) {
      if (Status s = ready->record(dev->stream); !s.is_ok()) ready = s;
    }
    if (!ready.is_ok()) {
      if (pixels.is_ok()) (void)dev->stream.synchronize();  // the block is idle before it goes back to the pool
      return ready.status();
    }
    clips_.put(io.sample(), {std::move(pixels).value(), std::move(ready).value()});
    const int64_t c = color_channels(clip_output().decoder_options().color);
    HDL_ASSIGN_OR_RETURN(TensorView none, io.output(0, Shape{0, 0, 0, c}, DType::kU8, Layout::kFHWC));
    (void)none;
    return Status::ok();
  }

  // This thread's device decoding, made on first use.
  Result<ops::DeviceDecode*> device_decode(SampleIO& io, VideoState& st) const {
    if (!st.device) {
      const Device device = io.device();
      if (device.is_cpu()) return Status::unsupported("NVDEC: the pipeline has no device stage");
      auto dev = std::make_unique<ops::DeviceDecode>();
      HDL_ASSIGN_OR_RETURN(dev->stream, cuda::Stream::create(device));
      VideoDecoderOptions o = clip_output().decoder_options();
      o.device = device;
      o.cuda_stream = dev->stream.handle();
      o.threads = 1;
      dev->decoder = std::make_unique<VideoDecoder>(o);
      dev->workspace = std::make_unique<kernels::cuda::DeviceWorkspace>(device);
      st.device = std::move(dev);
    }
    return st.device.get();
  }

  // The pool of device clip blocks (made on first use, on the pipeline's device).
  BufferPool& pool(Device device) const {
    std::call_once(pool_once_, [&] { pool_ = std::make_unique<BufferPool>(cuda::device_allocator(device.index)); });
    return *pool_;
  }

  // Host -> device (a staged value) or device -> device (a device clip), in the stage's stream
  // order; one event, re-recorded (cuda::copy_async wants one; the stage's stream orders them).
  Status copy(const ConstTensorView& from, const TensorView& to, cuda::Stream& stream) const {
    if (!copied_) {
      HDL_ASSIGN_OR_RETURN(cuda::Event e, cuda::Event::create(stream.device()));
      copied_ = std::move(e);
    }
    return cuda::copy_async(from, to, stream, *copied_);
  }

  std::unique_ptr<std::atomic<uint8_t>[]> refused_;  // per video: NVDEC cannot take it
  mutable DeviceClips clips_;
  mutable std::once_flag pool_once_;
  mutable std::unique_ptr<BufferPool> pool_;
  mutable std::optional<cuda::Event> copied_;  // device half only (serialised by the stage)
  mutable std::atomic<int64_t> device_clips_{0}, cpu_clips_{0}, refused_videos_{0}, device_failures_{0};
};

}  // namespace

std::unique_ptr<Operator> make_mixed_video_reader(const NodeSpec& n) { return std::make_unique<MixedVideoReader>(n); }

}  // namespace hdl
