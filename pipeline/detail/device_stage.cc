#include "pipeline/detail/device_stage.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>

#include "media/cuda/allocator.h"
#include "media/cuda/runtime.h"
#include "pipeline/detail/core.h"
#include "pipeline/errors.h"

namespace hdl::detail {
namespace {

using Clock = std::chrono::steady_clock;

size_t align(size_t bytes) { return (bytes + 255) & ~size_t(255); }

// A sample of the batch as a cpu-stage operator sees it, for arguments and random draws only.
class SampleArgs final : public SampleIO {
 public:
  SampleArgs(const ExecutorCore& core, const Job& job) : core_(core), job_(job) {}

  void begin(int node_index, int64_t slot) {
    node_index_ = node_index, slot_ = slot;
    node_ = &core_.graph.nodes()[node_index];
    const SourceOperator& source = core_.graph.source_op();
    info_ = SampleInfo{job_.epoch, job_.first_position + slot, job_.dataset_indices[slot], job_.attempts[slot],
                       &source.dataset(), source.stable_indices(), source.distinct_samples()};
    rng_.reset();
    args_.clear();
  }

  const SampleInfo& sample() const override { return info_; }
  int num_inputs() const override { return 0; }
  const ConstTensorView& input(int) const override { return none_; }
  const ConstTensorView* arg_input(std::string_view name) const override {
    for (const auto& [arg, value] : node_->arg_inputs) {
      if (arg != name) continue;
      args_.push_back(core_.host_value(job_, value, slot_));
      return &args_.back();
    }
    return nullptr;
  }
  Result<TensorView> output(int, const Shape&, DType, Layout) override {
    return Status::internal("a gpu-stage operator asked a sample for cpu output memory");
  }
  RandomStream& rng() override {
    if (!rng_) rng_.emplace(core_.rng_keys[node_index_], info_.epoch, info_.position, info_.attempt);
    return *rng_;
  }
  RandomStream item_rng(uint64_t item) override {
    return RandomStream(RandomStream::item_key(core_.rng_keys[node_index_]), info_.epoch, item, info_.attempt);
  }
  OpState* state() override { return nullptr; }
  FileSystem& file_system() override { return *core_.file_system; }
  Device device() const override { return core_.device_stage ? core_.device_stage->device() : Device::cpu(); }

 private:
  const ExecutorCore& core_;
  const Job& job_;
  int node_index_ = 0;
  int64_t slot_ = 0;
  const GraphNode* node_ = nullptr;
  SampleInfo info_;
  std::optional<RandomStream> rng_;
  mutable std::deque<ConstTensorView> args_;  // stable addresses while the sample is asked
  ConstTensorView none_;
};

class BatchRun final : public BatchIO {
 public:
  BatchRun(ExecutorCore& core, Job& job, DeviceStage& stage, cuda::Stream& stream,
           kernels::cuda::DeviceWorkspace& workspace, std::vector<Tensor>& held)
      : core_(core), job_(job), stage_(stage), stream_(stream), workspace_(workspace), held_(held), args_(core, job) {}

  Status begin(int node_index) {
    node_index_ = node_index;
    node_ = &core_.graph.nodes()[node_index];
    const bool mixed = node_->spec.stage == Stage::kMixed;
    inputs_.assign(node_->inputs.size(), {});
    for (size_t i = 0; i < node_->inputs.size(); ++i) {
      auto& views = inputs_[i];
      views.reserve(static_cast<size_t>(job_.length));
      if (mixed) {  // cpu values, read where the cpu stage left them
        for (int64_t s = 0; s < job_.length; ++s) views.push_back(core_.host_value(job_, node_->inputs[i], s));
        continue;
      }
      const DeviceValue& d = job_.device[node_->inputs[i]];
      for (int64_t s = 0; s < job_.length; ++s)
        views.push_back(d.dense.defined() ? ConstTensorView(d.dense.slice(s).view()) : ConstTensorView(d.ragged[s].view()));
    }
    staged_.assign(mixed ? node_->outputs.size() : 0, {});
    for (size_t i = 0; i < staged_.size(); ++i)
      for (int64_t s = 0; s < job_.length; ++s) staged_[i].push_back(core_.host_value(job_, node_->outputs[i], s));
    return Status::ok();
  }

  /// Every output written (whole, or for every sample).
  Status check_outputs() const {
    for (int v : node_->outputs) {
      const DeviceValue& d = job_.device[v];
      if (d.dense.defined()) continue;
      for (const Tensor& t : d.ragged)
        if (!t.defined()) return Status::internal("did not produce output " + core_.graph.value_name(v) + " for every sample");
      if (d.ragged.empty() && job_.length > 0)
        return Status::internal("did not produce output " + core_.graph.value_name(v));
    }
    return Status::ok();
  }

