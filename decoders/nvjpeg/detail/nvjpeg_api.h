// Private: the few nvJPEG entry points the decoder uses, loaded with dlopen at run time, so
// that neither nvjpeg.h nor libnvjpeg is needed to build, and a machine without them runs.
//
// The declarations follow NVIDIA's documented C API (nvjpeg.h, CUDA 10 to 13); opaque handles
// are void*, enums int. Only what is declared here may be called.
//
// Thread safety: nvjpeg_api() loads once (thread-safe) and the table is immutable afterwards.
#pragma once

#include <cstddef>
#include <string>

#include "media/api.h"
#include "media/status.h"

HDL_API_BEGIN
namespace hdl::detail {

/// nvjpegImage_t: per-component plane pointers (device memory) and pitches in bytes.
struct NvjpegImage {
  unsigned char* channel[4];
  size_t pitch[4];
};

constexpr int kNvjpegSuccess = 0;      ///< NVJPEG_STATUS_SUCCESS
constexpr int kNvjpegBackendHardware = 3;  ///< NVJPEG_BACKEND_HARDWARE: the GPU's JPEG engines
constexpr int kNvjpegOutputRgbi = 5;   ///< NVJPEG_OUTPUT_RGBI: interleaved RGB in channel[0]
constexpr int kNvjpegOutputBgri = 6;   ///< NVJPEG_OUTPUT_BGRI

/// The loaded library's entry points (all non-null when loaded).
struct NvjpegApi {
  std::string library;  ///< the name dlopen took, e.g. "libnvjpeg.so.12"
  int (*create_simple)(void** handle) = nullptr;
  int (*destroy)(void* handle) = nullptr;
  int (*jpeg_state_create)(void* handle, void** state) = nullptr;
  int (*jpeg_state_destroy)(void* state) = nullptr;
  int (*get_image_info)(void* handle, const unsigned char* data, size_t length, int* components,
                        int* subsampling, int* widths, int* heights) = nullptr;
  int (*decode)(void* handle, void* state, const unsigned char* data, size_t length,
                int output_format, NvjpegImage* destination, void* cuda_stream) = nullptr;
  int (*get_property)(int type, int* value) = nullptr;  ///< 0 major, 1 minor, 2 patch

  // Batched decode on the hardware engines (CUDA 11+). Optional: all null when the library
  // lacks one of them (`batched_missing` names it).
  int (*create_ex)(int backend, void* device_allocator, void* pinned_allocator, unsigned flags,
                   void** handle) = nullptr;
  int (*decode_batched_initialize)(void* handle, void* state, int batch_size, int max_cpu_threads,
                                   int output_format) = nullptr;
  int (*decode_batched)(void* handle, void* state, const unsigned char* const* data, const size_t* lengths,
                        NvjpegImage* destinations, void* cuda_stream) = nullptr;
  int (*jpeg_stream_create)(void* handle, void** jpeg_stream) = nullptr;
  int (*jpeg_stream_destroy)(void* jpeg_stream) = nullptr;
  int (*jpeg_stream_parse_header)(void* handle, const unsigned char* data, size_t length,
                                  void* jpeg_stream) = nullptr;
  int (*decode_batched_supported)(void* handle, void* jpeg_stream, int* is_supported) = nullptr;
  std::string batched_missing;  ///< empty when the batched entry points are all there
  bool has_batched() const { return batched_missing.empty(); }
};

/// The process-wide table, or why there is none: kUnsupported "libnvjpeg not found (tried
/// libnvjpeg.so.13, ...): <dlerror>" or "libnvjpeg.so.12 lacks nvjpegDecode". Set
/// HDL_NVJPEG_LIBRARY to a path or soname to try that first.
const NvjpegApi* nvjpeg_api(Status* why_not);

/// "NVJPEG_STATUS_BAD_JPEG" etc. for an nvJPEG status code.
const char* nvjpeg_status_name(int status);

}  // namespace hdl::detail
HDL_API_END
