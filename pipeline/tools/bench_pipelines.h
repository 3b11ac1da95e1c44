// The pipelines hdl-bench runs: the named ones (resnet-train, resnet-eval, decode, video-decode,
// video-train) and JSON
// specs, pointed at the dataset given on the command line.
//
// Internal to pipeline/tools (not installed). Thread safety: pure functions.
#pragma once

#include <string>

#include "media/api.h"
#include "pipeline/spec.h"
#include "pipeline/tools/bench_args.h"

HDL_API_BEGIN
namespace hdl::tools {

/// The spec for args.pipeline over args.data. Named pipelines output (images, labels); a JSON
/// spec keeps its own outputs, with every file_reader's source replaced by args.data and, when
/// --dtype / --layout were given, every crop_mirror_normalize's dtype and output_layout set.
/// Throws ConfigError for an unknown name, an unreadable file or a bad spec.
PipelineSpec bench_spec(const BenchArgs& args);

/// ImageNet's channel means and standard deviations (torchvision's Normalize in the examples).
inline constexpr double kImagenetMean[3] = {0.485, 0.456, 0.406};
inline constexpr double kImagenetStd[3] = {0.229, 0.224, 0.225};
/// Kinetics-400's (torchvision's video_classification reference).
inline constexpr double kKineticsMean[3] = {0.43216, 0.394666, 0.37645};
inline constexpr double kKineticsStd[3] = {0.22803, 0.22145, 0.216989};

}  // namespace hdl::tools
HDL_API_END
