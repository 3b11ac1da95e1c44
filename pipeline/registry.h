// OpRegistry: the operators a pipeline may use.
//
// builtin() is the explicit list in pipeline/registry.cc (no static-initialiser tricks). A
// copy can be extended with a user's own schemas (C++ operators outside this library, or
// test operators) and passed to a Pipeline.
//
// Thread safety: immutable once handed to a pipeline; builtin() is safe to call from any thread.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "media/api.h"
#include "pipeline/schema.h"

HDL_API_BEGIN
namespace hdl {

class FileSystem;

class OpRegistry {
 public:
  /// Every operator of this build.
  static const OpRegistry& builtin();

  /// Adds a schema. Throws ConfigError if the name is taken or the schema has no factory.
  void add(OpSchema schema);
  /// The schema named `name`, or nullptr.
  const OpSchema* find(const std::string& name) const;
  /// All schemas, sorted by name.
  std::vector<const OpSchema*> all() const;

 private:
  std::map<std::string, OpSchema> schemas_;
};

// Schemas of the builtin operators, one function per operator file (pipeline/operators/).
OpSchema file_reader_schema();
OpSchema image_decoder_schema();
OpSchema video_reader_schema();
OpSchema video_decoder_schema();
OpSchema webdataset_reader_schema();
OpSchema resize_schema();
OpSchema coin_flip_schema();
OpSchema random_uniform_schema();
OpSchema random_normal_schema();
// Geometry (operators/crop_ops.cc, flip_ops.cc).
OpSchema crop_schema();
OpSchema random_crop_schema();
OpSchema random_resized_crop_schema();
OpSchema pad_schema();
OpSchema flip_schema();
OpSchema random_flip_schema();
OpSchema transpose_schema();
// Normalisation and types (operators/normalize_ops.cc).
OpSchema crop_mirror_normalize_schema();
OpSchema normalize_schema();
OpSchema cast_schema();
// Colour (operators/color_ops.cc, color_jitter.cc).
OpSchema color_space_conversion_schema();
OpSchema grayscale_schema();
OpSchema solarize_schema();
OpSchema brightness_schema();
OpSchema contrast_schema();
OpSchema saturation_schema();
OpSchema hue_schema();
OpSchema color_jitter_schema();
// Filters (operators/blur_op.cc, pil_blur_op.cc).
OpSchema gaussian_blur_schema();
OpSchema pil_gaussian_blur_schema();
// Tensor augmentation (operators/random_erasing.cc).
OpSchema random_erasing_schema();
// Automatic augmentation policies (operators/auto_augment.cc, augmix.cc, timm_augment.cc).
OpSchema auto_augment_schema();
OpSchema augmix_schema();
OpSchema timm_augment_schema();

// The pipeline's default file system takes members of tar shards as files ("<shard>.tar/<member>"):
// `inner` under a ShardMemberFileSystem (pipeline/readers/tar/shard_member_file.cc). Named here, as
// the readers' schemas are, so that the executor includes no reader header.
std::shared_ptr<FileSystem> shard_member_file_system(std::shared_ptr<FileSystem> inner);

}  // namespace hdl
HDL_API_END