  int64_t size() const override { return job_.length; }
  int num_inputs() const override { return static_cast<int>(node_->inputs.size()); }
  const ConstTensorView& input(int i, int64_t s) const override { return inputs_[i][s]; }
  const ConstTensorView& staged(int i, int64_t s) const override {
    return i >= 0 && static_cast<size_t>(i) < staged_.size() ? staged_[i][s] : none_;
  }
  SampleIO& sample_io(int64_t s) override {
    args_.begin(node_index_, s);
    return args_;
  }
  cuda::Stream& stream() override { return stream_; }
  kernels::cuda::DeviceWorkspace& workspace() override { return workspace_; }
  int cpu_threads() const override { return core_.threads; }
  void hold_until_ready(Tensor t) override { held_.push_back(std::move(t)); }

  Result<TensorView> output(int i, int64_t s, const Shape& shape, DType dtype, Layout layout) override {
    if (i < 0 || i >= static_cast<int>(node_->outputs.size()) || s < 0 || s >= job_.length)
      return Status::internal("output " + std::to_string(i) + " of sample " + std::to_string(s) + " is out of range");
    const int value = node_->outputs[i];
    HDL_RETURN_IF_ERROR(check(value, shape, dtype));
    DeviceValue& d = job_.device[value];
    if (d.dense.defined()) return Status::internal("output " + core_.graph.value_name(value) + " was already written whole");
    if (core_.graph.value_spec(value).shape.fully_known()) {
      // A dense value: one [N, ...] block, written sample by sample.
      if (d.ragged.empty()) d.ragged.resize(static_cast<size_t>(job_.length));
      if (!d.ragged[s].defined() && !whole_.count(value)) {
        whole_[value] = stage_.allocate(value, shape.prepend(job_.length), dtype, layout);
      }
      d.ragged[s] = whole_[value].slice(s);
      TensorView v = d.ragged[s].view();
      v.layout = layout;
      return v;
    }
    if (d.ragged.empty()) d.ragged.resize(static_cast<size_t>(job_.length));
    d.ragged[s] = stage_.allocate(value, shape, dtype, layout);
    return d.ragged[s].view();
  }

  bool dense(int i) const override { return core_.graph.value_spec(node_->outputs[i]).shape.fully_known(); }

  Result<TensorView> dense_output(int i, const Shape& sample_shape, DType dtype, Layout layout) override {
    const int value = node_->outputs[i];
    if (!core_.graph.value_spec(value).shape.fully_known())
      return Status::internal("output " + core_.graph.value_name(value) + " has no fixed shape: write it per sample");
    HDL_RETURN_IF_ERROR(check(value, sample_shape, dtype));
    DeviceValue& d = job_.device[value];
    d.dense = stage_.allocate(value, sample_shape.prepend(job_.length), dtype, layout);
    return d.dense.view();
  }

  /// Dense values written per sample become one batch tensor.
  void finish() {
    for (auto& [value, t] : whole_) {
      job_.device[value].dense = std::move(t);
      job_.device[value].ragged.clear();
    }
    whole_.clear();
  }

 private:
  Status check(int value, const Shape& shape, DType dtype) const {
    const TensorSpec& spec = core_.graph.value_spec(value);
    if (dtype != spec.dtype || shape.ndim() != spec.shape.ndim() || (spec.shape.fully_known() && shape != spec.shape))
      return Status::internal("output " + core_.graph.value_name(value) + " is " + dtype_name(dtype) + " " +
                              shape.to_string() + ", declared " + dtype_name(spec.dtype) + " " + spec.shape.to_string());
    return Status::ok();
  }

