#include "media/shape.h"

namespace hdl {

Shape Shape::prepend(int64_t outer) const {
  Shape s;
  s.push_back(outer);
  for (int i = 0; i < n_; ++i) s.push_back(d_[i]);
  return s;
}

Shape Shape::drop_front() const {
  Shape s;
  for (int i = 1; i < n_; ++i) s.push_back(d_[i]);
  return s;
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (int i = 0; i < n_; ++i) {
    if (i) s += ", ";
    s += d_[i] < 0 ? std::string("?") : std::to_string(d_[i]);
  }
  return s + "]";
}

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::kNone: return "";
    case Layout::kHWC: return "HWC";
    case Layout::kCHW: return "CHW";
    case Layout::kFHWC: return "FHWC";
    case Layout::kFCHW: return "FCHW";
    case Layout::kCFHW: return "CFHW";
  }
  return "?";
}

int layout_ndim(Layout l) {
  switch (l) {
    case Layout::kNone: return 0;
    case Layout::kHWC: case Layout::kCHW: return 3;
    case Layout::kFHWC: case Layout::kFCHW: case Layout::kCFHW: return 4;
  }
  return 0;
}

}  // namespace hdl
