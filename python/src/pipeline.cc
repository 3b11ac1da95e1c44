// _C.Pipeline: hdl::Pipeline for Python. The GIL is released around construction, every
// next(), reset(), set_epoch_order(), load_state() and destruction, so worker threads (and
// python_function operators, which take the GIL per call) never wait on a consumer that holds it.
// Fork: a pipeline's worker threads live only in the process that built it. In a forked child
// (torch's DataLoader workers, multiprocessing) the copy is never stopped or freed, only left
// alone: stopping it would wait forever for threads the child does not have.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "pipeline/dataset.h"
#include "pipeline/errors.h"
#include "pipeline/pipeline.h"
#include "python/src/bindings.h"

namespace hdl::python {
namespace {

template <typename T>
T option(const py::dict& d, const char* key, T fallback) {
  return d.contains(key) && !d[key].is_none() ? d[key].cast<T>() : fallback;
}

/// cache_limit: bytes (int), or "500M" / "10G" (parse_byte_size, the one check; ValueError
/// naming cache_limit otherwise).
int64_t cache_limit(const py::dict& d, int64_t fallback) {
  if (!d.contains("cache_limit") || d["cache_limit"].is_none()) return fallback;
  const py::object v = d["cache_limit"];
  if (py::isinstance<py::str>(v)) return parse_byte_size(v.cast<std::string>(), "cache_limit");
  if (py::isinstance<py::bool_>(v) || !py::isinstance<py::int_>(v))
    throw py::type_error("cache_limit must be bytes (int) or a size string such as \"10G\", got " +
                         std::string(py::str(py::type::of(v).attr("__name__"))));
  const int64_t n = v.cast<int64_t>();
  if (n <= 0) throw py::value_error("cache_limit must be a positive number of bytes, got " + std::to_string(n));
  return n;
}

/// A reader's samples built from Python lists (fn.file_reader(files=, labels=), the loader's
/// sample list): handed to the pipeline as a typed object, never written out as text.
struct PySamples {
  std::shared_ptr<const Dataset> dataset;
};

// (start, end) pairs in seconds; end None or inf: the video's end.
std::vector<Segment> to_segments(const py::object& segments) {
  std::vector<Segment> out;
  if (segments.is_none()) return out;
  int64_t i = 0;
  for (const py::handle item : segments) {
    const auto where = [&] { return "segments[" + std::to_string(i) + "]"; };
    if (!py::isinstance<py::sequence>(item) || py::isinstance<py::str>(item) || py::len(item) != 2)
      throw py::type_error(where() + ": expected (start, end) in seconds, got " +
                           std::string(py::str(py::repr(item))));
    const auto pair = py::reinterpret_borrow<py::sequence>(item);
    Segment seg;
    try {
      seg.start = pair[0].cast<double>();
      if (!pair[1].is_none()) seg.end = pair[1].cast<double>();
    } catch (const py::cast_error&) {
      throw py::type_error(where() + ": start and end must be numbers (end None: the video's end), got " +
                           std::string(py::str(py::repr(item))));
    }
    out.push_back(seg);
    ++i;
  }
  return out;
}

PySamples make_samples(const py::iterable& files, const py::object& labels, const std::string& root,
                       const py::object& segments) {
  std::vector<std::string> paths;
  if (py::hasattr(files, "__len__")) paths.reserve(py::len(files));
  const py::object fspath = py::module_::import("os").attr("fspath");
  int64_t i = 0;
  for (const py::handle f : files) {
    py::object p = py::isinstance<py::str>(f) ? py::reinterpret_borrow<py::object>(f) : fspath(f);
    if (!py::isinstance<py::str>(p))
      throw py::type_error("files[" + std::to_string(i) + "]: a path must be str or os.PathLike of str, got " +
                           std::string(py::str(py::type::handle_of(f).attr("__name__"))));
    paths.push_back(p.cast<std::string>());
    ++i;
  }
  std::vector<int64_t> ids;
  if (!labels.is_none()) {
    const auto a = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(labels);
    if (!a || a.ndim() != 1) throw py::type_error("labels must be a 1-D sequence of integers");
    ids.assign(a.data(), a.data() + a.size());
  }
  const std::vector<Segment> segs = to_segments(segments);
  py::gil_scoped_release nogil;
  return PySamples{std::make_shared<const Dataset>(Dataset::from_samples(paths, ids, root, segs))};
}

PySamples samples_from_file_list(const std::string& list, const std::string& root, const std::string& format) {
  const FileListFormat f = parse_file_list_format(format);
  py::gil_scoped_release nogil;
  return PySamples{std::make_shared<const Dataset>(Dataset::file_list(list, root, f))};
}

class PyPipeline {
 public:
  PyPipeline(const py::dict& spec_dict, const py::dict& opts, const py::dict& functions,
             const py::dict& samples) {
    static const char* const kKnown[] = {"batch_size", "num_threads", "prefetch_depth", "seed", "on_error",
                                         "max_failures", "max_cached_bytes", "device_id", "cache_dir",
                                         "cache_limit", "max_threads", "prefetch_memory_budget"};
    for (const auto& [key, value] : opts) {
      const std::string k = py::str(key);
      if (std::find(std::begin(kKnown), std::end(kKnown), k) == std::end(kKnown))
        throw py::value_error("Pipeline options: unknown key \"" + k + "\"");
    }
    PipelineSpec spec = spec_from_py(spec_dict);
    for (const auto& [key, value] : samples) {
      const std::string name = py::str(key);
      auto it = std::find_if(spec.nodes().begin(), spec.nodes().end(), [&](const NodeSpec& n) { return n.name == name; });
      if (it == spec.nodes().end()) throw py::value_error("Pipeline samples: no node named \"" + name + "\"");
      it->samples = value.cast<const PySamples&>().dataset;
    }
    registry_ = registry_for(spec, functions);
    PipelineOptions o;
    o.batch_size = option<int64_t>(opts, "batch_size", o.batch_size);
    o.num_threads = option<int>(opts, "num_threads", o.num_threads);
    o.prefetch_depth = option<int>(opts, "prefetch_depth", o.prefetch_depth);
    o.max_threads = option<int>(opts, "max_threads", o.max_threads);
    o.prefetch_memory_budget = option<size_t>(opts, "prefetch_memory_budget", o.prefetch_memory_budget);
    o.seed = option<uint64_t>(opts, "seed", o.seed);
    o.on_error = option<ErrorPolicy>(opts, "on_error", o.on_error);  // parsed at the Python edge
    o.max_failures = option<int64_t>(opts, "max_failures", o.max_failures);
    o.max_cached_bytes = option<size_t>(opts, "max_cached_bytes", o.max_cached_bytes);
    o.device_id = option<int>(opts, "device_id", o.device_id);
    o.cache.dir = option<std::string>(opts, "cache_dir", o.cache.dir);
    o.cache.limit_bytes = cache_limit(opts, o.cache.limit_bytes);
    py::gil_scoped_release nogil;
    pipe_ = std::make_unique<Pipeline>(spec, o, *registry_);
  }

