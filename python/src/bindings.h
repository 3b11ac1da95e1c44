// Private declarations shared by the _C extension's source files (python/src/).
//
// The extension is a thin layer: Python objects <-> hdl values, GIL handling, exception
// mapping. Everything a user sees is shaped in the Python package (habana_dataloader/).
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "media/batch.h"
#include "pipeline/registry.h"
#include "pipeline/spec.h"

namespace hdl::python {

namespace py = pybind11;

/// A DLPack capsule ("dltensor") over `t`'s memory, no copy. The capsule's deleter holds a
/// reference to t's Storage, so a pooled batch buffer goes back to its pool only when the
/// consumer (torch.utils.dlpack.from_dlpack) releases the tensor.
/// For device tensors of a gpu stage, `sync` is the batch's DeviceSync and `consumer` the stream
/// the consumer reads them on: when the consumer releases the tensor, the pipeline reuses the
/// memory only after the work queued on `consumer` by then (torch's record_stream rule).
py::object to_dlpack(const Tensor& t, std::shared_ptr<const cuda::DeviceSync> sync = nullptr,
                     void* consumer = nullptr);
/// A numpy array over `t`'s memory, no copy; its base object keeps the Storage alive.
/// Throws TypeError for bfloat16 (numpy has no such dtype).
py::object to_numpy(const Tensor& t, bool writable = true);
/// A read-only numpy array over a view that is valid only for the duration of a call.
py::object view_to_numpy(const ConstTensorView& v);
/// Dense batch -> one capsule/array; ragged -> a list, one per sample. A device batch is first
/// ordered before the consumer's work: `consumer` (a cudaStream_t) waits on its ready event
/// without blocking the host; with no consumer stream the host waits for it.
py::object batch_to_python(const Batch& b, bool numpy, std::optional<uintptr_t> consumer = std::nullopt);

/// Python value -> ArgValue (bool, int, float, str, or a sequence of one of them).
/// Throws py::type_error naming `arg` for anything else.
ArgValue to_arg(py::handle value, const std::string& arg);
py::object from_arg(const ArgValue& v);

/// A spec dict (habana_dataloader._graph.to_spec: the JSON document's shape, Python values)
/// as a PipelineSpec, and back; one conversion each way, no JSON text. Throws ConfigError for
/// an edge to a node that does not exist or an unknown stage name.
PipelineSpec spec_from_py(const py::dict& spec);
py::dict spec_to_py(const PipelineSpec& spec);

/// The python_function schema as documented (one input, one output); for fn.* and docs.
OpSchema python_function_schema();
/// Makes the python_function nodes of `spec` runnable: renames each to an arity-specific
/// operator and returns builtin() plus those operators, which call functions[node's
/// "function" argument] per sample (acquiring the GIL only inside the call).
/// Throws ValueError (ConfigError) when a function name is not in `functions`.
std::shared_ptr<OpRegistry> registry_for(PipelineSpec& spec, const py::dict& functions);

void bind_errors(py::module_& m);
void bind_tensors(py::module_& m);
void bind_devices(py::module_& m);
void bind_schemas(py::module_& m);
void bind_spec(py::module_& m);
void bind_pipeline(py::module_& m);
void bind_video(py::module_& m);
void bind_shards(py::module_& m);

}  // namespace hdl::python
