#include "pipeline/detail/executor.h"

#include "media/cancel.h"
#include "media/cuda/allocator.h"
#include "media/cache_file_system.h"
#include "media/url_file_system.h"
#include "pipeline/detail/autotune.h"
#include "pipeline/detail/core.h"
#include "pipeline/detail/device_stage.h"
#include "pipeline/registry.h"

#include <bit>
#include <chrono>
#include <cstdlib>
#include <new>
#include <thread>

namespace hdl::detail {
namespace {

using Clock = std::chrono::steady_clock;

uint64_t nanos_since(Clock::time_point t0) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
}

constexpr int kAuto = PipelineOptions::kAuto;

// The arena's size: num_threads, or with kAuto the most threads the tuner may choose.
int resolve_threads(const PipelineOptions& o) {
  if (o.num_threads < 0 && o.num_threads != kAuto)
    throw ConfigError("num_threads must be >= 0 (0: one per hardware thread) or " + std::to_string(kAuto) +
                      " (auto), got " + std::to_string(o.num_threads));
  if (o.max_threads < 0) throw ConfigError("max_threads must be >= 0 (0: the CPUs this process may use), got " +
                                           std::to_string(o.max_threads));
  if (o.num_threads == kAuto) return o.max_threads > 0 ? std::min(o.max_threads, available_cpus()) : available_cpus();
  if (o.num_threads > 0) return o.num_threads;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

uint64_t fnv(uint64_t h, std::string_view s) {
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return (h ^ 0xff) * 0x100000001b3ull;  // a separator, so ("ab","c") != ("a","bc")
}

bool has_stage(const Graph& g, Stage stage) {
  for (const auto& n : g.nodes())
    if (n.spec.stage == stage) return true;
  return false;
}

void check_options(const PipelineOptions& options) {
  if (options.batch_size < 1) throw ConfigError("batch_size must be >= 1, got " + std::to_string(options.batch_size));
  if (options.prefetch_depth < 1 && options.prefetch_depth != kAuto)
    throw ConfigError("prefetch_depth must be >= 1 or " + std::to_string(kAuto) + " (auto), got " +
                      std::to_string(options.prefetch_depth));
  if (options.max_failures < 0) throw ConfigError("max_failures must be >= 0");
  if (options.epochs < 0) throw ConfigError("epochs (the run-length hint) must be >= 0 (0: unknown), got " + std::to_string(options.epochs));
}

// Where the readers open files: the caller's file system, else the default one (URLs too)
// under options.cache's directory when it names one (else the environment's cache, if any),
// with members of tar shards as files ("<shard>.tar/<member>", shard_member_file_system in
// registry.h).
std::shared_ptr<FileSystem> pipeline_file_system(const PipelineOptions& options) {
  if (options.file_system) return options.file_system;
  try {
    return shard_member_file_system(default_file_system(options.cache));
  } catch (const std::invalid_argument& e) {  // a bad cache_dir / cache_limit, or HDL_CACHE_*
    throw ConfigError(e.what());
  }
}

// The fingerprint that ties a saved state to this pipeline.
uint64_t fingerprint_of(const ExecutorCore& c) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const auto& node : c.graph.nodes()) {
    h = fnv(fnv(h, node.spec.op), node.spec.name);
    for (const auto& [k, v] : node.spec.args) h = fnv(fnv(h, k), v.to_string());
    for (int in : node.inputs) h = fnv(h, std::to_string(in));
  }
  for (int v : c.graph.outputs()) h = fnv(h, std::to_string(v));
  const Dataset& d = c.graph.source_op().dataset();
  h = fnv(h, std::to_string(d.size()) + "/" + std::to_string(c.options.batch_size) + "/" +
                 std::to_string(c.options.seed));
  if (const int64_t n = c.graph.source_op().num_samples(); n != d.size()) h = fnv(h, std::to_string(n));
  if (d.size() > 0) h = fnv(fnv(h, d.relative_path(0)), d.relative_path(d.size() - 1));
  return h;
}

}  // namespace

