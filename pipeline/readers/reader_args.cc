#include "pipeline/readers/reader_args.h"

#include "pipeline/dataset.h"
#include "pipeline/errors.h"
#include "pipeline/spec.h"

namespace hdl::ops {

std::vector<ArgSchema> dataset_args(const std::string& what, const std::vector<std::string>& extensions) {
  return {
      {"file_root", ArgType::kString, ArgValue(""), "root of class folders of " + what + "s (root/<class>/.../<file>; classes = sorted folder names, labels as torchvision's ImageFolder assigns them), or the root file_list paths are relative to"},
      {"file_list", ArgType::kString, ArgValue(""), "text file of \"relative/path label\" lines (instead of scanning file_root)"},
      {"extensions", ArgType::kStrings, ArgValue(extensions), "file name endings that count as " + what + "s (case-insensitive)"},
      {"allow_empty_classes", ArgType::kBool, ArgValue(false), "accept class folders without a valid file (torchvision refuses them)"},
  };
}

std::shared_ptr<const Dataset> parse_dataset(const NodeSpec& n, const std::string& what) {
  const std::string& root = n.get_string("file_root");
  const std::string& list = n.get_string("file_list");
  if (n.samples) {
    if (!list.empty())
      throw ConfigError("give file_list or in-memory samples (files=), not both");
    if (!root.empty() && root != n.samples->root())
      throw ConfigError("file_root \"" + root + "\" differs from the in-memory samples' root \"" +
                        n.samples->root() + "\" (Dataset::from_samples joins the paths to its root)");
    return n.samples;
  }
  if (root.empty() && list.empty())
    throw ConfigError("give file_root (a tree of class folders of " + what + "s), file_list (a text file of "
                      "\"path label\" lines) or the samples in memory (files=, labels=)");
  const FileListFormat format = n.has_arg("file_list_format") ? parse_file_list_format(n.get_string("file_list_format"))
                                                               : FileListFormat::kPathLabel;
  if (list.empty() && format != FileListFormat::kPathLabel)
    throw ConfigError("file_list_format \"" + n.get_string("file_list_format") + "\" is for a file_list; file_root's "
                      "folders list whole files");
  return std::make_shared<const Dataset>(
      list.empty() ? Dataset::image_folder(root, n.get_strings("extensions"), n.get_bool("allow_empty_classes"))
                   : Dataset::file_list(list, root, format));
}

ArgSchema file_list_format_arg() {
  return {"file_list_format", ArgType::kString, ArgValue("path label"),
          "what file_list's lines hold: \"path label\", or \"path label start end\" (every line a segment of the "
          "video: start and end in seconds from its first frame, end - for the video's end; the path is what comes "
          "before the last three tokens, so it may contain spaces). A video may be listed on several lines",
          one_of({"path label", "path label start end"})};
}

std::vector<ArgSchema> sharding_args(const std::string& unit) {
  return {
      {"shuffle", ArgType::kBool, ArgValue(false), "shuffle the " + unit + " every epoch, seeded by (seed, epoch)"},
      {"shuffle_buffer", ArgType::kInt, ArgValue(0), "0: shuffle all " + unit + "; n: a bounded shuffle buffer of n " + unit + " (reads stay near-sequential)", at_least(0)},
      {"shard_id", ArgType::kInt, ArgValue(0), "which shard this pipeline reads (e.g. the rank)", at_least(0)},
      {"num_shards", ArgType::kInt, ArgValue(1), "number of disjoint shards (e.g. the world size)", at_least(1)},
      {"last_batch", ArgType::kString, ArgValue("partial"), "the epoch's last incomplete batch: drop, partial, pad (repeat the last sample) or fill (wrap around)", one_of({"drop", "partial", "pad", "fill"})},
      {"pad_shards", ArgType::kBool, ArgValue(false), "give every shard the same number of " + unit + " by wrapping around (needed for DDP)"},
  };
}

SourceOperator::Sharding parse_sharding(const NodeSpec& n) {
  SourceOperator::Sharding s;
  s.shard_id = n.get_int("shard_id");
  s.num_shards = n.get_int("num_shards");
  if (s.shard_id >= s.num_shards)
    throw ConfigError("argument \"shard_id\" must be < num_shards (" + std::to_string(s.num_shards) + "), got " +
                      std::to_string(s.shard_id));
  s.shuffle = n.get_bool("shuffle");
  s.shuffle_buffer = n.get_int("shuffle_buffer");
  s.last_batch = n.get_string("last_batch");
  s.pad_shards = n.get_bool("pad_shards");
  return s;
}

}  // namespace hdl::ops