  ~PyPipeline() { close(); }

  /// Stops the workers and frees the graph; batches already handed out stay valid. In a forked
  /// child the pipeline is dropped without either (its memory is the parent's copy).
  void close() {
    if (!pipe_) return;
    if (getpid() != owner_) {
      (void)pipe_.release();
      return;
    }
    if (PyGILState_Check()) {
      py::gil_scoped_release nogil;
      pipe_.reset();
    } else {
      pipe_.reset();
    }
  }

  Pipeline& pipe() {
    if (!pipe_) throw PipelineStateError("the pipeline is closed");
    if (getpid() != owner_)
      throw PipelineStateError("the pipeline was built in process " + std::to_string(owner_) +
                               ": its worker threads do not exist after a fork; build one in this process");
    return *pipe_;
  }

  /// (outputs, info) for the next batch, or None at the end of the epoch.
  py::object next(bool numpy, std::optional<uintptr_t> stream) {
    std::optional<PipelineOutput> out;
    {
      Pipeline& p = pipe();
      py::gil_scoped_release nogil;
      out = p.next();
    }
    if (!out) return py::none();
    py::list outputs;
    for (const Batch& b : out->outputs) outputs.append(batch_to_python(b, numpy, stream));
    py::dict info;
    info["epoch"] = out->epoch;
    info["batch_index"] = out->batch_index;
    info["dataset_indices"] = out->dataset_indices;
    info["num_padding"] = out->num_padding;
    info["num_replaced"] = out->num_replaced;
    py::list dense;
    for (const Batch& b : out->outputs) dense.append(b.is_dense());
    info["dense"] = dense;
    py::list devices;  // "cpu", or "cuda:N" for outputs of the gpu stage
    for (const Batch& b : out->outputs) devices.append(b.device_sync() ? b.device_sync()->ready().device().to_string() : "cpu");
    info["devices"] = devices;
    py::list ptrs;  // where each dense output lives, for zero-copy checks
    for (const Batch& b : out->outputs)
      ptrs.append(b.is_dense() && b.size() > 0 ? reinterpret_cast<uintptr_t>(b.as_tensor().data()) : uintptr_t{0});
    info["data_ptrs"] = ptrs;
    return py::make_tuple(py::tuple(outputs), info);
  }