ExecutorCore::ExecutorCore(const PipelineSpec& spec, const PipelineOptions& opts, const OpRegistry& registry)
    : graph(Graph::build(spec, registry)),
      options(opts),
      file_system(pipeline_file_system(opts)),
      threads(resolve_threads(opts)),
      budget(threads),
      arena(threads, 0),
      pool(has_stage(graph, Stage::kDevice) || has_stage(graph, Stage::kMixed)
               ? static_cast<Allocator&>(cuda::pinned_host_allocator()) : host_allocator(),
           opts.max_cached_bytes),
      counters(graph.nodes().size()) {
  // A reader that looks into its files to know its samples does it once, in parallel.
  arena.execute([&] { graph.source_op().prepare(*file_system); });
  check_options(opts);
  // Auto starts at half the CPUs (conservative: the consumer and the training step need CPU
  // too) and one batch ahead (tf.data's prefetch autotuner starts at one).
  target_workers = opts.num_threads == kAuto ? (threads + 1) / 2 : threads;
  prefetch_depth = opts.prefetch_depth == kAuto ? 1 : opts.prefetch_depth;
  collect_values();
  if (has_stage(graph, Stage::kDevice) || has_stage(graph, Stage::kMixed))
    device_stage = std::make_unique<DeviceStage>(*this, opts.device_id);
}

void ExecutorCore::collect_values() {
  value_stage.assign(graph.num_values(), Stage::kCpu);
  for (const auto& node : graph.nodes()) {
    rng_keys.push_back(RandomStream::key_for(options.seed, node.spec.name));
    for (int v : node.outputs) value_stage[v] = node.spec.stage;
  }
  // Host values to keep per batch: pipeline outputs of the cpu stage, and the cpu-stage values
  // gpu nodes read (inputs to upload, per-sample arguments read on the host).
  collect_of_value.assign(graph.num_values(), -1);
  auto collect = [&](int v) {
    if (value_stage[v] != Stage::kCpu || collect_of_value[v] >= 0) return;
    collect_of_value[v] = static_cast<int>(collected.size());
    collected.push_back(v);
    const TensorSpec& s = graph.value_spec(v);
    dense.push_back(s.shape.fully_known());
    sample_shape.push_back(s.shape);
  };
  std::vector<bool> listed(graph.num_values(), false);
  for (int v : graph.outputs()) {
    if (listed[v]) throw ConfigError("pipeline output " + graph.value_name(v) + " is listed twice");
    listed[v] = true;
    collect(v);
  }
  for (const auto& node : graph.nodes()) {
    if (node.spec.stage != Stage::kDevice) continue;
    for (int v : node.inputs) collect(v);
    for (const auto& [name, v] : node.arg_inputs) {
      if (value_stage[v] != Stage::kCpu)
        throw ConfigError(node.spec.describe() + " (gpu): argument \"" + name + "\" reads " + graph.value_name(v) +
                          ", made on the gpu stage; per-sample arguments come from the cpu stage");
      collect(v);
    }
  }
  // A mixed node runs in two halves: its host half on the cpu stage (reading cpu values,
  // kept per batch like a gpu node's inputs) writes staged host values under the node's own
  // output ids, always ragged (a sample its device half decodes may stage nothing); its device
  // half reads them (BatchIO::staged) and writes the device values of the same ids.
  for (const auto& node : graph.nodes()) {
    if (node.spec.stage != Stage::kMixed) continue;
    for (int v : node.inputs) collect(v);
    for (const auto& [name, v] : node.arg_inputs) collect(v);
    for (int v : node.outputs) {
      collect_of_value[v] = static_cast<int>(collected.size());
      collected.push_back(v);
      dense.push_back(false);
      sample_shape.push_back(graph.value_spec(v).shape);
    }
  }
  arena_bytes = std::make_unique<std::atomic<size_t>[]>(collected.size());
  for (size_t k = 0; k < collected.size(); ++k) arena_bytes[k] = 0;
}

ExecutorCore::~ExecutorCore() = default;

ConstTensorView ExecutorCore::host_value(const Job& job, int value, int64_t slot) const {
  const int k = collect_of_value[value];
  return dense[k] ? ConstTensorView(job.dense[k].slice(slot).view())
                  : ConstTensorView(job.ragged[k][slot].view());
}

void ScratchBuffer::Free::operator()(void* p) const { std::free(p); }

void* ScratchBuffer::reserve(size_t bytes) {
  if (bytes > capacity_) {
    const size_t cap = BufferPool::round_up(std::max<size_t>(bytes, 4096));
    void* p = std::aligned_alloc(Allocator::kAlignment, cap);
    if (!p) throw std::bad_alloc();
    data_.reset(p);
    capacity_ = cap;
  }
  return data_.get();
}

