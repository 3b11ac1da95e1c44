#include "decoders/nvjpeg/nvjpeg_hardware.h"

#include <string>

#include "decoders/nvjpeg/detail/nvjpeg_api.h"
#include "decoders/nvjpeg/nvjpeg_decoder.h"
#include "media/cuda/runtime.h"
#include "media/cuda/stream.h"
#if HDL_HAVE_CUDA
#include "media/cuda/detail/check.h"
#endif

namespace hdl {

struct NvjpegHardwareDecoder::Impl {
  const detail::NvjpegApi* api = nullptr;
  void* handle = nullptr;
  void* state = nullptr;
  void* jpeg_stream = nullptr;  // host-side header parsing for supports()
  int batch_size = -1;          // what the batched state was initialised for (-1: nothing)
  int format = -1;
  Status init;
  ~Impl() {
    if (jpeg_stream) api->jpeg_stream_destroy(jpeg_stream);
    if (state) api->jpeg_state_destroy(state);
    if (handle) api->destroy(handle);
  }
};

NvjpegHardwareDecoder::NvjpegHardwareDecoder(int device) : device_(device) {}
NvjpegHardwareDecoder::~NvjpegHardwareDecoder() = default;

namespace {

Status failed(const std::string& call, int s) {
  return Status::unsupported("nvjpeg hardware: " + call + ": " + detail::nvjpeg_status_name(s));
}

}  // namespace

Status hardware_jpeg_structure(std::span<const uint8_t> d) {
  if (d.size() < 4 || d[0] != 0xFF || d[1] != 0xD8) return Status::unsupported("not a JPEG");
  int frame_components = -1;
  size_t pos = 2;
  while (pos + 4 <= d.size()) {
    if (d[pos] != 0xFF) return Status::unsupported("JPEG header: no marker where one belongs");
    const uint8_t m = d[pos + 1];
    if (m == 0xFF) {  // fill byte
      ++pos;
      continue;
    }
    const size_t len = (size_t(d[pos + 2]) << 8) | d[pos + 3];
    if (len < 2 || pos + 2 + len > d.size()) return Status::unsupported("JPEG header: a segment runs past the end");
    if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC && len >= 8) frame_components = d[pos + 9];
    if (m == 0xDA) {
      if (frame_components < 0) return Status::unsupported("JPEG header: a scan before the frame");
      if (d[pos + 4] != frame_components) return Status::unsupported("JPEG of several scans (non-interleaved)");
      break;
    }
    pos += 2 + len;
  }
  if (pos + 4 > d.size()) return Status::unsupported("JPEG header: no scan");
  const size_t from = d.size() > 64 ? d.size() - 64 : pos;
  for (size_t i = d.size() - 1; i > from; --i)
    if (d[i - 1] == 0xFF && d[i] == 0xD9) return Status::ok();
  return Status::unsupported("JPEG without EOI at its end (truncated?)");
}

Result<ImageInfo> hardware_may_take(std::span<const uint8_t> data, const DecodeRequest& request) {
  HDL_ASSIGN_OR_RETURN(ImageInfo info, nvjpeg_probe_image(data));
  HDL_RETURN_IF_ERROR(nvjpeg_supports(info, request));
  if (info.subsampling == "411" || info.subsampling == "410")
    return Status::unsupported(info.subsampling + " chroma subsampling (the engines refuse it)");
  HDL_RETURN_IF_ERROR(hardware_jpeg_structure(data));
  if (info.width * info.height > request.max_pixels)
    return Status::resource_exhausted("image of " + std::to_string(info.width) + "x" + std::to_string(info.height) +
                                      " exceeds max_pixels " + std::to_string(request.max_pixels));
  return info;
}

Status NvjpegHardwareDecoder::status() {
  if (impl_) return impl_->init;
  impl_ = std::make_unique<Impl>();
  Impl& m = *impl_;
  m.init = nvjpeg_status();
  if (m.init.is_ok()) m.init = cuda::require_device(Device::cuda(device_));
  if (!m.init.is_ok()) return m.init;
  m.api = detail::nvjpeg_api(nullptr);
  if (!m.api->has_batched())
    return m.init = Status::unsupported(m.api->library + " lacks " + m.api->batched_missing +
                                        " (batched decode on the hardware engines needs CUDA 11 or later)");
#if HDL_HAVE_CUDA
  cuda::detail::DeviceGuard guard(device_);
  if (!guard.status().is_ok()) return m.init = Status::unsupported("nvjpeg hardware: " + guard.status().message());
  if (int s = m.api->create_ex(detail::kNvjpegBackendHardware, nullptr, nullptr, 0, &m.handle);
      s != detail::kNvjpegSuccess) {
    m.handle = nullptr;
    return m.init = Status::unsupported("no hardware JPEG engines on cuda:" + std::to_string(device_) +
                                        " (nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE): " +
                                        detail::nvjpeg_status_name(s) + ")");
  }
  if (int s = m.api->jpeg_state_create(m.handle, &m.state); s != detail::kNvjpegSuccess) {
    m.state = nullptr;
    return m.init = failed("nvjpegJpegStateCreate", s);
  }
  if (int s = m.api->jpeg_stream_create(m.handle, &m.jpeg_stream); s != detail::kNvjpegSuccess) {
    m.jpeg_stream = nullptr;
    return m.init = failed("nvjpegJpegStreamCreate", s);
  }
#else
  m.init = Status::unsupported("nvjpeg hardware: built without CUDA");
#endif
  return m.init;
}

