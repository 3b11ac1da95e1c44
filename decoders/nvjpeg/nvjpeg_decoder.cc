#include "decoders/nvjpeg/nvjpeg_decoder.h"

#include <string>
#include <string_view>

#include "decoders/detail/image_header.h"
#include "decoders/jpeg/jpeg_decoder.h"
#include "decoders/nvjpeg/detail/nvjpeg_api.h"
#include "media/cuda/allocator.h"
#include "media/cuda/runtime.h"
#include "media/cuda/stream.h"
#if HDL_HAVE_CUDA
#include "media/cuda/detail/check.h"
#endif

namespace hdl {
namespace {

// What nvJPEG needs to know beyond ImageInfo: the frame type and precision, and whether an
// Adobe APP14 segment says the three components are RGB (transform 0).
struct Frame {
  int sof = -1;        // marker 0xC0..0xCF
  int precision = 8;
  int adobe_transform = -1;
  bool jfif = false;
  bool rgb_ids = false;
};

Frame scan_frame(std::span<const uint8_t> d) {
  Frame f;
  size_t pos = 2;  // after SOI
  while (pos + 4 <= d.size()) {
    if (d[pos] != 0xFF) break;
    const uint8_t m = d[pos + 1];
    if (m == 0xFF) { ++pos; continue; }  // fill byte
    const size_t len = (size_t(d[pos + 2]) << 8) | d[pos + 3];
    if (len < 2 || pos + 2 + len > d.size() || m == 0xDA) break;
    const uint8_t* p = d.data() + pos + 4;
    if (m == 0xEE && len >= 14 && std::string_view(reinterpret_cast<const char*>(p), 5) == "Adobe") {
      f.adobe_transform = p[11];
    }
    if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC && len >= 3) {
      f.sof = m, f.precision = p[0];
      // libjpeg reads components named 'R', 'G', 'B' as RGB when no JFIF/Adobe marker says.
      f.rgb_ids = len >= 17 && p[5] == 3 && p[6] == 'R' && p[9] == 'G' && p[12] == 'B';
    }
    if (m == 0xE0 && len >= 7 && std::string_view(reinterpret_cast<const char*>(p), 4) == "JFIF") {
      f.jfif = true;
    }
    pos += 2 + len;
  }
  return f;
}

// Image-level reasons to leave a JPEG to the CPU (before any request is known).
Status frame_supported(const Frame& f, const ImageInfo& info) {
  if (f.sof == 0xC2) return Status::unsupported("progressive JPEG");
  if (f.sof != 0xC0 && f.sof != 0xC1) return Status::unsupported("JPEG coding other than Huffman baseline/extended");
  if (f.precision != 8) return Status::unsupported(std::to_string(f.precision) + "-bit JPEG");
  if (info.channels == 3 && (f.adobe_transform == 0 || (f.adobe_transform < 0 && !f.jfif && f.rgb_ids))) {
    return Status::unsupported("RGB JPEG (not YCbCr)");
  }
  return Status::ok();
}

}  // namespace

struct NvjpegDecoder::Impl {
  const detail::NvjpegApi* api = nullptr;
  void* handle = nullptr;
  void* state = nullptr;
  cuda::Stream stream;
  StoragePtr scratch;  // device memory for host or non-dense outputs
  Status init;         // the first initialisation's outcome, kept (no retry per image)
  ~Impl() {
    if (state) api->jpeg_state_destroy(state);
    if (handle) api->destroy(handle);
  }
};

NvjpegDecoder::NvjpegDecoder(const NvjpegDecoderOptions& options) : options_(options) {}
NvjpegDecoder::~NvjpegDecoder() = default;

const cuda::Stream* NvjpegDecoder::stream() const {
  return impl_ && impl_->stream.valid() ? &impl_->stream : nullptr;
}