namespace {

// The SampleIO of one node on one sample.
class SampleRun final : public SampleIO {
 public:
  SampleRun(Executor::Core& core, Job& job, int64_t slot, Workspace& ws, const SampleInfo& info)
      : core_(core), job_(job), slot_(slot), ws_(ws), info_(info) {}

  void begin(int node_index) {
    node_index_ = node_index;
    node_ = &core_.graph.nodes()[node_index];
    rng_.reset();
    produced_ = 0;
  }
  bool produced_all() const { return produced_ == (1u << node_->outputs.size()) - 1; }

  const SampleInfo& sample() const override { return info_; }
  std::optional<uint64_t> content_key() const override {
    return content_key_ ? content_key_ : SampleIO::content_key();  // the source's, else the stable index
  }
  void set_content_key(uint64_t key) override { content_key_ = key; }
  int num_inputs() const override { return static_cast<int>(node_->inputs.size()); }
  const ConstTensorView& input(int i) const override { return ws_.values[node_->inputs[i]]; }
  const ConstTensorView* arg_input(std::string_view name) const override {
    for (const auto& [arg, value] : node_->arg_inputs)
      if (arg == name) return &ws_.values[value];
    return nullptr;
  }
  RandomStream& rng() override {
    if (!rng_) rng_.emplace(core_.rng_keys[node_index_], info_.epoch, info_.position, info_.attempt);
    return *rng_;
  }
  RandomStream item_rng(uint64_t item) override {
    return RandomStream(RandomStream::item_key(core_.rng_keys[node_index_]), info_.epoch, item, info_.attempt);
  }
  OpState* state() override {
    if (!ws_.state_made[node_index_]) {
      ws_.states[node_index_] = node_->op->make_state();
      ws_.state_made[node_index_] = true;
    }
    return ws_.states[node_index_].get();
  }
  FileSystem& file_system() override { return *core_.file_system; }
  Device device() const override { return core_.device_stage ? core_.device_stage->device() : Device::cpu(); }

  Result<TensorView> output(int i, const Shape& shape, DType dtype, Layout layout) override {
    const int value = node_->outputs[i];
    const TensorSpec& spec = core_.graph.value_spec(value);
    if (dtype != spec.dtype || shape.ndim() != spec.shape.ndim())
      return Status::internal("output " + core_.graph.value_name(value) + " is " + dtype_name(dtype) +
                              " " + shape.to_string() + ", declared " + dtype_name(spec.dtype) + " " +
                              spec.shape.to_string());
    TensorView view;
    const int out = core_.collect_of_value[value];
    if (out >= 0 && core_.dense[out]) {
      if (shape != core_.sample_shape[out])
        return Status::internal("output " + core_.graph.value_name(value) + " has shape " +
                                shape.to_string() + ", the batch expects " +
                                core_.sample_shape[out].to_string());
      view = job_.dense[out].slice(slot_).view();
    } else if (out >= 0) {
      Tensor t = core_.device_stage ? arena_tensor(out, shape, dtype, layout) : Tensor::empty(shape, dtype, layout, core_.pool);
      view = t.view();
      job_.ragged[out][slot_] = std::move(t);
    } else {
      const size_t bytes = static_cast<size_t>(shape.num_elements()) * dtype_size(dtype);
      view = TensorView(ws_.scratch[value].reserve(bytes), shape, dtype, layout);
    }
    view.layout = layout;
    ws_.values[value] = view;
    produced_ |= 1u << i;
    return view;
  }

 private:
  // Pinned memory of a sample of any size that a gpu stage uploads: a part of the batch's
  // block (one pool block per batch, the same size batch after batch), or its own
  // power-of-two block when the batch outgrows the block.
  Tensor arena_tensor(int k, const Shape& shape, DType dtype, Layout layout) {
    const size_t bytes = (static_cast<size_t>(shape.num_elements()) * dtype_size(dtype) + 255) & ~size_t(255);
    const size_t offset = job_.arena_used[k].fetch_add(bytes, std::memory_order_relaxed);
    const StoragePtr& arena = job_.arena[k];
    if (arena && offset + bytes <= arena->capacity()) return Tensor(arena, offset, shape, dtype, layout);
    return Tensor(core_.pool.acquire(std::bit_ceil(std::max<size_t>(bytes, 4096))), 0, shape, dtype, layout);
  }