  ExecutorCore& core_;
  Job& job_;
  DeviceStage& stage_;
  cuda::Stream& stream_;
  kernels::cuda::DeviceWorkspace& workspace_;
  std::vector<Tensor>& held_;  // freed once the batch's ready event has passed
  SampleArgs args_;
  int node_index_ = 0;
  const GraphNode* node_ = nullptr;
  std::vector<std::vector<ConstTensorView>> inputs_;
  std::vector<std::vector<ConstTensorView>> staged_;  // a mixed node's host-half outputs
  ConstTensorView none_;
  std::map<int, Tensor> whole_;
};

}  // namespace

DeviceStage::DeviceStage(ExecutorCore& core, int device_index)
    : core_(core), device_(Device::cuda(device_index)), workspace_(device_),
      pool_(cuda::device_allocator(device_index), core.options.max_cached_bytes),
      releases_(std::make_shared<cuda::DeviceSync::Releases>()) {
  const auto& nodes = core.graph.nodes();
  arenas_.resize(static_cast<size_t>(core.graph.num_values()));
  is_output_.assign(static_cast<size_t>(core.graph.num_values()), false);
  for (int v : core.graph.outputs()) is_output_[v] = true;
  std::vector<bool> uploaded(core.graph.num_values(), false);
  upload_late_.assign(static_cast<size_t>(core.graph.num_values()), false);
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (nodes[n].spec.stage == Stage::kCpu) continue;
    nodes_.push_back(static_cast<int>(n));
    if (nodes[n].spec.stage == Stage::kMixed) continue;  // reads its inputs on the host
    for (int v : nodes[n].inputs) {
      if (core.value_stage[v] == Stage::kCpu && !uploaded[v]) {
        uploaded[v] = true;
        uploads_.push_back(v);
      }
    }
  }
  // Outputs of the cpu stage go to the device with the batch too: a pipeline with a gpu stage
  // hands out device batches only (a pinned block is reused by the cpu stage, which cannot
  // wait on a consumer's stream, so it never leaves the pipeline).
  for (int v : core.graph.outputs()) {
    if (core.value_stage[v] == Stage::kCpu && !uploaded[v]) {
      uploaded[v] = true;
      uploads_.push_back(v);
      upload_late_[v] = true;  // into pooled memory, after the nodes (wait_for_releases)
    }
  }
  const GraphNode& first = nodes[nodes_.front()];
  const std::string who = first.spec.describe() + " (" + stage_name(first.spec.stage) + "): ";
  if (Status st = cuda::require_device(device_); !st.is_ok()) throw ConfigError(who + st.message());
  // The highest priority the device has: a batch's kernels are few and small, and a training
  // step's kernels queued on the consumer's stream would otherwise delay each of them.
  auto stream = cuda::Stream::create(device_, std::numeric_limits<int>::min());
  if (!stream.is_ok()) throw ConfigError(who + stream.status().message());
  stream_ = std::move(stream).value();
  auto event = cuda::Event::create(device_);
  if (!event.is_ok()) throw ConfigError(who + event.status().message());
  copied_ = std::move(event).value();
}

Tensor DeviceStage::allocate(int value, const Shape& shape, DType dtype, Layout layout) {
  const size_t bytes = static_cast<size_t>(shape.num_elements()) * dtype_size(dtype);
  if (is_output_[value]) {  // the consumer's: pooled memory a consumer may have read
    wait_for_releases();
    return Tensor::empty(shape, dtype, layout, pool_);
  }
  Arena& a = arenas_[value];
  const size_t need = a.used + align(bytes);
  if (!a.block || need > a.block->capacity()) {
    // Grows (rarely: a larger batch than any before); tensors of this batch keep the old block.
    const size_t capacity = std::bit_ceil(std::max({need, 2 * (a.block ? a.block->capacity() : 0), size_t(1) << 20}));
    a.block = Storage::allocate(cuda::device_allocator(device_.index), capacity);
    a.used = 0;
  }
  Tensor t(a.block, a.used, shape, dtype, layout);
  a.used += align(bytes);
  return t;
}

size_t DeviceStage::arena_bytes() const {
  size_t total = 0;
  for (const Arena& a : arenas_) total += a.block ? a.block->capacity() : 0;
  return total;
}

DeviceStage::~DeviceStage() {
  // Uploads still reading pinned blocks, and kernels writing pooled memory, finish first.
  if (stream_.valid()) (void)stream_.synchronize();
  pending_.clear();
}

void DeviceStage::reclaim(bool wait) {
  while (!pending_.empty()) {
    const cuda::Event& e = pending_.front().sync->ready();
    if (wait) {
      (void)e.synchronize();
    } else {
      auto done = e.query();
      if (done.is_ok() && !*done) break;  // in order on one stream: the rest are later
    }
    pending_.pop_front();
  }
}

Status DeviceStage::run(Job& job) {
  std::lock_guard lock(mu_);
  try {
    return run_locked(job);
  } catch (const std::bad_alloc& e) {
    return Status::resource_exhausted(std::string("gpu stage: ") + e.what());
  } catch (const std::exception& e) {
    return Status::internal(std::string("gpu stage: exception: ") + e.what());
  }
}

void DeviceStage::wait_for_releases() {
  for (const cuda::Event& e : release_waits_)
    if (Status st = stream_.wait(e); !st.is_ok()) throw std::runtime_error("waiting for a consumer's release: " + st.message());
  release_waits_.clear();
}

