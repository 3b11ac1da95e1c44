// Probing a video (VideoDecoder::probe; private to decoders/).
//
// One job: a VideoInfo from demuxing. The first video stream that is not a cover picture is
// chosen; every packet of it is read (no decoding, but for the first frame, whose size and
// pixel format are the decoder's: the ffmpeg CLI sizes its output by it), and frames are
// numbered in presentation order from the packets' timestamps, with keyframes from the packet
// flags (VideoInfo's contract, decoders/video_decoder.h). Packets marked discard (before an MP4
// edit list's start) are not frames. The display matrix gives the rotation as the CLI's
// autorotate reads it.
//
// Thread safety: functions of their arguments; one thread per packet and frame.
#pragma once

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
}

#include <cstdint>

#include "decoders/video_decoder.h"
#include "media/file_system.h"
#include "media/status.h"

namespace hdl::detail::video {

/// Reads `file`'s container and demuxes its first video stream's packets: kInvalidData (not a
/// video, no video stream, no frames, corrupt container), kUnsupported (no decoder for the
/// codec), kResourceExhausted (frames over `max_frame_pixels`), I/O errors. `packet` and
/// `frame` are the caller's to reuse (left unreferenced).
Result<VideoInfo> probe_video(const RandomAccessFile& file, int64_t max_frame_pixels, AVPacket* packet, AVFrame* frame);

/// The first video stream that is not a cover picture, or -1.
int first_video_stream(const AVFormatContext* fmt);

/// Makes the demuxer drop every stream but `index`.
void discard_all_but(AVFormatContext* fmt, int index);

}  // namespace hdl::detail::video