  Executor::Core& core_;
  Job& job_;
  int64_t slot_;
  Workspace& ws_;
  SampleInfo info_;
  int node_index_ = 0;
  const GraphNode* node_ = nullptr;
  std::optional<RandomStream> rng_;
  uint32_t produced_ = 0;
  std::optional<uint64_t> content_key_;  // set by a source whose indices are not stable
};

}  // namespace

Workspace& Executor::Core::workspace() {
  Workspace& ws = workspaces.local();
  if (ws.values.empty()) {
    ws.states.resize(graph.nodes().size());
    ws.state_made.assign(graph.nodes().size(), false);
    ws.scratch.resize(graph.num_values());
    ws.values.resize(graph.num_values());
  }
  return ws;
}

Status Executor::Core::run_sample(Job& job, int64_t slot, const SampleInfo& info, Workspace& ws) {
  SampleRun io(*this, job, slot, ws, info);
  const auto& nodes = graph.nodes();
  for (size_t n = 0; n < nodes.size(); ++n) {
    // gpu nodes run per batch in the device stage; mixed nodes run their host half here.
    if (nodes[n].spec.stage == Stage::kDevice) continue;
    io.begin(static_cast<int>(n));
    const auto t0 = Clock::now();
    Status st;
    try {
      st = nodes[n].op->run(io);
      if (st.is_ok() && !io.produced_all()) st = Status::internal("did not produce all its outputs");
    } catch (const std::bad_alloc&) {
      st = Status::resource_exhausted("out of memory");
    } catch (const std::exception& e) {
      st = Status::internal(std::string("exception: ") + e.what());
    }
    NodeCounters& c = counters[n];
    c.nanos.fetch_add(nanos_since(t0), std::memory_order_relaxed);
    c.samples.fetch_add(1, std::memory_order_relaxed);
    if (!st.is_ok()) {
      c.failures.fetch_add(1, std::memory_order_relaxed);
      return Status(st.code(), nodes[n].spec.describe() + ": sample " + std::to_string(info.dataset_index) + " " +
                                   graph.source_op().describe_sample(info.dataset_index) + ": " + st.message());
    }
  }
  return Status::ok();
}

void Executor::Core::record_failure(const Status& status) {
  std::lock_guard lock(errors_mu);
  recent_errors.push_back(status.message());
  if (recent_errors.size() > 16) recent_errors.pop_front();
}

bool Executor::Core::process(Job& job, int64_t slot) {
  if (job.generation == generation.load(std::memory_order_relaxed)) {
    // Blocking I/O below (a remote read) stops once this job's generation is dropped (the
    // pipeline destroyed or reset): nobody waits for a stalled server.
    const CancelScope cancel(&generation, job.generation);
    Workspace& ws = workspace();
    const EpochOrder& order = *job.order;
    const int64_t position = job.first_position + slot;
    const int64_t n = std::max<int64_t>(order.shard_size(), 1);
    const bool stable_indices = graph.source_op().stable_indices();
    const int64_t distinct = graph.source_op().distinct_samples();
    for (uint32_t attempt = 0;; ++attempt) {
      // A replacement is the next sample in epoch order (deterministic whatever the threads).
      const int64_t index = attempt == 0 ? order.dataset_index(position)
                                         : order.dataset_index((position + attempt) % n);
      const SampleInfo info{job.epoch, position, index, attempt, &graph.source_op().dataset(),
                            stable_indices, distinct};
      Status st = run_sample(job, slot, info, ws);
      if (st.is_ok()) {
        job.dataset_indices[slot] = index;
        job.attempts[slot] = attempt;
        if (attempt > 0) job.replaced.fetch_add(1, std::memory_order_relaxed);
        break;
      }
      if (job.generation != generation.load(std::memory_order_relaxed)) break;  // dropped: not a failure
      record_failure(st);
      // The budget is settled when the consumer takes the batch (deterministic whatever the
      // thread count or prefetch depth); here a single sample only stops retrying once it
      // alone exceeds the budget, or has tried every sample of the shard.
      job.failures.fetch_add(1, std::memory_order_relaxed);
      {
        std::lock_guard lock(job.mu);
        job.last_failure = st;
      }
      Status fatal;
      if (options.on_error == ErrorPolicy::kRaise) {
        fatal = st;
      } else {
        if (attempt + 1 > static_cast<uint32_t>(options.max_failures)) {
          fatal = Status(st.code(), "more than max_failures=" + std::to_string(options.max_failures) +
                                        " samples failed; the last: " + st.message());
        } else if (attempt + 1 >= static_cast<uint32_t>(n)) {
          fatal = Status(st.code(), "no sample of the shard could be produced; the last: " + st.message());
        } else if (job.generation != generation.load(std::memory_order_relaxed)) {
          break;
        } else {
          continue;
        }
      }
      std::lock_guard lock(job.mu);
      if (job.error.is_ok()) job.error = fatal;
      break;
    }
  }
  const bool last = job.remaining.fetch_sub(1) == 1;
  if (last && device_stage) {
    for (size_t k = 0; k < dense.size(); ++k) {
      if (dense[k]) continue;
      const size_t used = job.arena_used[k].load();
      size_t seen = arena_bytes[k].load();
      while (used > seen && !arena_bytes[k].compare_exchange_weak(seen, used)) {
      }
    }
  }
  if (last && device_stage && job.generation == generation.load(std::memory_order_relaxed)) {
    bool ok;
    {
      std::lock_guard lock(job.mu);
      ok = job.error.is_ok();
    }
    if (ok) {
      Status st = device_stage->run(job);
      if (!st.is_ok()) {
        record_failure(st);
        std::lock_guard lock(job.mu);
        job.error = st;
      }
    }
  }
  return last;
}

