// WebDataset tar shards from Python: the index sidecar of a shard (pipeline/readers/tar/shard_index.h),
// for habana_dataloader.write_shards(index=True) and hdl-shards --index, and a shard's samples
// from its index (member names, small fields' bytes) for VideoList.from_shards. The GIL is
// released while the shard is read. A shard that is not a valid tar raises DataError naming
// the shard, the key and the byte offset.
#include <pybind11/stl.h>

#include <algorithm>

#include "pipeline/errors.h"
#include "media/file_system.h"
#include "pipeline/readers/tar/shard_index.h"
#include "python/src/bindings.h"

namespace hdl::python {
namespace {

constexpr int64_t kMaxReadField = int64_t(1) << 20;  // a label or caption, not a video

struct ShardSamples {
  ShardIndex index;
  std::vector<std::vector<std::string>> bytes;  // per sample: the `read` fields' bytes, in field order
  std::string warning;
};

// The shard's index (its sidecar, else built and saved: IndexCachePolicy::kReadWrite) and the
// bytes of the fields named in `read` (each at most kMaxReadField).
Result<ShardSamples> shard_samples(const std::string& shard, const std::vector<std::string>& read) {
  ShardSamples out;
  FileSystem& fs = *posix_file_system();
  HDL_ASSIGN_OR_RETURN(out.index, load_or_build_index(fs, shard, IndexOptions{}, &out.warning));
  if (read.empty()) return out;
  HDL_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, fs.open(shard));
  for (const IndexedSample& s : out.index.samples) {
    std::vector<std::string>& b = out.bytes.emplace_back();
    for (const IndexedField& f : s.fields) {
      if (std::find(read.begin(), read.end(), f.ext) == read.end()) continue;
      if (f.size > kMaxReadField)
        return Status::resource_exhausted("tar shard \"" + shard + "\": key \"" + s.key + "\": field \"" + f.ext +
                                          "\" has " + std::to_string(f.size) + " bytes, more than a label's 1 MiB");
      std::string data(static_cast<size_t>(f.size), '\0');
      if (Status st = read_exactly(*file, f.offset, f.size, data.data()); !st.is_ok())
        return Status(st.code(), "tar shard \"" + shard + "\": key \"" + s.key + "\": byte " +
                                     std::to_string(f.offset) + ": " + st.message());
      b.push_back(std::move(data));
    }
  }
  return out;
}

}  // namespace

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
  m.def(
      "shard_samples",
      [](const std::string& shard, const std::vector<std::string>& read) {
        Result<ShardSamples> r = [&] {
          py::gil_scoped_release release;
          return shard_samples(shard, read);
        }();
        if (!r.is_ok()) throw DataError(r.status());
        py::list samples;
        for (size_t i = 0; i < r->index.samples.size(); ++i) {
          const IndexedSample& s = r->index.samples[i];
          py::dict members, values;
          size_t k = 0;
          for (const IndexedField& f : s.fields) {
            members[py::str(f.ext)] = f.member_name;
            if (!r->bytes.empty() && std::find(read.begin(), read.end(), f.ext) != read.end())
              values[py::str(f.ext)] = py::bytes(r->bytes[i][k++]);
          }
          samples.append(py::make_tuple(s.key, members, values));
        }
        return py::make_tuple(samples, r->warning);
      },
      py::arg("shard"), py::arg("read") = std::vector<std::string>{},
      "The samples of the plain tar shard `shard`, from its index (the \"<shard>.idx\" sidecar, else built from "
      "the headers and saved): ([(key, {field: member name}, {field: bytes for the fields in `read`})], warning: "
      "'' or one sentence about the sidecar). Raises DataError naming the shard, the key and the byte offset.");
}

}  // namespace hdl::python
