// The index half of the JPEG decoder's region decodes through the entry-point index (private to
// decoders/jpeg/): everything before libjpeg reads the window.
//
// prepare_indexed_window decides whether a region decode goes through the file's index, and
// readies what libjpeg then decodes. It applies to a region (not the whole image) decoded at full
// scale with orientation 1, of a sequential Huffman file, 8-bit, 1 or 3 components in one scan,
// no restart interval (as the header libjpeg read says). It takes the file's index from the
// request's JpegIndexCache, or builds one (and stores it, or that the file cannot be indexed)
// when the window's MCUs are at most 0.9 of what the plain region decode would Huffman-decode or
// the request indexes every file, and budget is left. The window, widened by one pixel of chroma
// upsampling context, becomes whole MCUs; then either `entropy` is started on them and the
// window JPEG's header written to `window_jpeg` (`own`: JpegWindowEntropy decodes the Huffman
// codes), or the whole window JPEG is written there. Out: the window JPEG's place in the image.
// nullopt where the index does not apply, and where it applied but failed (the index's grid is
// not the header's, or the file's bytes do not match the index: counted in the cache as a
// fallback); the caller then decodes the file itself. `index` gets the index used: `entropy`
// reads it until libjpeg has read the window, so the caller holds it until then (the cache may
// not: past its budget it drops the index it was just given).
//
// Thread safety: one thread, as the decoder (`entropy` and `window_jpeg` are the caller's); the
// cache is thread-safe.
#pragma once

// clang-format off: jpeglib.h needs <cstdio> first.
#include <cstdio>
#include <jpeglib.h>
// clang-format on

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "decoders/decoder.h"
#include "decoders/detail/decode_window.h"
#include "decoders/jpeg/jpeg_window.h"
#include "decoders/jpeg/window_entropy.h"

namespace hdl::detail::jpeg {

// `cinfo`: the file's header, read by libjpeg; `window`: the request's, with request.index_cache
// set.
std::optional<JpegWindow> prepare_indexed_window(const jpeg_decompress_struct& cinfo, std::span<const uint8_t> data,
                                                 const DecodeRequest& request, const DecodeWindow& window, bool own,
                                                 JpegWindowEntropy& entropy, std::vector<uint8_t>& window_jpeg,
                                                 std::shared_ptr<const JpegScanIndex>& index);

}  // namespace hdl::detail::jpeg
