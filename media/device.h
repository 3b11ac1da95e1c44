// Device: where memory lives and where work runs.
#pragma once

#include <string>
#include <string_view>

#include "media/api.h"

HDL_API_BEGIN
namespace hdl {

enum class DeviceKind : unsigned char { kCpu, kCuda };

/// A device: the host CPU, or an accelerator with an index ("cuda:1").
struct Device {
  DeviceKind kind = DeviceKind::kCpu;
  int index = 0;  ///< which accelerator; always 0 for the CPU

  static Device cpu() { return {}; }
  static Device cuda(int index = 0) { return {DeviceKind::kCuda, index}; }
  bool is_cpu() const { return kind == DeviceKind::kCpu; }

  /// "cpu", "cuda:0".
  std::string to_string() const;
  /// Parses "cpu", "cuda", "cuda:N" (and "gpu" as an alias of "cuda"). Throws
  /// std::invalid_argument with the accepted forms.
  static Device parse(std::string_view text);

  friend bool operator==(const Device&, const Device&) = default;
};

}  // namespace hdl
HDL_API_END
