// libjpeg's error callbacks for the JPEG decoder (decoders/jpeg/detail/libjpeg_errors.h).
#include "decoders/jpeg/detail/libjpeg_errors.h"

#include <jerror.h>

#include <cstring>

namespace hdl::detail::jpeg {
namespace {

ErrorState* state(j_common_ptr cinfo) { return reinterpret_cast<ErrorState*>(cinfo->err); }

// Warnings after which part of the image is grey or garbage rather than what was encoded.
bool loses_data(int code) {
  switch (code) {
    case JWRN_HIT_MARKER: case JWRN_JPEG_EOF: case JWRN_HUFF_BAD_CODE: case JWRN_MUST_RESYNC:
    case JWRN_NOT_SEQUENTIAL: case JWRN_BOGUS_PROGRESSION: case JWRN_ARITH_BAD_CODE:
      return true;
    default:
      return false;
  }
}

}  // namespace

void on_error_exit(j_common_ptr cinfo) {
  ErrorState* s = state(cinfo);
  s->code = s->pub.msg_code;
  (*s->pub.format_message)(cinfo, s->message);
  longjmp(s->jump, 1);
}

void on_emit_message(j_common_ptr cinfo, int level) {
  if (level >= 0) return;  // trace messages
  ErrorState* s = state(cinfo);
  bool lost = loses_data(s->pub.msg_code);
  if (s->warnings++ == 0 || (lost && !s->data_lost)) (*s->pub.format_message)(cinfo, s->warning);
  s->data_lost |= lost;
  ++s->pub.num_warnings;
}

void on_output_message(j_common_ptr) {}

void on_progress(j_common_ptr cinfo) {
  auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
  ErrorState* s = state(cinfo);
  if (s->max_scans > 0 && d->input_scan_number > s->max_scans) {
    std::snprintf(s->message, sizeof(s->message), "too many scans: more than max_scans (%d)", s->max_scans);
    s->code = JMSG_LASTMSGCODE;
    s->over_limit = true;
    longjmp(s->jump, 1);
  }
}

bool is_unsupported(int code) {
  switch (code) {
    case JERR_BAD_PRECISION: case JERR_SOF_UNSUPPORTED: case JERR_NOT_COMPILED:
    case JERR_ARITH_NOTIMPL: case JERR_CONVERSION_NOTIMPL: case JERR_NOTIMPL:
      return true;
    default:
      return false;
  }
}

Decompressor::Decompressor() {
  std::memset(&cinfo, 0, sizeof(cinfo));
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = on_error_exit;
  err.pub.emit_message = on_emit_message;
  err.pub.output_message = on_output_message;
  err.reset();
  progress.progress_monitor = on_progress;  // (hooked to each fresh decompressor by read_header)
}

Decompressor::~Decompressor() {
  if (created) jpeg_destroy_decompress(&cinfo);
}

bool Decompressor::read_header(std::span<const uint8_t> data) {
  err.reset();
  if (setjmp(err.jump)) {
    if (created) jpeg_abort_decompress(&cinfo);
    return false;
  }
  if (created) jpeg_destroy_decompress(&cinfo);
  created = false;
  jpeg_create_decompress(&cinfo);  // longjmps on out of memory: created stays false
  cinfo.progress = &progress;
  created = true;
  jpeg_mem_src(&cinfo, data.data(), static_cast<unsigned long>(data.size()));
  jpeg_read_header(&cinfo, TRUE);
  return true;
}

Status Decompressor::error_status() const {
  if (is_unsupported(err.code)) return Status::unsupported(err.message);
  if (err.code == JERR_OUT_OF_MEMORY || err.over_limit) return Status::resource_exhausted(err.message);
  return Status::invalid_data(err.message);
}

}  // namespace hdl::detail::jpeg
