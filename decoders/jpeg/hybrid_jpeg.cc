// Hybrid JPEG decoding, the CPU half: planning, Huffman decoding into coefficients, batch
// layout (decoders/jpeg/hybrid_jpeg.h).
#include "decoders/jpeg/hybrid_jpeg.h"

// clang-format off: jpeglib.h needs <cstdio> first.
#include <csetjmp>
#include <cstdio>
#include <jpeglib.h>
#include <jerror.h>
// clang-format on

#include <algorithm>
#include <cstring>
#include <string>

#include "decoders/detail/decode_window.h"
#include "decoders/detail/image_header.h"
#include "decoders/jpeg/detail/libjpeg_errors.h"
#include "decoders/jpeg/index_cache.h"
#include "decoders/jpeg/jpeg_index.h"
#include "decoders/jpeg/jpeg_window.h"
#include "decoders/jpeg/window_entropy.h"

namespace hdl {
namespace {

using kernels::JpegComponentGeometry;
using kernels::JpegImageGeometry;
using kernels::JpegTransform;
using kernels::JpegUpsample;

Status unsupported(const std::string& what) { return Status::unsupported("hybrid jpeg: " + what); }

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
size_t align256(size_t n) { return (n + 255) / 256 * 256; }  // each sample plane 256-byte aligned

// libjpeg-turbo's block smoothing (jdcoefct.c smoothing_ok) applies to a progressive file whose
// scans leave any of the first nine AC coefficients of a component not fully refined (when
// the tables allow it): the decoder then estimates them from the neighbouring blocks' DC
// values, which the hybrid path does not do.
bool libjpeg_smooths(const jpeg_decompress_struct& ci) {
  if (!ci.progressive_mode || ci.coef_bits == nullptr || !ci.do_block_smoothing) return false;
  static constexpr int kPositions[] = {0, 1, 8, 16, 9, 2, 3, 10, 17, 24};  // natural order
  bool useful = false;
  for (int c = 0; c < ci.num_components; ++c) {
    const JQUANT_TBL* q = ci.comp_info[c].quant_table;
    if (q == nullptr) return false;
    for (int p : kPositions)
      if (q->quantval[p] == 0) return false;
    const int* bits = ci.coef_bits[c];
    if (bits[0] < 0) return false;
    for (int k = 1; k < 10; ++k) useful |= bits[k] != 0;
  }
  return useful;
}

}  // namespace

// --- HybridJpegDecoder ------------------------------------------------------------------------

struct HybridJpegDecoder::Impl {
  detail::jpeg::Decompressor libjpeg;  // made fresh per file (read_header)
  jpeg_decompress_struct& cinfo = libjpeg.cinfo;
  detail::jpeg::ErrorState& err = libjpeg.err;
  detail::JpegWindowEntropy entropy;
  std::vector<int16_t> coefs;
  std::vector<uint16_t> quant;
  std::vector<uint8_t> scratch;
  std::vector<int16_t*> block_ptrs;
  Stats stats;

  bool read_header(std::span<const uint8_t> data) { return libjpeg.read_header(data); }
  Status error_status() const { return libjpeg.error_status(); }

