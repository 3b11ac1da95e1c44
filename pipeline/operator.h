// Operator: the per-sample unit of work in a pipeline graph.
//
// An operator is built once per pipeline from a validated node (constant arguments parsed in
// its constructor), declares what it can say about its outputs before any data is seen
// (infer_outputs), and then runs once per sample on any worker thread. Per-thread state that
// is expensive to create (a decoder instance) lives in an OpState the executor keeps per
// thread. Operators parse arguments and call kernels (pipeline/kernels/); the pixels are the
// kernels' business.
//
// Thread safety: run() is called concurrently from many threads on one Operator; it must only
// read the operator's members, and mutate only its OpState and outputs.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "media/api.h"
#include "media/status.h"
#include "media/tensor.h"
#include "pipeline/random.h"
#include "pipeline/schema.h"

HDL_API_BEGIN
namespace hdl {

class Dataset;
class FileSystem;
namespace cuda { class Stream; }
namespace kernels::cuda { class DeviceWorkspace; }

/// What is known of a tensor before data is seen: dtype, layout and shape, where a dim of -1
/// is not known until run time. A fully known shape makes the output batch dense.
struct TensorSpec {
  DType dtype = DType::kU8;
  Shape shape;
  Layout layout = Layout::kNone;
};

/// Which sample is being processed.
struct SampleInfo {
  int64_t epoch = 0;
  int64_t position = 0;       ///< slot in the epoch's sequence (the random stream's counter)
  int64_t dataset_index = 0;  ///< which sample of the dataset fills the slot
  uint32_t attempt = 0;       ///< 0, or k for the k-th replacement after skipped failures
  const Dataset* dataset = nullptr;
  /// SourceOperator::stable_indices(): dataset_index names the same sample in every epoch, so
  /// per-sample caches may be keyed by it (false: a streaming reader's stream positions).
  bool stable_index = true;
  /// SourceOperator::distinct_samples(): how many different samples the run draws from, for
  /// per-sample caches that share a budget out over them (0: unknown).
  int64_t distinct_samples = 0;
};

/// Per-thread mutable state of an operator (decoder instances, scratch buffers).
class OpState {
 public:
  virtual ~OpState() = default;
};

/// What an operator sees of one sample: its inputs, its outputs, its random stream.
/// Implemented by the executor.
class SampleIO {
 public:
  virtual ~SampleIO() = default;
  virtual const SampleInfo& sample() const = 0;
  virtual int num_inputs() const = 0;
  virtual const ConstTensorView& input(int i) const = 0;
  /// The per-sample tensor bound to argument `name`, or nullptr when it is a constant.
  virtual const ConstTensorView* arg_input(std::string_view name) const = 0;
  /// Memory for output i, of the given shape: a slot of the output batch when the output is a
  /// dense pipeline output (shape must then equal the batch's sample shape), or scratch.
  /// Call at most once per output per run. Errors when the shape contradicts the batch.
  virtual Result<TensorView> output(int i, const Shape& shape, DType dtype, Layout layout) = 0;
  /// This operator's random stream for this sample (same numbers on every run and thread count).
  virtual RandomStream& rng() = 0;
  /// This operator's random stream for `item` of this epoch and attempt instead of this
  /// sample's slot: a stream several samples share, the same whichever sample (or thread) asks
  /// (a video reader with group_clips draws all of a video's clips from the video's stream).
  /// Depends on (seed, operator, epoch, item, attempt) only; distinct from every rng().
  virtual RandomStream item_rng(uint64_t item) = 0;
  /// This operator's state on this thread (from Operator::make_state), or nullptr.
  virtual OpState* state() = 0;
  /// Where files are read from (PipelineOptions::file_system, or the real file system); readers
  /// open every sample's file through it. Shared by all threads (see media/file_system.h).
  virtual FileSystem& file_system() = 0;
  /// The device of the pipeline's device stage (cuda:N), or cpu for a pipeline without one: where
  /// a mixed-stage operator's host half may put device work of its own.
  virtual Device device() const { return Device::cpu(); }