Status nvjpeg_status() {
  static const Status status = [] {
    if (!cuda::built_with_cuda()) return Status::unsupported(cuda::unavailable_reason());
    std::string reasons;
    if (!cuda::available()) reasons = "no CUDA device: " + cuda::unavailable_reason();
    Status why;
    if (!detail::nvjpeg_api(&why)) reasons += (reasons.empty() ? "" : "; ") + why.message();
    return reasons.empty() ? Status::ok() : Status::unsupported(reasons);
  }();
  return status;
}

Status nvjpeg_supports(const ImageInfo& info, const DecodeRequest& request) {
  if (info.format != "jpeg") return Status::unsupported("not a JPEG");
  if (info.progressive) return Status::unsupported("progressive JPEG");
  if (info.color_space == "cmyk" || info.color_space == "ycck" || info.channels == 4) {
    return Status::unsupported("CMYK/YCCK JPEG");
  }
  if (info.color_space != "ycbcr" && info.color_space != "gray") {
    return Status::unsupported(info.color_space + " JPEG");
  }
  static const char* const kLayouts[] = {"444", "422", "420", "440", "411", "gray"};
  bool known = false;
  for (const char* l : kLayouts) known = known || info.subsampling == l;
  if (!known) return Status::unsupported(info.subsampling + " chroma subsampling");
  if (request.color == ColorFormat::kGray) return Status::unsupported("gray output");
  if (!request.roi.empty()) return Status::unsupported("region-of-interest decode");
  if (request.apply_orientation && info.orientation != 1) return Status::unsupported("EXIF orientation");
  return Status::ok();
}

Result<ImageInfo> NvjpegDecoder::read_info(std::span<const uint8_t> data) {
  HDL_RETURN_IF_ERROR(nvjpeg_status());
  return nvjpeg_probe_image(data);
}

Result<ImageInfo> nvjpeg_probe_image(std::span<const uint8_t> data) {
  ImageInfo info;
  // A header the parser refuses goes to the CPU decoder too, which reports it in its own words.
  if (Status s = detail::parse_image_header(data, &info); !s.is_ok()) {
    return Status::unsupported("header: " + s.message());
  }
  if (info.format != "jpeg") return Status::unsupported("not a JPEG");
  HDL_RETURN_IF_ERROR(frame_supported(scan_frame(data), info));
  return info;
}

Result<Shape> NvjpegDecoder::output_shape(const ImageInfo& info, const DecodeRequest& request) {
  HDL_RETURN_IF_ERROR(nvjpeg_supports(info, request));
  if (info.width * info.height > request.max_pixels) {
    return Status::resource_exhausted("image of " + std::to_string(info.width) + "x" +
                                      std::to_string(info.height) + " exceeds max_pixels " +
                                      std::to_string(request.max_pixels));
  }
  return Shape{info.height, info.width, 3};
}

Status NvjpegDecoder::fallback(Status s) {
  if (s.code() == StatusCode::kUnsupported) {
    ++stats_.fallbacks;
    // Count by the reason's first clause (library/device messages carry details after ':').
    const std::string& m = s.message();
    ++stats_.fallback_reasons[m.substr(0, m.find(':'))];
  }
  return s;
}

Status NvjpegDecoder::ensure_ready() {
  if (impl_) return impl_->init;
  impl_ = std::make_unique<Impl>();
  Status& init = impl_->init;
  init = nvjpeg_status();
  if (init.is_ok()) init = cuda::require_device(Device::cuda(options_.device));
#if HDL_HAVE_CUDA
  if (!init.is_ok()) return init;
  Impl& m = *impl_;
  m.api = detail::nvjpeg_api(nullptr);
  cuda::detail::DeviceGuard guard(options_.device);
  if (!guard.status().is_ok()) return init = Status::unsupported("nvjpeg: " + guard.status().message());
  auto failed = [](const char* call, int s) {
    return Status::unsupported(std::string("nvjpeg: ") + call + ": " + detail::nvjpeg_status_name(s));
  };
  if (int s = m.api->create_simple(&m.handle); s != detail::kNvjpegSuccess) {
    m.handle = nullptr;
    return init = failed("nvjpegCreateSimple", s);
  }
  if (int s = m.api->jpeg_state_create(m.handle, &m.state); s != detail::kNvjpegSuccess) {
    m.state = nullptr;
    return init = failed("nvjpegJpegStateCreate", s);
  }
  Result<cuda::Stream> stream = cuda::Stream::create(Device::cuda(options_.device));
  if (!stream.is_ok()) return init = Status::unsupported("nvjpeg: " + stream.status().message());
  m.stream = std::move(stream).value();
#endif
  return init;
}