void Executor::Core::start_workers_locked() {
  const int target = target_workers.load(std::memory_order_relaxed);
  while (workers < target && static_cast<size_t>(workers) < pending.size()) {
    ++workers;
    arena.enqueue([this] { work(); });  // ~Executor waits for workers == 0
  }
}

void Executor::Core::set_target_workers(int n) {
  target_workers = std::clamp(n, 1, threads);
  std::lock_guard lock(mu);
  start_workers_locked();  // a lower target takes effect as workers finish their sample
}

void Executor::Core::work() {
  std::shared_ptr<Job> job;
  int64_t slot = 0, end = 0;
  // Takes the next item, or retires this worker (dropping its job reference under the lock,
  // since a Job's tensors return to the pool). Caller holds mu.
  auto take = [&] {
    if (pending.empty() || workers > target_workers.load(std::memory_order_relaxed)) {
      job.reset();
      --workers;
      return false;
    }
    job = std::move(pending.front().job);
    slot = pending.front().slot;
    end = pending.front().end;
    pending.pop_front();
    return true;
  };
  {
    std::lock_guard lock(mu);
    if (!take()) {
      if (workers == 0) cv.notify_all();
      return;
    }
  }
  for (;;) {
    bool last = false;
    for (int64_t k = slot; k < end; ++k) {
      last = process(*job, k) || last;
      finished.fetch_add(1, std::memory_order_relaxed);
    }
    // Last touch of the Core by this task when it retires: the executor may be destroyed
    // right after.
    std::lock_guard lock(mu);
    if (last) job->done = true;
    outstanding -= end - slot;
    const bool more = take();
    // Waiters wait for a whole batch (next) or for no work at all (~Executor): waking them for
    // every sample cost a futex wake and a context switch of the consumer per sample.
    if (outstanding == 0 || last || (!more && workers == 0)) cv.notify_all();
    if (!more) return;
  }
}

Executor::Executor(const PipelineSpec& spec, const PipelineOptions& options, const OpRegistry& registry)
    : core_(std::make_shared<Core>(spec, options, registry)), fingerprint_(fingerprint_of(*core_)) {
  if (options.num_threads == PipelineOptions::kAuto)
    thread_tuner_.emplace(core_->target_workers.load(), core_->threads, Clock::now());
  if (options.prefetch_depth == PipelineOptions::kAuto)
    prefetch_tuner_.emplace(core_->prefetch_depth.load(), options.prefetch_memory_budget);
}

Executor::~Executor() {
  cancel_in_flight();
  std::unique_lock lock(core_->mu);
  core_->cv.wait(lock, [&] { return core_->outstanding == 0 && core_->workers == 0; });
}

bool Executor::has_order(int64_t epoch) const {
  std::lock_guard lock(orders_mu_);
  return !external_order_ || given_.count(epoch);
}