Status DeviceStage::upload(Job& job, Pending& pending, bool late) {
  for (int v : uploads_) {
    if (upload_late_[v] != late) continue;
    const int k = core_.collect_of_value[v];
    DeviceValue& d = job.device[v];
    auto one = [&](const Tensor& host) -> Result<Tensor> {
      Tensor dev = allocate(v, host.shape(), host.dtype(), host.layout());
      pending.pinned.push_back(host);
      HDL_RETURN_IF_ERROR(cuda::copy_async(host.view(), dev.view(), stream_, copied_));
      return dev;
    };
    if (core_.dense[k]) {
      HDL_ASSIGN_OR_RETURN(d.dense, one(job.dense[k]));
      continue;
    }
    for (const Tensor& host : job.ragged[k]) {
      Tensor dev = allocate(v, host.shape(), host.dtype(), host.layout());
      pending.pinned.push_back(host);
      HDL_RETURN_IF_ERROR(cuda::copy_async(host.view(), dev.view(), stream_, copied_));
      d.ragged.push_back(std::move(dev));
    }
  }
  return Status::ok();
}

Status DeviceStage::run_locked(Job& job) {
  const std::string where = "batch " + std::to_string(job.batch) + " of epoch " + std::to_string(job.epoch);
  reclaim(false);
  // Memory that consumers released goes back to work only after their queued reads: the
  // stream waits for them before this batch's first write into pooled memory (allocate).
  for (cuda::Event& e : releases_->take()) release_waits_.push_back(std::move(e));

  job.device.assign(static_cast<size_t>(core_.graph.num_values()), {});
  // Values only this stream reads are rewritten batch after batch in place: every read of
  // the last batch's is queued before this batch's first write.
  for (Arena& a : arenas_) a.used = 0;
  Pending pending;
  if (Status st = upload(job, pending, false); !st.is_ok()) {
    (void)stream_.synchronize();  // copies already queued still read `pending`'s blocks
    return Status(st.code(), "gpu stage: " + where + ": upload: " + st.message());
  }
  // A mixed node's device half copies (and its decoder reads) host memory of this batch's
  // cpu stage asynchronously: those blocks go back to their pool only after the batch's event.
  for (int n : nodes_) {
    const GraphNode& node = core_.graph.nodes()[n];
    if (node.spec.stage != Stage::kMixed) continue;
    auto keep = [&](int v) {
      const int k = core_.collect_of_value[v];
      if (core_.dense[k]) return pending.pinned.push_back(job.dense[k]);
      for (const Tensor& t : job.ragged[k])
        if (t.defined()) pending.pinned.push_back(t);
    };
    for (int v : node.inputs) keep(v);
    for (int v : node.outputs) keep(v);
  }
  BatchRun io(core_, job, *this, stream_, workspace_, pending.pinned);
  for (int n : nodes_) {
    const GraphNode& node = core_.graph.nodes()[n];
    const auto t0 = Clock::now();
    Status st = io.begin(n);
    if (st.is_ok()) st = node.op->run_batch(io);
    io.finish();
    if (st.is_ok()) st = io.check_outputs();
    NodeCounters& c = core_.counters[n];
    c.nanos.fetch_add(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count()),
                      std::memory_order_relaxed);
    // A mixed node's samples were counted by its host half on the cpu stage.
    if (node.spec.stage != Stage::kMixed) c.samples.fetch_add(static_cast<uint64_t>(job.length), std::memory_order_relaxed);
    if (!st.is_ok()) {
      c.failures.fetch_add(static_cast<uint64_t>(job.length), std::memory_order_relaxed);
      (void)stream_.synchronize();  // the stream may still read this batch's uploads
      return Status(st.code(), node.spec.describe() + " (" + stage_name(node.spec.stage) + "): " + where + ": " +
                                   st.message());
    }
  }
  if (Status st = upload(job, pending, true); !st.is_ok()) {
    (void)stream_.synchronize();  // copies already queued still read `pending`'s blocks
    return Status(st.code(), "gpu stage: " + where + ": upload: " + st.message());
  }
  Result<cuda::Event> ready = cuda::Event::create(device_);
  if (ready.is_ok()) {
    if (Status st = ready->record(stream_); !st.is_ok()) ready = st;
  }
  if (!ready.is_ok()) {
    (void)stream_.synchronize();  // queued copies still read this batch's pinned blocks
    return ready.status();
  }
  auto sync = std::make_shared<const cuda::DeviceSync>(std::move(ready).value(), releases_);
  pending.sync = sync;
  if (!pending.pinned.empty()) pending_.push_back(std::move(pending));
  job.device_sync = std::move(sync);
  return Status::ok();
}

}  // namespace hdl::detail
