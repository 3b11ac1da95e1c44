// WebDataset tar shards from Python: the index sidecar of a shard (pipeline/readers/shard_index.h),
// for habana_dataloader.write_shards(index=True) and hdl-shards --index. The GIL is released
// while the shard's headers are read. A shard that is not a valid tar raises DataError naming
// the shard, the key and the byte offset.
#include <pybind11/stl.h>

#include "pipeline/errors.h"
#include "media/file_system.h"
#include "pipeline/readers/shard_index.h"
#include "python/src/bindings.h"

namespace hdl::python {

void bind_shards(py::module_& m) {
  m.def(
      "build_shard_index",
      [](const std::string& shard, const std::string& index_path) {
        IndexOptions options;
        options.policy = IndexCachePolicy::kRebuild;
        options.index_path = index_path;
        std::string warning;
        Result<ShardIndex> index = [&] {
          py::gil_scoped_release release;
          return load_or_build_index(*posix_file_system(), shard, options, &warning);
        }();
        if (!index.is_ok()) throw DataError(index.status());
        if (!warning.empty()) throw DataError(Status::io_error(warning));
        return static_cast<int64_t>(index->samples.size());
      },
      py::arg("shard"), py::arg("index_path") = "",
      "Builds the index sidecar of the tar shard `shard` (\"<shard>.idx\" unless index_path is given) and returns "
      "its sample count. Raises DataError for a shard that is not a valid tar, or when the sidecar cannot be "
      "written.");
}

}  // namespace hdl::python
