// file_reader: the reader of image datasets (ImageFolder tree or file list).
#include "media/file_system.h"
#include "pipeline/dataset.h"
#include "pipeline/epoch_order.h"
#include "pipeline/errors.h"
#include "pipeline/operator.h"
#include "pipeline/readers/reader_args.h"
#include "pipeline/registry.h"
#include "pipeline/spec.h"

namespace hdl {
namespace {

// Reads a whole file through the pipeline's FileSystem into memory obtained from `io`: one
// copy (page cache -> the output batch's slot), short reads looped, a shrinking file an error.
Status read_whole_file(const std::string& path, SampleIO& io) {
  HDL_ASSIGN_OR_RETURN(const std::unique_ptr<RandomAccessFile> file, io.file_system().open(path));
  const int64_t size = file->size();
  HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, Shape{size}, DType::kU8, Layout::kNone));
  return read_exactly(*file, 0, size, out.data);
}

class FileReader final : public SourceOperator {
 public:
  explicit FileReader(const NodeSpec& n) : dataset_(ops::parse_dataset(n, "image")), sharding_(ops::parse_sharding(n)) {}

  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec>) const override {
    return {TensorSpec{DType::kU8, Shape{-1}, Layout::kNone}, TensorSpec{DType::kI64, Shape{}, Layout::kNone}};
  }

  Status run(SampleIO& io) const override {
    const int64_t i = io.sample().dataset_index;
    HDL_RETURN_IF_ERROR(read_whole_file(dataset_->path(i), io));
    HDL_ASSIGN_OR_RETURN(TensorView label, io.output(1, Shape{}, DType::kI64, Layout::kNone));
    *label.typed<int64_t>() = dataset_->label(i);
    return Status::ok();
  }

  void prepare(FileSystem& fs) override { file_system_ = &fs; }
  /// The file system's counters (a remote store's requests and retries, the local cache's hits
  /// and misses: media/remote_file_system.h, media/cache_file_system.h), as webdataset_reader's.
  std::vector<std::pair<std::string, int64_t>> counters() const override {
    return file_system_ ? file_system_->counters() : std::vector<std::pair<std::string, int64_t>>{};
  }
  const Dataset& dataset() const override { return *dataset_; }
  const Sharding& sharding() const override { return sharding_; }

 private:
  std::shared_ptr<const Dataset> dataset_;  // shared with the spec when given in memory
  Sharding sharding_;
  const FileSystem* file_system_ = nullptr;  // the pipeline's, from prepare(); read by counters() only
};

}  // namespace

OpSchema file_reader_schema() {
  OpSchema s;
  s.name = "file_reader";
  s.doc = "Reads the files of an ImageFolder tree (classes = sorted subfolder names, labels as "
          "torchvision.datasets.ImageFolder assigns them) or of a file list, one file per sample, "
          "with per-epoch seeded shuffling, sharding and a last-batch policy.";
  s.is_source = true;
  s.outputs = {{"encoded", "the file's bytes (uint8, 1-D)"}, {"label", "the class index (int64 scalar)"}};
  s.args = ops::dataset_args("image", default_image_extensions());
  for (ArgSchema& a : ops::sharding_args("samples")) s.args.push_back(std::move(a));
  s.create = [](const NodeSpec& n) { return std::make_unique<FileReader>(n); };
  return s;
}

}  // namespace hdl