Result<ImageInfo> NvjpegHardwareDecoder::supports(std::span<const uint8_t> data, const DecodeRequest& request) {
  HDL_RETURN_IF_ERROR(status());
  HDL_ASSIGN_OR_RETURN(ImageInfo info, hardware_may_take(data, request));
  Impl& m = *impl_;
  if (int s = m.api->jpeg_stream_parse_header(m.handle, data.data(), data.size(), m.jpeg_stream);
      s != detail::kNvjpegSuccess)
    return failed("nvjpegJpegStreamParseHeader", s);
  // The output views are sized from our header parse: nvJPEG must read the same frame size.
  int components = 0, subsampling = 0, widths[4] = {}, heights[4] = {};
  if (int s = m.api->get_image_info(m.handle, data.data(), data.size(), &components, &subsampling, widths, heights);
      s != detail::kNvjpegSuccess)
    return failed("nvjpegGetImageInfo", s);
  if (widths[0] != info.width || heights[0] != info.height)
    return Status::unsupported("nvJPEG reads the frame as " + std::to_string(widths[0]) + "x" + std::to_string(heights[0]) +
                               ", this library as " + std::to_string(info.width) + "x" + std::to_string(info.height));
  int verdict = -1;  // nvJPEG's convention: 0 means the hardware takes it
  if (int s = m.api->decode_batched_supported(m.handle, m.jpeg_stream, &verdict); s != detail::kNvjpegSuccess)
    return failed("nvjpegDecodeBatchedSupported", s);
  if (verdict != 0) return Status::unsupported("the hardware engines do not take this JPEG (" + info.subsampling + ")");
  return info;
}

std::vector<Status> NvjpegHardwareDecoder::decode(std::span<const HardwareDecodeItem> items, ColorFormat color,
                                                  cuda::Stream& stream) {
  std::vector<Status> out(items.size());
  if (items.empty()) return out;
  if (Status s = status(); !s.is_ok()) {
    for (Status& o : out) o = s;
    return out;
  }
  if (color != ColorFormat::kRGB && color != ColorFormat::kBGR) {
    for (Status& o : out) o = Status::invalid_argument("nvjpeg hardware: RGB or BGR output only");
    return out;
  }
#if HDL_HAVE_CUDA
  Impl& m = *impl_;
  std::vector<const unsigned char*> data;
  std::vector<size_t> lengths;
  std::vector<detail::NvjpegImage> images;
  std::vector<size_t> which;  // item index of each batch entry
  for (size_t i = 0; i < items.size(); ++i) {
    const TensorView& v = items[i].out;
    if (v.device != Device::cuda(device_) || v.dtype != DType::kU8 || v.shape.ndim() != 3 || v.shape[2] != 3 ||
        v.strides[2] != 1 || v.strides[1] != 3 || v.strides[0] < 3 * v.shape[1] || items[i].data.empty()) {
      out[i] = Status::invalid_argument("nvjpeg hardware: item " + std::to_string(i) + ": output " +
                                        v.shape.to_string() + " " + dtype_name(v.dtype) + " on " +
                                        v.device.to_string() + " is not dense RGB on cuda:" + std::to_string(device_));
      continue;
    }
    detail::NvjpegImage img{};
    img.channel[0] = static_cast<unsigned char*>(v.data);
    img.pitch[0] = static_cast<size_t>(v.strides[0]);
    data.push_back(items[i].data.data());
    lengths.push_back(items[i].data.size());
    images.push_back(img);
    which.push_back(i);
  }
  if (which.empty()) return out;
  auto fail_all = [&](const Status& s) {
    for (size_t i : which) out[i] = s;
    m.batch_size = -1;  // re-initialise before the next batch
    ++stats_.failed_batches;
    return out;
  };
  cuda::detail::DeviceGuard guard(device_);
  if (!guard.status().is_ok()) return fail_all(Status::unsupported("nvjpeg hardware: " + guard.status().message()));
  const int n = static_cast<int>(which.size());
  const int format = color == ColorFormat::kBGR ? detail::kNvjpegOutputBgri : detail::kNvjpegOutputRgbi;
  if (n != m.batch_size || format != m.format) {
    if (int s = m.api->decode_batched_initialize(m.handle, m.state, n, 1, format); s != detail::kNvjpegSuccess)
      return fail_all(failed("nvjpegDecodeBatchedInitialize", s));
    m.batch_size = n, m.format = format;
  }
  // The engines may start writing before earlier work on `stream` is done (torchcodec #1634):
  // let that work finish first.
  if (Status s = stream.synchronize(); !s.is_ok()) return fail_all(Status::unsupported("nvjpeg hardware: " + s.message()));
  if (int s = m.api->decode_batched(m.handle, m.state, data.data(), lengths.data(), images.data(), stream.handle());
      s != detail::kNvjpegSuccess)
    return fail_all(failed("nvjpegDecodeBatched", s));
  ++stats_.batches;
  stats_.images += static_cast<uint64_t>(n);
#else
  for (Status& o : out) o = Status::unsupported("nvjpeg hardware: built without CUDA");
#endif
  return out;
}

}  // namespace hdl
