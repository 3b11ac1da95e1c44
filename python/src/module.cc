// The habana_dataloader._C extension module.
#include "python/src/bindings.h"

PYBIND11_MODULE(_C, m) {
  m.doc() = "habana_dataloader's native core: pipelines, schemas, zero-copy tensors (private; "
            "use the habana_dataloader package).";
  hdl::python::bind_errors(m);
  hdl::python::bind_tensors(m);
  hdl::python::bind_devices(m);
  hdl::python::bind_schemas(m);
  hdl::python::bind_spec(m);
  hdl::python::bind_pipeline(m);
  hdl::python::bind_video(m);
  hdl::python::bind_shards(m);
}