  /// A key that names this sample's content in every epoch, for per-sample caches (the JPEG
  /// entry-point index): the dataset index where the source's indices are stable
  /// (SampleInfo::stable_index); else the key the source operator gave set_content_key() in
  /// this run (a streaming reader: a hash of the sample's shard and key); else none. A cache
  /// keyed by it must still check the bytes it is handed (two contents may share a hash).
  virtual std::optional<uint64_t> content_key() const {
    return sample().stable_index ? std::optional<uint64_t>(uint64_t(sample().dataset_index)) : std::nullopt;
  }
  /// For a source operator whose indices are not stable: names what this run delivers, for the
  /// operators after it (content_key()). Ignored where the executor keeps no such key.
  virtual void set_content_key(uint64_t /*key*/) {}

  /// The per-sample scalar bound to `name` (first element, as double), or `fallback`.
  double scalar_arg(std::string_view name, double fallback) const;
};

/// What a gpu-stage operator sees of one batch: its inputs on the device, its per-sample
/// arguments on the host (drawn by the cpu stage), the stream its work goes on. Implemented by
/// the executor's device stage (pipeline/detail/device_stage.h).
class BatchIO {
 public:
  virtual ~BatchIO() = default;
  virtual int64_t size() const = 0;  ///< samples in the batch
  virtual int num_inputs() const = 0;
  /// Input i of sample s: a view of device memory (on stream().device()); for a mixed-stage
  /// operator, of host memory (its inputs come from the cpu stage and are not uploaded).
  virtual const ConstTensorView& input(int i, int64_t s) const = 0;
  /// A mixed-stage operator's host half's output i for sample s: what its run() wrote on the
  /// cpu stage (pinned host memory). Empty views for other operators.
  virtual const ConstTensorView& staged(int i, int64_t s) const = 0;
  /// Arguments, random stream and sample of sample s, exactly as a cpu-stage run sees them
  /// (the same Philox stream), so the ops::*_arg helpers and the cpu operators' parameter
  /// draws serve both stages. Its input() and output() are not for use.
  virtual SampleIO& sample_io(int64_t s) = 0;
  /// Memory for output i of sample s, on the device. Call at most once per output and sample.
  virtual Result<TensorView> output(int i, int64_t s, const Shape& shape, DType dtype, Layout layout) = 0;
  /// Whether output i has a shape infer_outputs fully knows: one [N, ...] batch (dense_output).
  virtual bool dense(int i) const = 0;
  /// Output i of every sample as one [N, ...sample_shape] device view (one launch per batch);
  /// only for a dense output. Instead of output(i, s, ...).
  virtual Result<TensorView> dense_output(int i, const Shape& sample_shape, DType dtype, Layout layout) = 0;
  /// Where the work goes: enqueue only, never synchronise.
  virtual cuda::Stream& stream() = 0;
  /// Device scratch of the kernels, for this stream.
  virtual kernels::cuda::DeviceWorkspace& workspace() = 0;
  /// The pipeline's worker threads (the cpu stage's), e.g. to weigh CPU work against the device's.
  virtual int cpu_threads() const = 0;
  /// Keeps `t` (memory this batch's queued device work reads, e.g. a staging block the
  /// operator's host half filled) alive until the batch's ready event has passed.
  virtual void hold_until_ready(Tensor t) = 0;
};

class Operator {
 public:
  virtual ~Operator() = default;
  /// What the outputs will be, given what is known of the inputs. Throws ConfigError when the
  /// inputs cannot be accepted (wrong dtype, layout, channel count).
  virtual std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec> inputs) const = 0;
  /// Processes one sample. Data problems are returned as a Status (the executor adds operator,
  /// sample and file to the message and applies the error policy); never throw for bad data.
  virtual Status run(SampleIO& io) const = 0;
  /// Processes a whole batch on the device (gpu-stage operators, made by OpSchema::
  /// create_device): enqueues its kernels on io.stream(). A failure fails the batch.
  virtual Status run_batch(BatchIO& io) const;
  /// Per-thread state, created lazily on each worker thread. Default: none.
  virtual std::unique_ptr<OpState> make_state() const { return nullptr; }
  /// Operator-specific counters for PipelineStats (e.g. image_decoder's JPEG index cache), as
  /// (name, value) pairs. Called from any thread while the pipeline runs. Default: none.
  virtual std::vector<std::pair<std::string, int64_t>> counters() const { return {}; }
};

