// The two code paths of crop_mirror_normalize, callable directly (internal to pipeline/kernels;
// for tests, which compare them byte for byte in one process: HDL_DISABLE_AVX2 is read once).
//
// Thread safety: as crop_mirror_normalize.
#pragma once

#include "media/api.h"
#include "media/status.h"
#include "media/tensor.h"
#include "pipeline/kernels/normalize.h"

HDL_API_BEGIN
namespace hdl::kernels::detail {

/// crop_mirror_normalize on the baseline path (`avx2` false) or with the AVX2 twins of its
/// uint8 rows (`avx2` true; only where cpu_supports_avx2(), else the baseline path runs).
/// crop_mirror_normalize itself is this with avx2 = cpu_has_avx2().
Status crop_mirror_normalize_path(const ConstTensorView& src, const TensorView& dst,
                                  const CropMirrorNormalizeOptions& options, bool avx2);

}  // namespace hdl::kernels::detail
HDL_API_END
