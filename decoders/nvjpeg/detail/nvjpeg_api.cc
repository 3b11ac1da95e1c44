#include "decoders/nvjpeg/detail/nvjpeg_api.h"

#include <dlfcn.h>

#include <cstdlib>
#include <iterator>
#include <vector>

namespace hdl::detail {
namespace {

template <typename F>
bool bind(void* lib, const char* symbol, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, symbol));
  return fn != nullptr;
}

struct Loaded {
  NvjpegApi api;
  Status status;
};

Loaded load() {
  Loaded out;
  std::vector<std::string> names;
  if (const char* env = std::getenv("HDL_NVJPEG_LIBRARY"); env && *env) names.emplace_back(env);
  for (const char* n : {"libnvjpeg.so.13", "libnvjpeg.so.12", "libnvjpeg.so.11", "libnvjpeg.so"}) {
    names.emplace_back(n);
  }
  std::string tried, last_error;
  void* lib = nullptr;
  for (const std::string& n : names) {
    lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      out.api.library = n;
      break;
    }
    tried += (tried.empty() ? "" : ", ") + n;
    if (const char* e = dlerror()) last_error = e;
  }
  if (!lib) {
    out.status = Status::unsupported("libnvjpeg not found (tried " + tried + "): " + last_error);
    return out;
  }
  NvjpegApi& a = out.api;
  const char* missing = nullptr;
  if (!bind(lib, "nvjpegCreateSimple", a.create_simple)) missing = "nvjpegCreateSimple";
  else if (!bind(lib, "nvjpegDestroy", a.destroy)) missing = "nvjpegDestroy";
  else if (!bind(lib, "nvjpegJpegStateCreate", a.jpeg_state_create)) missing = "nvjpegJpegStateCreate";
  else if (!bind(lib, "nvjpegJpegStateDestroy", a.jpeg_state_destroy)) missing = "nvjpegJpegStateDestroy";
  else if (!bind(lib, "nvjpegGetImageInfo", a.get_image_info)) missing = "nvjpegGetImageInfo";
  else if (!bind(lib, "nvjpegDecode", a.decode)) missing = "nvjpegDecode";
  else if (!bind(lib, "nvjpegGetProperty", a.get_property)) missing = "nvjpegGetProperty";
  if (missing) {
    out.status = Status::unsupported(a.library + " lacks " + missing);
    dlclose(lib);
    return out;
  }
  const char* batched = nullptr;
  if (!bind(lib, "nvjpegCreateEx", a.create_ex)) batched = "nvjpegCreateEx";
  else if (!bind(lib, "nvjpegDecodeBatchedInitialize", a.decode_batched_initialize)) batched = "nvjpegDecodeBatchedInitialize";
  else if (!bind(lib, "nvjpegDecodeBatched", a.decode_batched)) batched = "nvjpegDecodeBatched";
  else if (!bind(lib, "nvjpegJpegStreamCreate", a.jpeg_stream_create)) batched = "nvjpegJpegStreamCreate";
  else if (!bind(lib, "nvjpegJpegStreamDestroy", a.jpeg_stream_destroy)) batched = "nvjpegJpegStreamDestroy";
  else if (!bind(lib, "nvjpegJpegStreamParseHeader", a.jpeg_stream_parse_header)) batched = "nvjpegJpegStreamParseHeader";
  else if (!bind(lib, "nvjpegDecodeBatchedSupported", a.decode_batched_supported)) batched = "nvjpegDecodeBatchedSupported";
  if (batched) {
    a.batched_missing = batched;
    a.create_ex = nullptr, a.decode_batched_initialize = nullptr, a.decode_batched = nullptr;
    a.jpeg_stream_create = nullptr, a.jpeg_stream_destroy = nullptr, a.jpeg_stream_parse_header = nullptr;
    a.decode_batched_supported = nullptr;
  }
  // On success the library stays loaded for the life of the process (never dlclose'd: decoder
  // instances may be destroyed during exit).
  return out;
}

}  // namespace

const NvjpegApi* nvjpeg_api(Status* why_not) {
  static const Loaded loaded = load();
  if (!loaded.status.is_ok()) {
    if (why_not) *why_not = loaded.status;
    return nullptr;
  }
  return &loaded.api;
}

const char* nvjpeg_status_name(int s) {
  static const char* const names[] = {
      "NVJPEG_STATUS_SUCCESS", "NVJPEG_STATUS_NOT_INITIALIZED", "NVJPEG_STATUS_INVALID_PARAMETER",
      "NVJPEG_STATUS_BAD_JPEG", "NVJPEG_STATUS_JPEG_NOT_SUPPORTED", "NVJPEG_STATUS_ALLOCATOR_FAILURE",
      "NVJPEG_STATUS_EXECUTION_FAILED", "NVJPEG_STATUS_ARCH_MISMATCH", "NVJPEG_STATUS_INTERNAL_ERROR",
      "NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED", "NVJPEG_STATUS_INCOMPLETE_BITSTREAM"};
  return s >= 0 && s < static_cast<int>(std::size(names)) ? names[s] : "NVJPEG_STATUS_UNKNOWN";
}

}  // namespace hdl::detail
