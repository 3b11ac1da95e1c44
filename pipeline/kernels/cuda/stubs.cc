// Builds without CUDA: the device kernels' entry points exist and say so.
#include "pipeline/kernels/cuda/color.h"
#include "pipeline/kernels/cuda/geometry.h"
#include "pipeline/kernels/cuda/normalize.h"
#include "pipeline/kernels/cuda/resize.h"

namespace hdl::kernels::cuda {
namespace {
Status no_cuda() { return Status::unsupported("not available: built without CUDA"); }
}  // namespace

using hdl::cuda::Stream;

Status resize(const ConstTensorView&, const TensorView&, const ResizeOptions&, DeviceWorkspace&,
              Stream&) { return no_cuda(); }
Status crop(const ConstTensorView&, int64_t, int64_t, const TensorView&, Stream&,
            std::span<const double>) { return no_cuda(); }
Status flip(const ConstTensorView&, const TensorView&, bool, bool, Stream&) { return no_cuda(); }
Status crop_mirror_normalize(std::span<const ConstTensorView>, std::span<const CmnWindow>,
                             const TensorView&, const CmnBatchOptions&, DeviceWorkspace&,
                             Stream&) { return no_cuda(); }
Status swap_red_blue(const ConstTensorView&, const TensorView&, Stream&) { return no_cuda(); }
Status rgb_to_grayscale(const ConstTensorView&, const TensorView&, Stream&) { return no_cuda(); }
Status adjust_brightness(const ConstTensorView&, const TensorView&, double, Stream&) { return no_cuda(); }
Status adjust_contrast(const ConstTensorView&, const TensorView&, double, DeviceWorkspace&,
                       Stream&) { return no_cuda(); }
Status adjust_saturation(const ConstTensorView&, const TensorView&, double, Stream&) { return no_cuda(); }
Status adjust_hue(const ConstTensorView&, const TensorView&, double, Stream&) { return no_cuda(); }

}  // namespace hdl::kernels::cuda