/// A reader: the source of a pipeline. It names the dataset and how an epoch walks it.
class SourceOperator : public Operator {
 public:
  struct Sharding {
    int64_t shard_id = 0;
    int64_t num_shards = 1;
    bool shuffle = false;
    int64_t shuffle_buffer = 0;   ///< 0: full permutation; else a bounded shuffle buffer
    std::string last_batch = "partial";  ///< drop, partial, pad, fill
    bool pad_shards = false;      ///< every shard gets the same number of samples (DDP)
  };
  /// The files the reader walks (paths and labels).
  virtual const Dataset& dataset() const = 0;
  virtual const Sharding& sharding() const = 0;
  /// Samples an epoch draws from: one per file by default; a video reader has one per clip.
  /// SampleInfo::dataset_index counts these. Known once prepare() has returned.
  virtual int64_t num_samples() const;
  /// The file (index into dataset()) sample `sample` reads.
  virtual int64_t file_index(int64_t sample) const { return sample; }
  /// How messages name sample `sample`: by default its file's path, quoted; a reader whose
  /// samples live inside containers names the container and the member (a tar shard and the
  /// sample's key). Known once prepare() has returned.
  virtual std::string describe_sample(int64_t sample) const;
  /// Called once, before the first sample is scheduled, on a thread of the pipeline's arena (so
  /// it may use TBB to work in parallel), with the pipeline's file system: a reader that must
  /// look into its files to know its samples (a video reader counting frames) does it here.
  /// Errors are configuration errors (thrown ConfigError); a bad file is not one (it is
  /// reported when its samples run). Default: nothing.
  virtual void prepare(FileSystem& file_system);
  /// Called by the executor when the consumer moves (a resume, a seek, a reset) to slot
  /// `position` of `epoch`: the slots before it will not be asked for again, except as
  /// replacements of failed samples. A reader that reads its samples in sequence (a streaming
  /// reader) skips them without keeping them. Default: nothing.
  virtual void start_at(int64_t /*epoch*/, int64_t /*position*/) {}
  /// Whether a sample index names the same sample in every epoch (true by default; false for a
  /// reader whose indices are positions in a stream whose contents change with the epoch).
  virtual bool stable_indices() const { return true; }
  /// How many different samples (content keys) the run draws from over its epochs, on this
  /// rank: what a per-sample cache shares its budget out over (the decoder's JPEG indexes).
  /// Default: dataset().size(), one per file. A streaming reader, whose dataset lists shards,
  /// gives the samples in them. Known once prepare() has returned.
  virtual int64_t distinct_samples() const;
  /// Samples come in groups of this many consecutive dataset indices (from 0) that an epoch
  /// keeps together and in order (a video reader's group_clips: one video's clips, in time
  /// order): the epoch order shuffles, shards and pads whole groups, and the executor runs the
  /// consecutive slots of one group within a batch as one task, in order, on one thread (so a
  /// decoder can go on from one to the next). num_samples() must be a multiple of it. Known
  /// once prepare() has returned. Default 1: no grouping.
  virtual int64_t sample_group() const { return 1; }
  /// Called by the executor (on the consumer's thread) when it schedules a batch, up to
  /// prefetch_depth batches before it is taken, with the dataset indices of its samples in
  /// slot order: a reader whose samples live in remote files hints their byte ranges
  /// (RandomAccessFile::will_need) so that their requests are in flight before the worker
  /// threads get to them. Must be quick and never block on I/O. Default: nothing.
  virtual void will_read(std::span<const int64_t> /*dataset_indices*/) const {}
};

}  // namespace hdl
HDL_API_END
