#include "pipeline/registry.h"

#include <algorithm>

#include "pipeline/errors.h"

namespace hdl {

const OpRegistry& OpRegistry::builtin() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    // Readers.
    r.add(file_reader_schema());
    // Decoders.
    r.add(image_decoder_schema());
    r.add(video_reader_schema());
    r.add(video_decoder_schema());
    r.add(webdataset_reader_schema());
    // Image geometry.
    r.add(resize_schema());
    r.add(crop_schema());
    r.add(random_crop_schema());
    r.add(random_resized_crop_schema());
    r.add(pad_schema());
    r.add(flip_schema());
    r.add(random_flip_schema());
    r.add(transpose_schema());
    // Normalisation and types.
    r.add(crop_mirror_normalize_schema());
    r.add(normalize_schema());
    r.add(cast_schema());
    // Colour.
    r.add(color_space_conversion_schema());
    r.add(grayscale_schema());
    r.add(solarize_schema());
    r.add(brightness_schema());
    r.add(contrast_schema());
    r.add(saturation_schema());
    r.add(hue_schema());
    r.add(color_jitter_schema());
    // Filters.
    r.add(gaussian_blur_schema());
    r.add(pil_gaussian_blur_schema());
    // Tensor augmentation.
    r.add(random_erasing_schema());
    // Automatic augmentation.
    r.add(auto_augment_schema());
    r.add(augmix_schema());
    r.add(timm_augment_schema());
    // Random number generators.
    r.add(coin_flip_schema());
    r.add(random_uniform_schema());
    r.add(random_normal_schema());
    return r;
  }();
  return registry;
}

void OpRegistry::add(OpSchema schema) {
  if (!schema.create) throw ConfigError("operator \"" + schema.name + "\" has no factory");
  auto lists = [&](Stage st) { return std::find(schema.stages.begin(), schema.stages.end(), st) != schema.stages.end(); };
  const bool on_device = lists(Stage::kDevice) || lists(Stage::kMixed);
  if (on_device != static_cast<bool>(schema.create_device))
    throw ConfigError("operator \"" + schema.name + "\" " +
                      (on_device ? "lists stage gpu or mixed but has no create_device"
                                 : "has create_device but lists neither stage gpu nor mixed"));
  const std::string name = schema.name;
  if (!schemas_.emplace(name, std::move(schema)).second)
    throw ConfigError("operator \"" + name + "\" is registered twice");
}

const OpSchema* OpRegistry::find(const std::string& name) const {
  auto it = schemas_.find(name);
  return it == schemas_.end() ? nullptr : &it->second;
}

std::vector<const OpSchema*> OpRegistry::all() const {
  std::vector<const OpSchema*> out;
  for (const auto& [name, s] : schemas_) out.push_back(&s);
  return out;
}

}  // namespace hdl