Result<DecodeReport> NvjpegDecoder::decode(std::span<const uint8_t> data, const DecodeRequest& request,
                                           const TensorView& out) {
  Result<ImageInfo> info = read_info(data);
  if (!info.is_ok()) return fallback(info.status());
  Result<Shape> shape = output_shape(*info, request);
  if (!shape.is_ok()) return fallback(shape.status());
  if (out.shape != *shape || out.dtype != DType::kU8 || out.strides[2] != 1) {
    return Status::invalid_argument("nvjpeg: output view " + out.shape.to_string() + " " +
                                    dtype_name(out.dtype) + " does not fit " + shape->to_string());
  }
  if (!out.device.is_cpu() && out.device != Device::cuda(options_.device)) {
    return Status::invalid_argument("nvjpeg: output on " + out.device.to_string() +
                                    ", decoder on cuda:" + std::to_string(options_.device));
  }
  if (out.strides[1] != 3) return fallback(Status::unsupported("output pixels not dense"));
  if (Status s = ensure_ready(); !s.is_ok()) return fallback(s);
#if HDL_HAVE_CUDA
  Impl& m = *impl_;
  cuda::detail::DeviceGuard guard(options_.device);
  HDL_RETURN_IF_ERROR(guard.status());
  const int64_t h = out.shape[0], w = out.shape[1];
  const bool direct = !out.device.is_cpu();
  detail::NvjpegImage img{};
  img.channel[0] = static_cast<unsigned char*>(out.data);
  img.pitch[0] = static_cast<size_t>(out.strides[0]);
  if (!direct) {
    const size_t bytes = static_cast<size_t>(h * w * 3);
    if (!m.scratch || m.scratch->capacity() < bytes) {
      m.scratch.reset();
      try {
        m.scratch = Storage::allocate(cuda::device_allocator(options_.device), bytes + bytes / 2);
      } catch (const std::bad_alloc& e) {
        return Status::resource_exhausted(std::string("nvjpeg: ") + e.what());
      }
    }
    img.channel[0] = static_cast<unsigned char*>(m.scratch->data());
    img.pitch[0] = static_cast<size_t>(w * 3);
  }
  const int format = request.color == ColorFormat::kBGR ? detail::kNvjpegOutputBgri : detail::kNvjpegOutputRgbi;
  const int s = m.api->decode(m.handle, m.state, data.data(), data.size(), format, &img, m.stream.handle());
  if (s != detail::kNvjpegSuccess) {
    return fallback(Status::unsupported(std::string("nvjpeg: nvjpegDecode: ") + detail::nvjpeg_status_name(s)));
  }
  const cudaStream_t cs = static_cast<cudaStream_t>(m.stream.handle());
  if (!direct) {
    HDL_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(out.data, static_cast<size_t>(out.strides[0]), img.channel[0],
                                               img.pitch[0], static_cast<size_t>(w * 3),
                                               static_cast<size_t>(h), cudaMemcpyDefault, cs));
  }
  if (options_.synchronize || !direct) HDL_RETURN_IF_ERROR(m.stream.synchronize());
  ++stats_.decoded;
  return DecodeReport{};
#else
  return Status::internal("nvjpeg: unreachable without CUDA");
#endif
}

DecoderEntry nvjpeg_decoder_entry(const NvjpegDecoderOptions& options) {
  return {"nvjpeg", "jpeg", probe_jpeg, [options] { return std::make_unique<NvjpegDecoder>(options); }};
}

}  // namespace hdl
