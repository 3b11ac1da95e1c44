// libjpeg's error manager for the JPEG decoder (private to decoders/jpeg/).
//
// libjpeg reports through callbacks. on_error_exit records the error (its text and message code)
// and longjmps to the setjmp of the decoder method that called into libjpeg; it never returns,
// prints or calls exit(). on_emit_message records warnings (the first, or the first that lost
// data: grey or garbage where pixels were encoded) and drops trace messages; on_output_message
// prints nothing. on_progress, libjpeg's progress monitor, ends a decode with "too many scans:
// more than max_scans (N)" (over_limit) once a scan past the request's max_scans has been read,
// before its entropy data is decoded. is_unsupported says which libjpeg errors mean "valid but
// not decodable here" (kUnsupported, so the registry falls back to FFmpeg). In: libjpeg's
// callbacks; out: an ErrorState the decoder turns into a Status or a DecodeReport. Decompressor
// is a libjpeg decompressor with all of it hooked up, made fresh for each file; the JPEG decoder
// and the hybrid decoder's Huffman half (decoders/jpeg/hybrid_jpeg.cc) each keep one.
//
// Thread safety: an ErrorState belongs to one decompressor, used by one thread.
#pragma once

// clang-format off: jpeglib.h needs <cstdio> first.
#include <csetjmp>
#include <cstdio>
#include <jpeglib.h>
// clang-format on

#include <cstdint>
#include <span>

#include "media/status.h"

namespace hdl::detail::jpeg {

// libjpeg reports errors through callbacks. error_exit must not return, so it longjmps back to
// the setjmp in the JpegDecoder method that called into libjpeg; warnings (corrupt or missing
// data, which libjpeg papers over with grey) are recorded here and judged after the decode.
// Nothing is ever printed and exit() is never called.
struct ErrorState {
  jpeg_error_mgr pub;  // first: libjpeg casts cinfo->err to it
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];  // the error that ended the call
  int code = 0;                   // its libjpeg message code
  char warning[JMSG_LENGTH_MAX];  // the first warning, or the first one that lost data
  bool data_lost = false;
  int warnings = 0;
  int max_scans = 0;       // of the request being decoded; 0: no limit
  bool over_limit = false; // the error is a limit of the request (kResourceExhausted)

  void reset() {
    message[0] = warning[0] = '\0';
    code = 0;
    over_limit = false;
    data_lost = false;
    warnings = 0;
    pub.num_warnings = 0;
  }
};

void on_error_exit(j_common_ptr cinfo);
void on_emit_message(j_common_ptr cinfo, int level);
void on_output_message(j_common_ptr cinfo);

// Called by libjpeg once per iMCU row it absorbs (jpeg_start_decompress reads every scan of a
// multi-scan file before the first row comes out) and once per output row: a scan is counted
// when its SOS marker has been read, before its entropy data is decoded.
void on_progress(j_common_ptr cinfo);

// True for libjpeg errors that mean a valid file this build cannot decode (12-bit, lossless,
// unsupported conversions): kUnsupported.
bool is_unsupported(int code);

// A libjpeg decompressor with the callbacks above. read_header parses a file's header with a
// fresh decompressor: false on a libjpeg error (err says which; error_status() turns it into a
// Status). Fresh, because libjpeg keeps quantisation and Huffman tables across images on one
// decompressor (for abbreviated streams): a file lacking a table would otherwise decode with
// the tables of whatever this thread decoded before, where a fresh decoder refuses it (or uses
// the standard Huffman tables), so the outcome would depend on the thread's history (found by
// fuzz_jpeg_index; tests/fuzz/regressions/fuzz_jpeg_decoder/reused_*). Creating a
// decompressor costs about 0.13 us. cinfo.client_data survives it (jpeg_create_decompress
// keeps it).
struct Decompressor {
  jpeg_decompress_struct cinfo;
  ErrorState err;
  jpeg_progress_mgr progress{};
  bool created = false;

  Decompressor();
  ~Decompressor();
  Decompressor(const Decompressor&) = delete;
  Decompressor& operator=(const Decompressor&) = delete;

  bool read_header(std::span<const uint8_t> data);
  // kUnsupported (is_unsupported), kResourceExhausted (out of memory, a request's limit) or
  // kInvalidData, with libjpeg's message.
  Status error_status() const;
};

}  // namespace hdl::detail::jpeg