  void reset(int64_t epoch) {
    Pipeline& p = pipe();
    py::gil_scoped_release nogil;
    p.reset(epoch);
  }

  /// `order`: any 1-D integer sequence (list, numpy array, tensor), copied under the GIL.
  void set_epoch_order(int64_t epoch, const py::array_t<int64_t, py::array::c_style | py::array::forcecast>& order) {
    if (order.ndim() != 1) throw py::value_error("set_epoch_order: order must be one-dimensional");
    std::vector<int64_t> v(order.data(), order.data() + order.size());
    Pipeline& p = pipe();
    py::gil_scoped_release nogil;
    p.set_epoch_order(epoch, std::move(v));
  }

  void load_state(const std::string& text) {
    const PipelineState s = PipelineState::parse(text);
    Pipeline& p = pipe();
    py::gil_scoped_release nogil;
    p.load_state(s);
  }

  /// Moves to batch `batch` of `epoch` (a state of this very pipeline, so always accepted).
  void seek(int64_t epoch, int64_t batch) {
    PipelineState s = pipe().state();
    s.epoch = epoch;
    s.batches_consumed = batch;
    load_state(s.to_string());
  }

  py::dict stats() {
    const PipelineStats s = pipe().stats();
    py::dict d;
    py::list ops;
    for (const auto& o : s.operators) {
      py::dict od;
      od["name"] = o.name;
      od["op"] = o.op;
      od["samples"] = o.samples;
      od["failures"] = o.failures;
      od["seconds"] = o.seconds;
      py::dict counters;
      for (const auto& [name, value] : o.counters) counters[py::str(name)] = value;
      od["counters"] = counters;
      ops.append(od);
    }
    d["operators"] = ops;
    d["batches"] = s.batches;
    d["samples"] = s.samples;
    d["failures"] = s.failures;
    d["replaced"] = s.replaced;
    d["consumer_wait_seconds"] = s.consumer_wait_seconds;
    d["autotune_threads"] = s.autotune_threads;
    d["autotune_prefetch_depth"] = s.autotune_prefetch_depth;
    d["recent_errors"] = s.recent_errors;
    auto pool = [](const BufferPoolStats& p) {
      py::dict out;
      out["acquires"] = p.acquires;
      out["allocations"] = p.allocations;
      out["bytes_allocated"] = p.bytes_allocated;
      out["bytes_cached"] = p.bytes_cached;
      return out;
    };
    d["pool"] = pool(s.pool);                // host batches (pinned with a gpu stage)
    d["device_pool"] = pool(s.device_pool);  // the gpu stage's device memory
    return d;
  }

  py::dict dataset() {
    const Dataset& ds = pipe().dataset();
    py::dict d;
    d["size"] = ds.size();
    d["samples"] = pipe().num_samples();  // clips for a video reader
    d["root"] = ds.root();
    d["classes"] = ds.classes();
    return d;
  }