  Status plan(std::span<const uint8_t> data, const DecodeRequest& request, HybridJpegPlan* out);
  bool decode_indexed(std::span<const uint8_t> data, const HybridJpegPlan& plan, const DecodeRequest& request,
                      int16_t* coefs, uint16_t* quant);
  bool read_coefficients(const HybridJpegPlan& plan, int16_t* coefs, uint16_t* quant, bool* smooths);
};

HybridJpegDecoder::HybridJpegDecoder() : impl_(std::make_unique<Impl>()) {}
HybridJpegDecoder::~HybridJpegDecoder() = default;
HybridJpegDecoder::Stats HybridJpegDecoder::stats() const { return impl_->stats; }

Result<HybridJpegPlan> HybridJpegDecoder::plan(std::span<const uint8_t> data, const DecodeRequest& request) {
  if (!impl_->read_header(data)) return impl_->error_status();
  HybridJpegPlan plan;
  Status s = impl_->plan(data, request, &plan);
  jpeg_abort_decompress(&impl_->cinfo);
  if (!s.is_ok()) return s;
  return plan;
}

// After read_header: the geometry of `request` on this file, libjpeg's choices replayed
// (jdmaster.c: each component's IDCT size; jdsample.c: its upsampling method; jdmainct.c: the
// MCU rows and the edge samples it replicates).
Status HybridJpegDecoder::Impl::plan(std::span<const uint8_t> data, const DecodeRequest& request,
                                     HybridJpegPlan* out) {
  const jpeg_decompress_struct& ci = cinfo;
  if (ci.data_precision != 8) return unsupported(std::to_string(ci.data_precision) + "-bit samples");
  const int n = ci.num_components;
  JpegTransform transform;
  if (n == 1) {
    transform = JpegTransform::kGray;
  } else if (n == 3 && ci.jpeg_color_space == JCS_YCbCr) {
    transform = JpegTransform::kYCbCr;
  } else if (n == 3 && ci.jpeg_color_space == JCS_RGB) {
    transform = JpegTransform::kRgb;
  } else {
    return unsupported(std::to_string(n) + "-component image (CMYK / YCCK / other)");
  }
  ImageInfo info;
  info.format = "jpeg";
  info.width = ci.image_width;
  info.height = ci.image_height;
  info.channels = n;
  if (request.apply_orientation) info.orientation = detail::jpeg_exif_orientation(data);
  HDL_ASSIGN_OR_RETURN(detail::DecodeWindow window, detail::decode_window(info, request, 8));

  HybridJpegPlan& p = *out;
  const int64_t W = ci.image_width, H = ci.image_height;
  const int d = window.scale_denom, min_size = 8 / d;
  const int max_h = ci.max_h_samp_factor, max_v = ci.max_v_samp_factor;
  const bool single = n == 1;
  // MCU grid (one block per MCU for a 1-component image), in full-size and output pixels.
  const int64_t mcu_w = single ? 8 : 8 * max_h, mcu_h = single ? 8 : 8 * max_v;
  p.mcus_x = ceil_div(W, mcu_w);
  p.mcus_y = ceil_div(H, mcu_h);
  const int64_t mcu_out_w = mcu_w / d, mcu_out_h = mcu_h / d;
  const int64_t out_w = ceil_div(W, d), out_h = ceil_div(H, d);
  // The window's MCUs, with one output pixel of context on each side (fancy upsampling blends
  // a sample with its neighbour on the side of the pixel: a window starting at an even column
  // needs the sample left of it; likewise at the other edges).
  const Roi& win = window.scaled;
  p.mcu_c0 = std::max<int64_t>(0, win.x - 1) / mcu_out_w;
  p.mcu_c1 = std::min(out_w - 1, win.x + win.w) / mcu_out_w + 1;
  p.mcu_r0 = std::max<int64_t>(0, win.y - 1) / mcu_out_h;
  p.mcu_r1 = std::min(out_h - 1, win.y + win.h) / mcu_out_h + 1;

  JpegImageGeometry& g = p.geometry;
  g = JpegImageGeometry{};
  g.components = n;
  g.transform = transform;
  const bool do_fancy = min_size > 1;  // jdsample.c: do_fancy_upsampling && min_DCT_scaled_size > 1
  int64_t block = 0, sample_bytes = 0;
  for (int c = 0; c < n; ++c) {
    const jpeg_component_info& comp = ci.comp_info[c];
    const int h = comp.h_samp_factor, v = comp.v_samp_factor;
    JpegComponentGeometry& k = g.comp[c];
    // jdmaster.c: chroma scaled up by the IDCT rather than upsampled, by powers of 2.
    int size = min_size;
    while (size < 8 && (max_h * min_size) % (h * size * 2) == 0 && (max_v * min_size) % (v * size * 2) == 0) size *= 2;
    k.scaled_size = size;
    k.samples_w = static_cast<int32_t>(ceil_div(W * h * size, int64_t(max_h) * 8));
    k.samples_h = static_cast<int32_t>(ceil_div(H * v * size, int64_t(max_v) * 8));
    // jdsample.c jinit_upsampler.
    const int h_in = h * size / min_size, v_in = v * size / min_size;
    if (h_in == max_h && v_in == max_v) {
      k.upsample = JpegUpsample::kFull;
    } else if (h_in * 2 == max_h && v_in == max_v) {
      k.upsample = do_fancy && k.samples_w > 2 ? JpegUpsample::kH2V1Fancy : JpegUpsample::kReplicate;
      k.expand_h = 2;
    } else if (h_in == max_h && v_in * 2 == max_v && do_fancy) {
      k.upsample = JpegUpsample::kH1V2Fancy;
      k.expand_v = 2;
    } else if (h_in * 2 == max_h && v_in * 2 == max_v) {
      k.upsample = do_fancy && k.samples_w > 2 ? JpegUpsample::kH2V2Fancy : JpegUpsample::kReplicate;
      k.expand_h = k.expand_v = 2;
    } else if (max_h % h_in == 0 && max_v % v_in == 0) {
      k.upsample = JpegUpsample::kReplicate;
      k.expand_h = max_h / h_in;
      k.expand_v = max_v / v_in;
    } else {
      return unsupported("sampling factors " + std::to_string(h) + "x" + std::to_string(v) + " under " +
                         std::to_string(max_h) + "x" + std::to_string(max_v) + " (fractional upsampling)");
    }
    p.mcu_blocks_w[c] = single ? 1 : h;
    p.mcu_blocks_h[c] = single ? 1 : v;
    k.block_x0 = static_cast<int32_t>(p.mcu_c0 * p.mcu_blocks_w[c]);
    k.block_y0 = static_cast<int32_t>(p.mcu_r0 * p.mcu_blocks_h[c]);
    k.blocks_w = static_cast<int32_t>((p.mcu_c1 - p.mcu_c0) * p.mcu_blocks_w[c]);
    k.blocks_h = static_cast<int32_t>((p.mcu_r1 - p.mcu_r0) * p.mcu_blocks_h[c]);
    k.quant = c;
    k.block_begin = block;
    k.sample_offset = sample_bytes;
    block += int64_t(k.blocks_w) * k.blocks_h;
    sample_bytes += align256(size_t(k.blocks_w) * size * size_t(k.blocks_h) * size);
  }
  g.x0 = static_cast<int32_t>(win.x);
  g.y0 = static_cast<int32_t>(win.y);
  g.width = static_cast<int32_t>(win.w);
  g.height = static_cast<int32_t>(win.h);
  g.orientation = window.orientation;
  g.color = request.color;
  g.block_begin = 0;
  g.pixel_begin = 0;
  p.shape = window.shape;
  p.scale_denom = d;
  p.blocks = block;
  p.sample_bytes = sample_bytes;
  p.components = n;
  return Status::ok();
}

// The plan's blocks through the file's entry-point index: JpegWindowEntropy decodes the
// window's MCUs straight from the file (MCUs it must decode beside them are dropped). After
// read_header. False when the index does not apply or fails (the caller reads the file with
// libjpeg instead).
bool HybridJpegDecoder::Impl::decode_indexed(std::span<const uint8_t> data, const HybridJpegPlan& plan,
                                             const DecodeRequest& request, int16_t* coefs, uint16_t* quant) {
  const jpeg_decompress_struct& ci = cinfo;
  if (!request.index_cache || ci.progressive_mode || ci.arith_code || ci.restart_interval != 0 ||
      ci.comps_in_scan != ci.num_components)
    return false;
  for (int c = 0; c < ci.num_components; ++c) {
    // The scan's blocks come in its component order: the frame's, here.
    if (ci.cur_comp_info[c] != &ci.comp_info[c]) return false;
    if (!ci.quant_tbl_ptrs[ci.comp_info[c].quant_tbl_no]) return false;
  }
  JpegIndexCache& cache = *request.index_cache;
  bool unindexable = false;
  std::shared_ptr<const detail::JpegScanIndex> index = cache.find(request.index_key, data, &unindexable);
  if (!index) {
    if (unindexable || !cache.has_room()) return false;
    auto built = detail::build_jpeg_index(data, cache.file_share());
    cache.insert(request.index_key, data, built.is_ok() ? *built : nullptr);
    if (!built.is_ok()) return false;
    index = *built;
  }
  auto fallback = [&] {
    cache.count_fallback();
    ++stats.fallbacks;
    return false;
  };
  const detail::JpegMcuGrid& grid = detail::jpeg_index_grid(*index);
  if (grid.width != int64_t(ci.image_width) || grid.height != int64_t(ci.image_height) || grid.mcus_x != plan.mcus_x ||
      grid.mcus_y != plan.mcus_y)
    return fallback();
  auto wplan = detail::plan_jpeg_window(*index, plan.mcu_r0, plan.mcu_r1, plan.mcu_c0, plan.mcu_c1);
  if (!wplan.is_ok() || !entropy.start(data, *index, *wplan).is_ok()) return fallback();
  const int n = plan.components;
  int per_mcu = 0;
  for (int c = 0; c < n; ++c) per_mcu += plan.mcu_blocks_w[c] * plan.mcu_blocks_h[c];
  if (entropy.blocks_per_mcu() != per_mcu) return fallback();
  block_ptrs.resize(size_t(per_mcu));
  const JpegImageGeometry& g = plan.geometry;
  for (int64_t my = wplan->r0; my < wplan->r1; ++my) {
    for (int64_t mx = wplan->c0; mx < wplan->c1; ++mx) {
      const bool keep = mx >= plan.mcu_c0 && mx < plan.mcu_c1;
      if (keep) {
        int b = 0;
        for (int c = 0; c < n; ++c) {
          const JpegComponentGeometry& k = g.comp[c];
          const int hb = plan.mcu_blocks_w[c], vb = plan.mcu_blocks_h[c];
          for (int y = 0; y < vb; ++y)
            for (int x = 0; x < hb; ++x) {
              const int64_t row = (my - plan.mcu_r0) * vb + y, col = (mx - plan.mcu_c0) * hb + x;
              block_ptrs[size_t(b++)] = coefs + 64 * (k.block_begin + row * k.blocks_w + col);
            }
        }
      }
      if (!entropy.decode_mcu(keep ? block_ptrs.data() : nullptr)) return fallback();
    }
  }
  for (int c = 0; c < n; ++c) {
    const JQUANT_TBL* t = ci.quant_tbl_ptrs[ci.comp_info[c].quant_tbl_no];
    std::copy(t->quantval, t->quantval + 64, quant + 64 * c);
  }
  cache.count_hit();
  ++stats.indexed;
  return true;
}

// The plan's blocks from libjpeg's jpeg_read_coefficients (every scan of the file), after
// read_header. False on a libjpeg error (err says which); `*smooths` when libjpeg would smooth
// the file's blocks.
bool HybridJpegDecoder::Impl::read_coefficients(const HybridJpegPlan& plan, int16_t* coefs, uint16_t* quant,
                                                bool* smooths) {
  if (setjmp(err.jump)) {
    jpeg_abort_decompress(&cinfo);
    return false;
  }
  jvirt_barray_ptr* arrays = jpeg_read_coefficients(&cinfo);
  *smooths = libjpeg_smooths(cinfo);
  const JpegImageGeometry& g = plan.geometry;
  for (int c = 0; c < plan.components && !*smooths; ++c) {
    const JpegComponentGeometry& k = g.comp[c];
    const jpeg_component_info& comp = cinfo.comp_info[c];
    const JDIMENSION rows = JDIMENSION(ceil_div(comp.height_in_blocks, comp.v_samp_factor) * comp.v_samp_factor);
    const JDIMENSION cols = JDIMENSION(ceil_div(comp.width_in_blocks, comp.h_samp_factor) * comp.h_samp_factor);
    if (JDIMENSION(k.block_y0 + k.blocks_h) > rows || JDIMENSION(k.block_x0 + k.blocks_w) > cols)
      ERREXIT(&cinfo, JERR_BAD_DCT_COEF);  // (not expected: the plan is inside the arrays)
    for (int32_t y = 0; y < k.blocks_h; ++y) {
      JBLOCKARRAY row = (*cinfo.mem->access_virt_barray)(reinterpret_cast<j_common_ptr>(&cinfo), arrays[c],
                                                         JDIMENSION(k.block_y0 + y), 1, FALSE);
      std::memcpy(coefs + 64 * (k.block_begin + int64_t(y) * k.blocks_w), row[0][k.block_x0],
                  size_t(k.blocks_w) * 64 * sizeof(int16_t));
    }
    const JQUANT_TBL* t = comp.quant_table;
    if (t == nullptr) ERREXIT(&cinfo, JERR_NO_QUANT_TABLE);
    std::copy(t->quantval, t->quantval + 64, quant + 64 * c);
  }
  jpeg_abort_decompress(&cinfo);
  return true;
}

Status HybridJpegDecoder::decode_coefficients(std::span<const uint8_t> data, const HybridJpegPlan& plan,
                                              const DecodeRequest& request, std::span<int16_t> coefs,
                                              std::span<uint16_t> quant) {
  if (coefs.size() < size_t(plan.blocks) * 64 || quant.size() < size_t(plan.components) * 64)
    return Status::invalid_argument("hybrid jpeg: coefficient or table buffer smaller than the plan");
  std::fill(coefs.begin(), coefs.begin() + plan.blocks * 64, int16_t(0));
  Impl& m = *impl_;
  if (!m.read_header(data)) return m.error_status();
  const bool single = m.cinfo.num_components == 1;
  if (m.cinfo.num_components != plan.components ||
      ceil_div(m.cinfo.image_width, single ? 8 : 8 * m.cinfo.max_h_samp_factor) != plan.mcus_x ||
      ceil_div(m.cinfo.image_height, single ? 8 : 8 * m.cinfo.max_v_samp_factor) != plan.mcus_y) {
    jpeg_abort_decompress(&m.cinfo);
    return Status::invalid_argument("hybrid jpeg: the plan is not this file's");
  }
  if (m.decode_indexed(data, plan, request, coefs.data(), quant.data())) {
    jpeg_abort_decompress(&m.cinfo);
    return Status::ok();
  }
  if (request.index_cache) std::fill(coefs.begin(), coefs.begin() + plan.blocks * 64, int16_t(0));
  m.err.max_scans = request.max_scans;
  bool smooths = false;
  if (!m.read_coefficients(plan, coefs.data(), quant.data(), &smooths)) return m.error_status();
  if (smooths)
    return unsupported("progressive file whose scans leave low AC coefficients unrefined (libjpeg smooths its blocks)");
  if (m.err.data_lost) {
    if (request.allow_partial)
      return unsupported("damaged data (" + std::string(m.err.warning) + "): decode the partial image on the CPU path");
    return Status::invalid_data(m.err.warning);
  }
  ++m.stats.libjpeg;
  return Status::ok();
}

Result<DecodeReport> HybridJpegDecoder::decode_host(std::span<const uint8_t> data, const DecodeRequest& request,
                                                    const TensorView& out) {
  HDL_ASSIGN_OR_RETURN(HybridJpegPlan p, plan(data, request));
  if (out.shape != p.shape)
    return Status::invalid_argument("output has shape " + out.shape.to_string() + ", decode writes " + p.shape.to_string());
  if (out.dtype != DType::kU8 || out.strides.ndim() != 3 || out.strides[2] != 1 || !out.device.is_cpu() ||
      out.data == nullptr || out.strides[0] < 0 || out.strides[1] < 0)
    return Status::invalid_argument("output must be a host uint8 HWC view with unit channel stride");
  Impl& m = *impl_;
  if (m.coefs.size() < size_t(p.blocks) * 64) m.coefs.resize(size_t(p.blocks) * 64);
  if (m.quant.size() < 64 * kernels::kJpegMaxComponents) m.quant.resize(64 * kernels::kJpegMaxComponents);
  HDL_RETURN_IF_ERROR(decode_coefficients(data, p, request, m.coefs, m.quant));
  if (m.scratch.size() < size_t(p.sample_bytes)) m.scratch.resize(size_t(p.sample_bytes));
  JpegImageGeometry g = p.geometry;
  g.out_offset = 0;
  g.out_row_stride = out.strides[0];
  g.out_pixel_stride = out.strides[1];
  kernels::JpegBatchView view;
  view.images = &g;
  view.image_count = 1;
  view.quant = m.quant.data();
  view.quant_count = p.components;
  view.coefs = m.coefs.data();
  view.blocks = p.blocks;
  view.samples = m.scratch.data();
  view.sample_bytes = p.sample_bytes;
  view.out = static_cast<uint8_t*>(out.data);
  view.out_bytes = (out.shape[0] - 1) * out.strides[0] + (out.shape[1] - 1) * out.strides[1] + out.shape[2];
  view.pixels = int64_t(g.width) * g.height;
  HDL_RETURN_IF_ERROR(kernels::jpeg_decode_batch_host(view));
  DecodeReport report;
  report.scale_denom = p.scale_denom;
  if (m.err.warnings > 0) report.warning = m.err.warning;
  return report;
}

}  // namespace hdl