void Executor::set_epoch_order(int64_t epoch, std::vector<int64_t> order) {
  const SourceOperator& src = core_->graph.source_op();
  auto given = std::make_shared<const EpochOrder>(std::move(order), src.num_samples(), core_->options.batch_size,
                                                 src.sharding().last_batch, epoch);
  {
    std::lock_guard lock(orders_mu_);
    external_order_ = true;
    given_[epoch] = std::move(given);
    while (given_.size() > 4) given_.erase(given_.begin());  // keep recent epochs only
  }
  // Work in flight for this epoch followed another order: drop it and go on from where the
  // consumer is (a resumed position is kept).
  bool stale = false;
  for (const auto& job : in_flight_) stale |= job->epoch == epoch;
  if (stale) reset(epoch_, next_batch_);
}

std::shared_ptr<const EpochOrder> Executor::order_for(int64_t epoch) const {
  std::lock_guard lock(orders_mu_);
  if (external_order_) {
    auto it = given_.find(epoch);
    if (it == given_.end())
      throw PipelineStateError("epoch " + std::to_string(epoch) + " has no order: call set_epoch_order first");
    return it->second;
  }
  for (const auto& p : orders_)
    if (p && p->epoch() == epoch) return p;
  const SourceOperator& src = core_->graph.source_op();
  auto order = std::make_shared<const EpochOrder>(src.num_samples(), core_->options.batch_size,
                                                 src.sharding(), core_->options.seed, epoch, src.sample_group());
  orders_.push_back(order);
  if (orders_.size() > 3) orders_.pop_front();
  return order;
}

void Executor::schedule(int64_t epoch, int64_t batch) {
  Core& c = *core_;
  auto job = std::make_shared<Job>();
  job->generation = c.generation.load();
  job->epoch = epoch;
  job->batch = batch;
  job->order = order_for(epoch);
  job->first_position = batch * job->order->batch_size();
  job->length = job->order->batch_length(batch);
  job->dataset_indices.assign(job->length, -1);
  job->attempts.assign(job->length, 0);
  job->ragged.resize(c.dense.size());
  for (size_t k = 0; k < c.dense.size(); ++k) {
    if (c.dense[k]) {
      const TensorSpec& s = c.graph.value_spec(c.collected[k]);
      job->dense.push_back(Tensor::empty(s.shape.prepend(job->length), s.dtype, s.layout, c.pool));
    } else {
      job->dense.emplace_back();
      job->ragged[k].resize(job->length);
    }
  }
  if (c.device_stage) {
    job->arena.resize(c.dense.size());
    job->arena_used = std::make_unique<std::atomic<size_t>[]>(c.dense.size());
    for (size_t k = 0; k < c.dense.size(); ++k) {
      job->arena_used[k] = 0;
      const size_t est = c.arena_bytes[k].load();
      if (!c.dense[k] && est > 0 && job->length > 0) job->arena[k] = c.pool.acquire(est);
    }
  }
  job->remaining = job->length;
  in_flight_.push_back(job);
  {  // The reader's hint (SourceOperator::will_read): what this batch will read.
    std::vector<int64_t> indices(static_cast<size_t>(job->length));
    for (int64_t slot = 0; slot < job->length; ++slot)
      indices[static_cast<size_t>(slot)] = job->order->dataset_index(job->first_position + slot);
    c.graph.source_op().will_read(indices);
  }
  std::lock_guard lock(c.mu);
  c.outstanding += job->length;
  if (job->length == 0) job->done = true;
  // One item per slot; with grouped samples (SourceOperator::sample_group()), one item per run
  // of consecutive slots of one group, done in order by one worker (one decoder).
  const int64_t group = c.graph.source_op().sample_group();
  for (int64_t slot = 0; slot < job->length;) {
    int64_t end = slot + 1;
    if (group > 1) {
      const int64_t g = job->order->dataset_index(job->first_position + slot) / group;
      while (end < job->length && job->order->dataset_index(job->first_position + end) / group == g) ++end;
    }
    c.pending.push_back({job, slot, end});
    slot = end;
  }
  c.start_workers_locked();
}

