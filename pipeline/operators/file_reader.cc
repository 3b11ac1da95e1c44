// file_reader: the reader of image datasets (ImageFolder tree or file list).
#include "pipeline/errors.h"
#include "pipeline/file_system.h"
#include "pipeline/operator.h"
#include "pipeline/readers/dataset.h"
#include "pipeline/readers/epoch_plan.h"
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
  explicit FileReader(const NodeSpec& n) {
    const std::string& root = n.get_string("file_root");
    const std::string& list = n.get_string("file_list");
    if (root.empty() && list.empty())
      throw ConfigError("give file_root (an ImageFolder tree) or file_list (a text file of "
                        "\"path label\" lines)");
    dataset_ = list.empty() ? Dataset::image_folder(root, n.get_strings("extensions"),
                                                    n.get_bool("allow_empty_classes"))
                            : Dataset::file_list(list, root);
    sharding_.shard_id = n.get_int("shard_id");
    sharding_.num_shards = n.get_int("num_shards");
    if (sharding_.shard_id >= sharding_.num_shards)
      throw ConfigError("argument \"shard_id\" must be < num_shards (" +
                        std::to_string(sharding_.num_shards) + "), got " +
                        std::to_string(sharding_.shard_id));
    sharding_.shuffle = n.get_bool("shuffle");
    sharding_.shuffle_buffer = n.get_int("shuffle_buffer");
    sharding_.last_batch = n.get_string("last_batch");
    sharding_.pad_shards = n.get_bool("pad_shards");
  }

  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec>) const override {
    return {TensorSpec{DType::kU8, Shape{-1}, Layout::kNone}, TensorSpec{DType::kI64, Shape{}, Layout::kNone}};
  }

  Status run(SampleIO& io) const override {
    const int64_t i = io.sample().dataset_index;
    HDL_RETURN_IF_ERROR(read_whole_file(dataset_.path(i), io));
    HDL_ASSIGN_OR_RETURN(TensorView label, io.output(1, Shape{}, DType::kI64, Layout::kNone));
    *label.typed<int64_t>() = dataset_.label(i);
    return Status::ok();
  }

  const Dataset& dataset() const override { return dataset_; }
  const Sharding& sharding() const override { return sharding_; }

 private:
  Dataset dataset_;
  Sharding sharding_;
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
  s.args = {
      {"file_root", ArgType::kString, ArgValue(""), "ImageFolder root (root/<class>/.../<file>), or the root file_list paths are relative to"},
      {"file_list", ArgType::kString, ArgValue(""), "text file of \"relative/path label\" lines (instead of scanning file_root)"},
      {"extensions", ArgType::kStrings, ArgValue(default_image_extensions()), "file name endings that count as samples (case-insensitive)"},
      {"allow_empty_classes", ArgType::kBool, ArgValue(false), "accept class folders without a valid file (torchvision refuses them)"},
      {"shuffle", ArgType::kBool, ArgValue(false), "shuffle every epoch, seeded by (seed, epoch)"},
      {"shuffle_buffer", ArgType::kInt, ArgValue(0), "0: shuffle the whole dataset; n: a bounded shuffle buffer of n samples (reads stay near-sequential)", at_least(0)},
      {"shard_id", ArgType::kInt, ArgValue(0), "which shard this pipeline reads (e.g. the rank)", at_least(0)},
      {"num_shards", ArgType::kInt, ArgValue(1), "number of disjoint shards (e.g. the world size)", at_least(1)},
      {"last_batch", ArgType::kString, ArgValue("partial"), "the epoch's last incomplete batch: drop, partial, pad (repeat the last sample) or fill (wrap around)", one_of({"drop", "partial", "pad", "fill"})},
      {"pad_shards", ArgType::kBool, ArgValue(false), "give every shard the same number of samples by wrapping around (needed for DDP)"},
  };
  s.create = [](const NodeSpec& n) { return std::make_unique<FileReader>(n); };
  return s;
}

}  // namespace hdl