 private:
  std::shared_ptr<OpRegistry> registry_;  // schemas the graph points into: outlives pipe_
  std::unique_ptr<Pipeline> pipe_;
  pid_t owner_ = getpid();  // the process whose threads run pipe_
};

}  // namespace

void bind_pipeline(py::module_& m) {
  py::class_<PySamples>(m, "Samples", "A reader's samples in memory (hdl::Dataset::from_samples).")
      .def(py::init(&make_samples), py::arg("files"), py::arg("labels") = py::none(), py::arg("root") = "",
           py::arg("segments") = py::none(),
           "files: paths (str or os.PathLike), relative to root unless root is empty; labels: one int "
           "per file (None: each file's index); segments: None, or one (start, end) per file in seconds "
           "(end None or inf: the video's end; video_reader draws clips inside it). ValueError names a bad "
           "entry.")
      .def_static("from_file_list", &samples_from_file_list, py::arg("file_list"), py::arg("root") = "",
                  py::arg("format") = "path label",
                  "A file list read by the readers' parser (format \"path label\" or \"path label start end\"); "
                  "root: what the paths are relative to (default: the list's folder). ValueError names the line.")
      .def("__len__", [](const PySamples& s) { return s.dataset->size(); })
      .def_property_readonly("has_segments", [](const PySamples& s) { return s.dataset->has_segments(); })
      .def("relative_path", [](const PySamples& s, int64_t i) {
        if (i < 0 || i >= s.dataset->size()) throw py::index_error("sample " + std::to_string(i) + " out of range");
        return std::string(s.dataset->relative_path(i));
      }, py::arg("i"))
      .def("segment", [](const PySamples& s, int64_t i) -> py::object {
        if (i < 0 || i >= s.dataset->size()) throw py::index_error("sample " + std::to_string(i) + " out of range");
        if (!s.dataset->has_segments()) return py::none();
        const Segment seg = s.dataset->segment(i);
        return py::make_tuple(seg.start, std::isinf(seg.end) ? py::object(py::none()) : py::float_(seg.end));
      }, py::arg("i"), "(start, end) in seconds (end None: the video's end), or None without segments")
      .def("source", [](const PySamples& s, int64_t i) {
        if (i < 0 || i >= s.dataset->size()) throw py::index_error("sample " + std::to_string(i) + " out of range");
        return s.dataset->source(i);
      }, py::arg("i"), "where entry i was listed, e.g. 'file_list \"a.txt\" line 3' or 'samples[3]'")
      .def_property_readonly("root", [](const PySamples& s) { return s.dataset->root(); })
      .def("path", [](const PySamples& s, int64_t i) {
        if (i < 0 || i >= s.dataset->size()) throw py::index_error("sample " + std::to_string(i) + " out of range");
        return s.dataset->path(i);
      }, py::arg("i"))
      .def("label", [](const PySamples& s, int64_t i) {
        if (i < 0 || i >= s.dataset->size()) throw py::index_error("sample " + std::to_string(i) + " out of range");
        return s.dataset->label(i);
      }, py::arg("i"));
  py::enum_<ErrorPolicy>(m, "ErrorPolicy", "hdl::ErrorPolicy: what a failed sample does (on_error).")
      .value("RAISE", ErrorPolicy::kRaise)
      .value("SKIP", ErrorPolicy::kSkip);
  m.attr("AUTO") = PipelineOptions::kAuto;  // num_threads / prefetch_depth "auto" (hdl::PipelineOptions::kAuto)
  m.def("available_cpus", &available_cpus,
        "The CPUs this process may use (affinity mask, cgroup quota): auto's thread limit.");
  m.def("parse_byte_size", [](const py::object& v) {
          py::dict d;
          d["cache_limit"] = v;
          return cache_limit(d, 0);
        }, py::arg("cache_limit"),
        "cache_limit as bytes: an int > 0, or \"500M\", \"10G\" (hdl::parse_byte_size); ValueError or TypeError "
        "naming cache_limit otherwise.");
  m.def("error_policy", &parse_error_policy, py::arg("on_error"),
        "\"raise\" / \"skip\" as an ErrorPolicy (hdl::parse_error_policy); ValueError otherwise.");
  py::class_<PyPipeline>(m, "Pipeline", "hdl::Pipeline built from a spec dict (see habana_dataloader.Pipeline).")
      .def(py::init<const py::dict&, const py::dict&, const py::dict&, const py::dict&>(), py::arg("spec"),
           py::arg("options"), py::arg("functions") = py::dict(), py::arg("samples") = py::dict(),
           "samples: {reader node name: Samples}, the readers whose samples are given in memory")
      .def("next", &PyPipeline::next, py::arg("numpy") = false, py::arg("stream") = py::none(),
           "(outputs, info), or None at the end of the epoch. `stream`: the cudaStream_t (an int, 0: "
           "the legacy default stream) that will read gpu-stage outputs; it waits for them without "
           "blocking the host. None: the host waits.")
      .def("reset", &PyPipeline::reset, py::arg("epoch"))
      .def("wait_next", [](PyPipeline& p, double seconds) {
        Pipeline& pipe = p.pipe();
        py::gil_scoped_release nogil;
        return pipe.wait_next(std::chrono::duration_cast<std::chrono::nanoseconds>(
            std::chrono::duration<double>(seconds)));
      }, py::arg("seconds"), "True when next() will not block, waiting up to `seconds` for it")
      .def("set_epoch_order", &PyPipeline::set_epoch_order, py::arg("epoch"), py::arg("order"))
      .def("state", [](PyPipeline& p) { return p.pipe().state().to_string(); })
      .def_property_readonly("position", [](PyPipeline& p) {
        const PipelineState s = p.pipe().state();
        return py::make_tuple(s.epoch, s.batches_consumed);
      }, "(epoch, batches of it handed out)")
      .def("load_state", &PyPipeline::load_state, py::arg("state"))
      .def("seek", &PyPipeline::seek, py::arg("epoch"), py::arg("batch"))
      .def("stats", &PyPipeline::stats)
      .def("dataset", &PyPipeline::dataset)
      .def("close", &PyPipeline::close)
      .def_property_readonly("epoch", [](PyPipeline& p) { return p.pipe().epoch(); })
      .def_property_readonly("batches_per_epoch", [](PyPipeline& p) { return p.pipe().batches_per_epoch(); })
      .def_property_readonly("output_names", [](PyPipeline& p) { return p.pipe().output_names(); });
}

}  // namespace hdl::python