void Executor::fill_pipeline() {
  const int64_t last = core_->options.epochs;  // run-length hint: no prefetch past the run's end
  while (static_cast<int>(in_flight_.size()) < core_->prefetch_depth.load() && sched_epoch_ <= epoch_ + 1) {
    if (!has_order(sched_epoch_)) break;  // external order not given yet: nothing to prefetch
    if (sched_batch_ >= order_for(sched_epoch_)->num_batches()) {
      ++sched_epoch_;
      sched_batch_ = 0;
      continue;
    }
    // Past the run's last epoch: nothing until the consumer reads on into it, then one batch
    // ahead at most.
    if (last > 0 && sched_epoch_ >= last && (epoch_ < last || !in_flight_.empty())) break;
    schedule(sched_epoch_, sched_batch_++);
  }
}

void Executor::cancel_in_flight() {
  core_->generation.fetch_add(1);
  in_flight_.clear();
}

void Executor::reset(int64_t epoch, int64_t batch) {
  if (epoch < 0 || batch < 0) throw PipelineStateError("epoch and batch must be >= 0");
  cancel_in_flight();
  core_->graph.source_op().start_at(epoch, batch * core_->options.batch_size);
  std::lock_guard position(position_mu_);
  epoch_ = sched_epoch_ = epoch;
  next_batch_ = sched_batch_ = batch;
}

PipelineOutput Executor::take(Job& job) {
  Core& c = *core_;
  PipelineOutput out;
  out.epoch = job.epoch;
  out.batch_index = job.batch;
  for (int v : c.graph.outputs()) {
    const int k = c.collect_of_value[v];
    if (k >= 0 && !c.device_stage) {  // a cpu-stage output (with a gpu stage it was uploaded)
      // Moved out: a worker task may hold the job a moment longer, and a batch buffer must go
      // back to the pool as soon as the consumer drops it.
      out.outputs.push_back(c.dense[k] ? Batch::dense(std::move(job.dense[k])) : Batch::ragged(std::move(job.ragged[k])));
      continue;
    }
    DeviceValue none;  // an empty batch never reaches the device stage
    DeviceValue& d = job.device.empty() ? none : job.device[v];
    Batch b = d.dense.defined() ? Batch::dense(std::move(d.dense)) : Batch::ragged(std::move(d.ragged));
    out.outputs.push_back(std::move(b.set_device_sync(job.device_sync)));
  }
  out.dataset_indices = std::move(job.dataset_indices);
  for (int64_t s = 0; s < job.length; ++s) out.num_padding += job.order->is_padding(job.first_position + s);
  out.num_replaced = job.replaced.load();
  c.replaced += static_cast<uint64_t>(out.num_replaced);
  c.batches += 1;
  c.samples += static_cast<uint64_t>(job.length);
  return out;
}

std::optional<PipelineOutput> Executor::next() {
  if (next_batch_ >= order_for(epoch_)->num_batches()) {  // the epoch's end (filled below)
    {
      std::lock_guard position(position_mu_);
      ++epoch_;
      next_batch_ = 0;
    }
    while (!in_flight_.empty() && in_flight_.front()->epoch < epoch_) in_flight_.pop_front();
    if (sched_epoch_ < epoch_) sched_epoch_ = epoch_, sched_batch_ = 0;
    if (core_->options.epochs <= 0 || epoch_ < core_->options.epochs) fill_pipeline();  // else: on demand
    return std::nullopt;
  }
  fill_pipeline();
  std::shared_ptr<Job> job = in_flight_.front();
  in_flight_.pop_front();
  wait_for(*job);
  {
    // Failures count once the consumer gets to their batch, in batch order.
    std::lock_guard position(position_mu_);
    ++next_batch_;
    consumed_failures_ += job->failures.load();
  }
  core_->failures = consumed_failures_;
  fill_pipeline();
  if (!job->error.is_ok()) throw DataError(job->error);
  if (core_->options.on_error == ErrorPolicy::kSkip && consumed_failures_ > core_->options.max_failures) {
    const Status& last = job->last_failure;
    throw DataError(Status(last.code(), "more than max_failures=" + std::to_string(core_->options.max_failures) +
                                            " samples failed; the last: " + last.message()));
  }
  PipelineOutput out = take(*job);
  if (prefetch_tuner_) {  // the largest batch so far, for the prefetch memory budget
    size_t bytes = 0;
    for (const Batch& b : out.outputs)
      for (int64_t i = 0; i < (b.is_dense() ? int64_t{1} : b.size()); ++i)
        bytes += b.is_dense() ? b.as_tensor().num_bytes() : b.sample(i).num_bytes();
    batch_bytes_ = std::max(batch_bytes_, bytes);
  }
  return out;
}

