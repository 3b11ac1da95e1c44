// What the readers (file_reader, video_reader) share: where the files are (a class-folder tree
// or a file list) and how an epoch walks the samples (shuffle, shards, last batch).
//
// Internal to pipeline/ (not installed). Thread safety: pure functions.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "media/api.h"
#include "pipeline/dataset.h"
#include "pipeline/operator.h"
#include "pipeline/schema.h"

HDL_API_BEGIN
namespace hdl::ops {

/// file_root, file_list, extensions (default `extensions`), allow_empty_classes. `what` names a
/// sample file ("image", "video").
std::vector<ArgSchema> dataset_args(const std::string& what, const std::vector<std::string>& extensions);
/// The Dataset those arguments name (and file_list_format, when the schema has it). Throws
/// ConfigError when neither root nor list is given (and Dataset's own errors).
std::shared_ptr<const Dataset> parse_dataset(const NodeSpec& n, const std::string& what);
/// file_list_format: "path label" or "path label start end" (Dataset's FileListFormat).
ArgSchema file_list_format_arg();

/// shuffle, shuffle_buffer, shard_id, num_shards, last_batch, pad_shards; `unit` names a
/// sample ("samples", "clips").
std::vector<ArgSchema> sharding_args(const std::string& unit);
/// Parses them; throws ConfigError for shard_id >= num_shards.
SourceOperator::Sharding parse_sharding(const NodeSpec& n);

}  // namespace hdl::ops
HDL_API_END
