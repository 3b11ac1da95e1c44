#include "decoders/decoder_set.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace hdl {
namespace {

Status unknown_format(std::span<const uint8_t> data) {
  if (data.empty()) return Status::invalid_data("empty input (0 bytes): not an image");
  std::string hex;
  for (size_t i = 0; i < std::min<size_t>(4, data.size()); ++i) {
    char buf[4];
    std::snprintf(buf, sizeof(buf), i ? " %02x" : "%02x", data[i]);
    hex += buf;
  }
  return Status::unsupported("unknown image format (first bytes " + hex + ")");
}

void add_reason(std::string* reasons, const std::string& name, const Status& s) {
  if (!reasons->empty()) *reasons += "; ";
  *reasons += name + ": " + s.message();
}

}  // namespace

DecoderSet::DecoderSet(const DecoderRegistry& registry) : registry_(registry) {
  const auto& entries = registry_.entries();
  for (size_t i = 0; i < entries.size(); ++i) {
    size_t slot = i;
    for (size_t j = 0; j < i; ++j)
      if (entries[j].name == entries[i].name) slot = slot_of_entry_[j];
    slot_of_entry_.push_back(slot);
  }
  slots_.resize(entries.size());
}

DecoderSet::~DecoderSet() = default;

ImageDecoder& DecoderSet::decoder(size_t index) {
  std::unique_ptr<ImageDecoder>& d = slots_[slot_of_entry_.at(index)];
  if (!d) d = registry_.entries()[index].create();
  return *d;
}

template <typename T, typename Attempt>
Result<T> DecoderSet::first_supported(std::span<const uint8_t> data, Attempt&& attempt) {
  const auto& entries = registry_.entries();
  std::string reasons;
  bool recognised = false;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (!entries[i].probe(data)) continue;
    recognised = true;
    Result<T> r = attempt(decoder(i));
    if (r.is_ok()) return r;
    if (r.status().code() != StatusCode::kUnsupported) {
      Status s = r.status().with_context(entries[i].name);
      if (reasons.empty()) return s;  // the common case: no allocation beyond the message
      return Status(s.code(), s.message() + " (after " + reasons + ")");
    }
    add_reason(&reasons, entries[i].name, r.status());
  }
  if (!recognised) return unknown_format(data);
  return Status::unsupported(reasons);
}

Result<ImageInfo> DecoderSet::read_info(std::span<const uint8_t> data) {
  return first_supported<ImageInfo>(data, [&](ImageDecoder& d) { return d.read_info(data); });
}

Result<Shape> DecoderSet::output_shape(std::span<const uint8_t> data, const DecodeRequest& request) {
  return first_supported<Shape>(data, [&](ImageDecoder& d) -> Result<Shape> {
    HDL_ASSIGN_OR_RETURN(ImageInfo info, d.read_info(data));
    return d.output_shape(info, request);
  });
}

Result<DecodeReport> DecoderSet::decode(std::span<const uint8_t> data, const DecodeRequest& request,
                                        const TensorView& out) {
  bool fallback = false;
  return first_supported<DecodeReport>(data, [&](ImageDecoder& d) -> Result<DecodeReport> {
    if (fallback) {
      // A fallback decoder must write the shape the caller allocated from output_shape().
      HDL_ASSIGN_OR_RETURN(ImageInfo info, d.read_info(data));
      HDL_ASSIGN_OR_RETURN(Shape shape, d.output_shape(info, request));
      if (shape != out.shape)
        return Status::unsupported("would decode to " + shape.to_string() + ", not the " +
                                   out.shape.to_string() + " asked for");
    }
    fallback = true;
    return d.decode(data, request, out);
  });
}

}  // namespace hdl
