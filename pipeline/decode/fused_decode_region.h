// The fused image_decoder's region, for a window of the image (crop_geometry.h): which region to
// decode, at which DCT scale, and which window of which virtual resize to compute from it, so
// that the result equals full decode + crop + resize + center crop. With the geometry arguments
// that choose it (fused_geometry_args), which image_decoder and the video clips parse alike.
//
// Internal to pipeline/ (pipeline/decode/: below the operators and the readers, which both use
// it). Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "decoders/decoder.h"
#include "media/api.h"
#include "media/status.h"
#include "pipeline/decode/crop_geometry.h"
#include "pipeline/kernels/resize.h"
#include "pipeline/random.h"
#include "pipeline/schema.h"
#include "pipeline/spec.h"

HDL_API_BEGIN
namespace hdl {

using kernels::PointYX;

/// What the fused image_decoder does after choosing a window of the image.
struct FusedDecodeArgs {
  std::vector<int64_t> resize;            ///< [] none, [s] shorter side, [h, w]
  std::optional<int64_t> max_size;        ///< with resize [s]
  std::optional<SizeHW> center_crop;      ///< after the resize
  kernels::ResizeOptions options;
  /// If not empty, each sample's filter is one of these, drawn uniformly (options.filter unused).
  std::vector<kernels::ResizeFilter> random_filters;
  bool dct_scaling = true;                ///< allow JPEG DCT-domain reduction
};

/// `args` for one sample: itself, or (with random_filters) a copy in `scratch` whose filter is
/// drawn from `rng`, one draw after the crop window's as timm's RandomResizedCropAndInterpolation
/// (interpolation='random') makes its random.choice after get_params.
const FusedDecodeArgs& sample_fused_args(const FusedDecodeArgs& args, RandomStream& rng, FusedDecodeArgs& scratch);

/// One image's fused decode: decode `roi` (oriented image pixels) at scale 1/`denom`, giving
/// `decoded` pixels, which sit at `src_origin` of a virtual `full_in` image (the window at the
/// decode scale); resize that to `full_out` and keep its window (`dst_origin`, `dst_size`), which
/// lands at `dst_in_output` of an output of `out_size` (the rest of the output is 0). When
/// `resample` is false the decoded pixels are the kept window as is (no resize).
struct FusedDecodeRegion {
  Roi roi;
  int denom = 1;
  SizeHW decoded;
  SizeHW full_in;
  PointYX src_origin;
  SizeHW full_out;
  PointYX dst_origin;
  SizeHW dst_size;
  PointYX dst_in_output;
  SizeHW out_size;
  bool resample = true;
};

/// The region to decode for `window` (inside an oriented image of `image` size), and where its
/// pixels go. `max_denom` is the largest DCT reduction the decoder offers (8 for JPEG, 1
/// otherwise): with args.dct_scaling, the largest of 8, 4, 2 (<= max_denom) that keeps the
/// window at least twice the resized size in both dimensions is used, the window is snapped to
/// that scale's pixel grid (nearest), and `roi` is aligned so the decoder returns exactly those
/// pixels. With denom 1 the result equals
/// full decode + crop(window) + resize + center crop bit for bit. Returns InvalidArgument for a
/// window outside the image. `ws` is scratch for the weight tables.
Result<FusedDecodeRegion> fused_decode_region(SizeHW image, const CropWindow& window, const FusedDecodeArgs& args,
                                              int max_denom, kernels::ResizeWorkspace& ws);

}  // namespace hdl

namespace hdl::ops {

/// The fused decoders' geometry arguments, shared by image_decoder and the video operators:
/// random_crop, scale, ratio, attempts (RandomResizedCrop), resize, max_size, interpolation,
/// antialias, pillow (Resize; pillow: PIL.Image.resize's arithmetic), center_crop (CenterCrop). `what` names the thing cropped ("image").
std::vector<ArgSchema> fused_geometry_args(const std::string& what);
/// Parses and checks scale / ratio / attempts (ConfigError naming the argument).
RandomResizedCropParams parse_random_resized_crop(const NodeSpec& n);
/// Parses and checks resize / max_size / center_crop / interpolation / antialias / pillow by
/// torchvision's rules, at build time (dct_scaling is left at its default).
FusedDecodeArgs parse_fused_geometry(const NodeSpec& n);

}  // namespace hdl::ops
HDL_API_END
