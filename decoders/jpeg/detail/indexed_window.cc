// The index half of the JPEG decoder's indexed region decodes
// (decoders/jpeg/detail/indexed_window.h).
#include "decoders/jpeg/detail/indexed_window.h"

#include <algorithm>
#include <memory>

#include "decoders/jpeg/index_cache.h"
#include "decoders/jpeg/jpeg_index.h"

namespace hdl::detail::jpeg {

std::optional<JpegWindow> prepare_indexed_window(const jpeg_decompress_struct& cinfo, std::span<const uint8_t> data,
                                                 const DecodeRequest& request, const DecodeWindow& window, bool own,
                                                 JpegWindowEntropy& entropy, std::vector<uint8_t>& window_jpeg,
                                                 std::shared_ptr<const JpegScanIndex>& index) {
  if (window.orientation != 1 || window.scale_denom != 1 || request.roi.empty()) return std::nullopt;
  if (cinfo.progressive_mode || cinfo.arith_code || cinfo.restart_interval != 0 ||
      cinfo.data_precision != 8 || (cinfo.num_components != 1 && cinfo.num_components != 3) ||
      cinfo.comps_in_scan != cinfo.num_components)
    return std::nullopt;
  const int64_t width = cinfo.image_width, height = cinfo.image_height;
  const bool one = cinfo.num_components == 1;
  const int64_t mcu_w = one ? 8 : 8 * cinfo.max_h_samp_factor, mcu_h = one ? 8 : 8 * cinfo.max_v_samp_factor;
  const int64_t mcus_x = (width + mcu_w - 1) / mcu_w;
  // One pixel of context each side: fancy chroma upsampling blends each chroma sample with
  // its neighbour on the side of the pixel (a window starting at an even column needs the
  // chroma sample left of it, the one covering the column before; likewise at the other
  // edges); IDCT and colour conversion are per block and per pixel.
  constexpr int64_t kContext = 1;
  const Roi& win = window.stored;
  const int64_t c0 = std::max<int64_t>(0, win.x - kContext) / mcu_w;
  const int64_t c1 = (std::min(width, win.x + win.w + kContext) + mcu_w - 1) / mcu_w;
  const int64_t r0 = std::max<int64_t>(0, win.y - kContext) / mcu_h;
  const int64_t r1 = (std::min(height, win.y + win.h + kContext) + mcu_h - 1) / mcu_h;
  // Without the index libjpeg Huffman-decodes every MCU of the rows above the window's end;
  // with it, the window's MCUs (widened to the index's column step). Our own Huffman decoder
  // is faster than libjpeg's, so once a file has an index it pays for any window; building
  // one (an extra pass) pays only for windows well inside the image, or when the caller
  // expects many (random crops).
  auto worth = [&](int64_t step) {
    const int64_t w0 = c0 / step * step, w1 = std::min(mcus_x, (c1 + step - 1) / step * step);
    return (w1 - w0) * (r1 - r0) * 10 <= r1 * mcus_x * 9;
  };
  JpegIndexCache& cache = *request.index_cache;
  bool unindexable = false;
  index = cache.find(request.index_key, data, &unindexable);
  if (!index) {
    if (!worth(1) && !request.index_every_file) return std::nullopt;
    if (unindexable || !cache.has_room()) return std::nullopt;
    auto built = detail::build_jpeg_index(data, cache.file_share());
    cache.insert(request.index_key, data, built.is_ok() ? *built : nullptr);
    if (!built.is_ok()) return std::nullopt;
    index = *built;
  }
  if (!own && !worth(detail::jpeg_index_column_step(*index))) return std::nullopt;
  // From here on a failure is counted: the index applied, and the file is decoded without it.
  auto fallback = [&] {
    cache.count_fallback();
    return std::nullopt;
  };
  const detail::JpegMcuGrid& grid = detail::jpeg_index_grid(*index);
  if (grid.width != width || grid.height != height || grid.mcu_w != mcu_w || grid.mcu_h != mcu_h)
    return fallback();
  Result<detail::JpegWindow> piece = Status::internal("");
  if (own) {
    auto plan = detail::plan_jpeg_window(*index, r0, r1, c0, c1);
    if (!plan.is_ok() || !entropy.start(data, *index, *plan).is_ok()) return fallback();
    detail::write_jpeg_window_header(*index, *plan, window_jpeg);
    piece = plan->window;
  }
  if (!own) piece = detail::write_jpeg_window(data, *index, r0, r1, c0, c1, window_jpeg);
  if (!piece.is_ok()) return fallback();
  return *piece;
}

}  // namespace hdl::detail::jpeg
