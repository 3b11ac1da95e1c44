#include "media/device.h"

#include <charconv>
#include <stdexcept>

namespace hdl {

std::string Device::to_string() const {
  if (kind == DeviceKind::kCpu) return "cpu";
  return "cuda:" + std::to_string(index);
}

Device Device::parse(std::string_view text) {
  if (text == "cpu") return cpu();
  std::string_view rest;
  if (text.starts_with("cuda")) rest = text.substr(4);
  else if (text.starts_with("gpu")) rest = text.substr(3);
  else throw std::invalid_argument("unknown device \"" + std::string(text) +
                                   "\" (expected \"cpu\", \"cuda\" or \"cuda:N\")");
  if (rest.empty()) return cuda(0);
  int index = -1;
  if (rest[0] == ':') {
    auto [p, ec] = std::from_chars(rest.data() + 1, rest.data() + rest.size(), index);
    if (ec == std::errc() && p == rest.data() + rest.size() && index >= 0) return cuda(index);
  }
  throw std::invalid_argument("bad device index in \"" + std::string(text) + "\"");
}

}  // namespace hdl