void Executor::wait_for(const Job& job) {
  Core& c = *core_;
  const auto t0 = Clock::now();
  int ready = 0;  // prefetched batches finished when the consumer arrived
  {
    std::unique_lock lock(c.mu);
    if (job.done) {
      ready = 1;
      for (const auto& j : in_flight_) {
        if (!j->done) break;
        ++ready;
      }
    }
    // The thread tuner also looks in while the consumer waits, so a start at too few threads
    // costs one window, not one batch.
    if (!thread_tuner_) c.cv.wait(lock, [&] { return job.done; });
    while (!c.cv.wait_for(lock, ThreadTuner::kWindow / 4, [&] { return job.done; })) {
      lock.unlock();
      tune_threads(c.wait_nanos.load() + nanos_since(t0));
      lock.lock();
    }
  }
  c.wait_nanos += nanos_since(t0);
  if (thread_tuner_) tune_threads(c.wait_nanos.load());
  if (prefetch_tuner_) c.prefetch_depth = prefetch_tuner_->observe(ready, batch_bytes_);
}

void Executor::tune_threads(uint64_t wait_nanos) {
  const int n = thread_tuner_->observe(Clock::now(), core_->finished.load(), wait_nanos);
  if (n != core_->target_workers.load()) core_->set_target_workers(n);
}

bool Executor::wait_next(std::chrono::nanoseconds timeout) {
  if (next_batch_ >= order_for(epoch_)->num_batches()) return true;
  fill_pipeline();
  if (in_flight_.empty()) return true;
  const std::shared_ptr<Job> job = in_flight_.front();
  std::unique_lock lock(core_->mu);
  return core_->cv.wait_for(lock, timeout, [&] { return job->done; });
}

PipelineState Executor::state() const {
  std::lock_guard position(position_mu_);
  return PipelineState{epoch_, next_batch_, consumed_failures_, fingerprint_};
}

void Executor::load_state(const PipelineState& s) {
  if (s.fingerprint != fingerprint_)
    throw PipelineStateError("this state was saved by a different pipeline (graph, dataset, batch "
                             "size or seed differ)");
  if (has_order(s.epoch) && s.batches_consumed > order_for(s.epoch)->num_batches())
    throw PipelineStateError("state's batch " + std::to_string(s.batches_consumed) +
                             " is past the end of epoch " + std::to_string(s.epoch));
  reset(s.epoch, s.batches_consumed);
  std::lock_guard position(position_mu_);
  consumed_failures_ = s.failures;
  core_->failures = s.failures;
}

PipelineStats Executor::stats() const {
  const Core& c = *core_;
  PipelineStats s;
  for (size_t n = 0; n < c.graph.nodes().size(); ++n) {
    const auto& node = c.graph.nodes()[n];
    const NodeCounters& k = c.counters[n];
    s.operators.push_back({node.spec.name, node.spec.op, k.samples.load(), k.failures.load(),
                           static_cast<double>(k.nanos.load()) * 1e-9, node.op->counters()});
  }
  s.batches = c.batches.load();
  s.samples = c.samples.load();
  // replaced before failures: the consumer raises failures first and replaced after (next()
  // then take()), so a snapshot taken while it does never shows more replaced than failed.
  s.replaced = c.replaced.load();
  s.failures = static_cast<uint64_t>(c.failures.load());
  s.consumer_wait_seconds = static_cast<double>(c.wait_nanos.load()) * 1e-9;
  s.autotune_threads = c.target_workers.load();
  s.autotune_prefetch_depth = c.prefetch_depth.load();
  {
    std::lock_guard lock(c.errors_mu);
    s.recent_errors.assign(c.recent_errors.begin(), c.recent_errors.end());
  }
  s.pool = c.pool.stats();
  if (c.device_stage) s.device_pool = c.device_stage->pool_stats();
  return s;
}

const Dataset& Executor::dataset() const { return core_->graph.source_op().dataset(); }
int64_t Executor::num_samples() const { return core_->graph.source_op().num_samples(); }
const PipelineOptions& Executor::options() const { return core_->options; }

std::vector<std::string> Executor::output_names() const {
  std::vector<std::string> names;
  for (int v : core_->graph.outputs()) names.push_back(core_->graph.value_name(v));
  return names;
}

}  // namespace hdl::detail
