// _C.probe_video, _C.decode_clip, _C.VideoInfo and _C.VideoMetadataCache: one video's metadata
// and frames, and the metadata cache file, for habana_dataloader.video.VideoList /
// VideoFolder (the datasets torch's DataLoader runs) and for tests.
//
// They decode with the pipeline's own VideoDecoder (decoders/video_decoder.h) over the real
// file system (with "<shard>.tar/<member>" paths read from tar shards, as the pipeline reads
// them), so a clip decoded here has the pixels video_reader gives, and the timeline
// (VideoInfo.timeline) is clip_sampler.cc's, so clip frame indices agree by construction.
// The GIL is released around every probe and decode. Bad data raises DataError (a
// RuntimeError, `.code` the status code) naming the file; bad arguments raise ValueError.
//
// Thread safety: every call makes its own decoder; a VideoInfo is an immutable value that
// calls on several threads may share.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>

#include "decoders/video_decoder.h"
#include "media/file_system.h"
#include "pipeline/decode/clip_sampler.h"
#include "pipeline/decode/video_metadata_cache.h"
#include "pipeline/errors.h"
#include "pipeline/readers/tar/shard_member_file.h"
#include "python/src/bindings.h"

namespace hdl::python {
namespace {

using InfoPtr = std::shared_ptr<VideoInfo>;  // treated as immutable (pybind11 holders are non-const)

[[noreturn]] void raise_data_error(const std::string& what, const std::string& path, const Status& st) {
  throw DataError(Status(st.code(), what + " \"" + path + "\": " + st.message()));
}

ColorFormat parse_output_type(const std::string& s) {
  if (s == "rgb") return ColorFormat::kRGB;
  if (s == "bgr") return ColorFormat::kBGR;
  if (s == "gray") return ColorFormat::kGray;
  throw ConfigError("output_type must be rgb, bgr or gray, got \"" + s + "\"");
}

// The real file system with members of tar shards as files ("<shard>.tar/<member>"), as the
// pipeline reads them (pipeline/readers/tar/shard_member_file.h).
Result<std::unique_ptr<RandomAccessFile>> open_file(const std::string& path) {
  static const std::shared_ptr<FileSystem> fs = std::make_shared<ShardMemberFileSystem>(posix_file_system());
  return fs->open(path);
}

// Opens `path` and returns read(file, decoder), run without the GIL; a failure raises DataError
// naming the file.
template <typename T, typename Read>
T read_video(const std::string& path, const Read& read) {
  Result<T> r = Status::internal("not read");
  {
    py::gil_scoped_release nogil;
    Result<std::unique_ptr<RandomAccessFile>> file = open_file(path);
    if (!file.is_ok()) {
      r = file.status();
    } else {
      VideoDecoder decoder;
      r = read(**file, decoder);
    }
  }
  if (!r.is_ok()) raise_data_error("probe_video", path, r.status());
  return std::move(r).value();
}

InfoPtr probe(const std::string& path) {
  return std::make_shared<VideoInfo>(
      read_video<VideoInfo>(path, [](const RandomAccessFile& f, VideoDecoder& d) { return d.probe(f); }));
}

py::dict info_to_dict(const VideoInfo& v) {
  py::dict d;
  d["frames"] = v.num_frames();
  d["fps"] = v.average_fps();
  d["duration"] = v.duration();
  d["width"] = v.display_width();  // as decoded with apply_rotation (the default)
  d["height"] = v.display_height();
  d["coded_width"] = v.width;
  d["coded_height"] = v.height;
  d["rotation"] = v.rotation;
  d["codec"] = v.codec;
  d["container"] = v.container;
  d["pixel_format"] = v.pixel_format;
  d["stream_index"] = v.stream_index;
  d["time_base"] = py::make_tuple(v.time_base_num, v.time_base_den);
  d["pts"] = v.pts;
  d["keyframes"] = v.keyframes;
  d["num_keyframes"] = static_cast<int64_t>(v.keyframes.size());
  d["sequential"] = v.sequential;
  return d;
}

/// The frame shown at each timeline position (clip_sampler.cc), as int64 numpy.
py::array_t<int64_t> timeline(const VideoInfo& v, double frame_rate) {
  if (frame_rate < 0) throw ConfigError("frame_rate must be >= 0 (0: the video's own frames)");
  const int64_t n = timeline_length(v, frame_rate);
  // Strides given explicitly: pybind11 2.10 reads the item size from a numpy 1 descriptor
  // layout, which numpy 2 changed (strides would come out 0).
  py::array_t<int64_t> out({py::ssize_t(n)}, {py::ssize_t(sizeof(int64_t))});
  int64_t* p = out.mutable_data();
  {
    py::gil_scoped_release nogil;
    for (int64_t j = 0; j < n; ++j) p[j] = timeline_frame(v, frame_rate, j);
  }
  return out;
}

// Frames in any order (repeats allowed): decoded once each in ascending order, each copied
// into every output slot that asked for it.
py::array decode_clip(const std::string& path, const std::vector<int64_t>& frames, const std::string& output_type,
                      bool apply_rotation, int threads, InfoPtr info) {
  VideoDecoderOptions o;
  o.color = parse_output_type(output_type);
  o.apply_rotation = apply_rotation;
  if (threads < 0 || threads > 64) throw ConfigError("threads must be in [0, 64], got " + std::to_string(threads));
  o.threads = threads;
  if (!info) info = probe(path);
  for (int64_t f : frames)
    if (f < 0 || f >= info->num_frames())
      throw ConfigError("decode_clip \"" + path + "\": frame " + std::to_string(f) + " is outside the video's " +
                        std::to_string(info->num_frames()) + " frames");
  const int64_t t = static_cast<int64_t>(frames.size()), c = color_channels(o.color);
  const int64_t h = apply_rotation ? info->display_height() : info->height;
  const int64_t w = apply_rotation ? info->display_width() : info->width;
  py::array_t<uint8_t> out({py::ssize_t(t), py::ssize_t(h), py::ssize_t(w), py::ssize_t(c)},
                           {py::ssize_t(h * w * c), py::ssize_t(w * c), py::ssize_t(c), py::ssize_t(1)});
  if (t == 0) return std::move(out);
  uint8_t* base = out.mutable_data();
  std::vector<int64_t> order(frames.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return frames[a] < frames[b]; });
  const bool sorted = std::is_sorted(frames.begin(), frames.end());
  Status st;
  {
    py::gil_scoped_release nogil;
    Result<std::unique_ptr<RandomAccessFile>> file = open_file(path);
    if (!file.is_ok()) {
      st = file.status();
    } else if (sorted) {
      VideoDecoder decoder(o);
      st = decoder.decode_into(**file, *info, frames, TensorView(base, Shape{t, h, w, c}, DType::kU8, Layout::kFHWC));
    } else {
      std::vector<int64_t> ascending(frames.size());
      for (size_t k = 0; k < order.size(); ++k) ascending[k] = frames[order[k]];
      const size_t frame_bytes = static_cast<size_t>(h * w * c);
      VideoDecoder decoder(o);
      st = decoder.decode(**file, *info, ascending, [&](int64_t k, const ConstTensorView& frame) -> Status {
        TensorView dst(base + order[k] * frame_bytes, Shape{h, w, c}, DType::kU8, Layout::kHWC);
        copy(frame, dst);
        return Status::ok();
      });
    }
  }
  if (!st.is_ok()) raise_data_error("decode_clip", path, st);
  return std::move(out);
}

/// _C.VideoMetadataCache: the native reader's metadata cache file for Python's VideoList, so
/// that the two read and write the same file (and video_reader does not probe what VideoList
/// probed). Thread-safe: video_info may be called from several threads (the GIL is released
/// around the stamp and the probe).
class PyMetadataCache {
 public:
  explicit PyMetadataCache(const std::string& path) {
    std::string note;
    cache_ = VideoMetadataCache::load(path, &note);
    note_ = note;
  }

  InfoPtr video_info(const std::string& key, const std::string& path) {
    bool probed = false;
    VideoMetadataCache::Info info = read_video<VideoMetadataCache::Info>(
        path, [&](const RandomAccessFile& f, VideoDecoder& d) { return cache_->get_or_probe(key, f, d, &probed); });
    if (probed) probes_.fetch_add(1, std::memory_order_relaxed);
    return std::const_pointer_cast<VideoInfo>(info);
  }

  void save() {
    Status st;
    {
      py::gil_scoped_release nogil;
      st = cache_->save();
    }
    if (!st.is_ok()) throw DataError(st);
  }

  const VideoMetadataCache& cache() const { return *cache_; }
  const std::string& note() const { return note_; }
  int64_t probes() const { return probes_.load(std::memory_order_relaxed); }

 private:
  std::unique_ptr<VideoMetadataCache> cache_;
  std::string note_;
  std::atomic<int64_t> probes_{0};
};

}  // namespace

void bind_video(py::module_& m) {
  py::class_<VideoInfo, InfoPtr>(m, "VideoInfo",
                                 "One video's metadata as probe_video_info found it (immutable; cheap to share).")
      .def_property_readonly("frames", &VideoInfo::num_frames)
      .def_property_readonly("fps", &VideoInfo::average_fps)
      .def_property_readonly("duration", &VideoInfo::duration)
      .def_property_readonly("width", &VideoInfo::display_width)
      .def_property_readonly("height", &VideoInfo::display_height)
      .def_property_readonly("rotation", [](const VideoInfo& v) { return v.rotation; })
      .def_property_readonly("codec", [](const VideoInfo& v) { return v.codec; })
      .def("to_dict", &info_to_dict, "probe_video's dict.")
      .def("timeline", &timeline, py::arg("frame_rate") = 0.0,
           "The frame index shown at each timeline position (int64 numpy): every frame for frame_rate 0, "
           "else floor(duration * frame_rate) instants 1/frame_rate apart, each the last frame shown at or "
           "before it (pipeline/decode/clip_sampler.h). A clip starting at position s is "
           "timeline[s + t * step] for t < frames_per_clip.")
      .def("segment_range", [](const VideoInfo& v, double frame_rate, double start, const py::object& end) {
        if (frame_rate < 0) throw ConfigError("frame_rate must be >= 0 (0: the video's own frames)");
        const Segment seg{start, end.is_none() ? std::numeric_limits<double>::infinity() : end.cast<double>()};
        const Result<TimelineRange> r = segment_range(v, frame_rate, seg);
        if (!r.is_ok()) throw DataError(r.status());
        return py::make_tuple(r->begin, r->end);
      }, py::arg("frame_rate"), py::arg("start"), py::arg("end"),
           "(begin, end): the timeline positions (of timeline(frame_rate)) whose time, in seconds from the first "
           "frame, lies in [start, end) (end None: the video's end), as video_reader's segments "
           "(pipeline/decode/clip_sampler.h). A bad segment (end not after start, negative start, starting at or "
           "past the video's end, no position inside) raises DataError saying why.")
      .def("__repr__", [](const VideoInfo& v) {
        return "<VideoInfo " + v.codec + " " + std::to_string(v.display_width()) + "x" +
               std::to_string(v.display_height()) + ", " + std::to_string(v.num_frames()) + " frames>";
      });
  py::class_<PyMetadataCache>(m, "VideoMetadataCache",
                              "video_reader's metadata cache file (pipeline/decode/video_metadata_cache.h): "
                              "every video's VideoInfo keyed by its path relative to the dataset's root, valid "
                              "while the file's size, mtime and a hash of its first and last 64 KiB hold.")
      .def(py::init<const std::string&>(), py::arg("path"),
           "Reads `path` (missing or empty: an empty cache; corrupt or another version: empty, with `note` "
           "saying so). ValueError when the file is not a metadata cache (it would be overwritten).")
      .def("video_info", &PyMetadataCache::video_info, py::arg("key"), py::arg("path"),
           "The VideoInfo of the video at `path` cached as `key`: the entry when its stamp still holds, else "
           "probed (counted in `probes`) and kept until save(). DataError names the file.")
      .def("save", &PyMetadataCache::save,
           "Writes every entry: a temporary file, flushed, renamed over the cache. DataError (code 'I/O error') "
           "names the file and the reason.")
      .def_property_readonly("path", [](const PyMetadataCache& c) { return c.cache().path(); })
      .def_property_readonly("note", &PyMetadataCache::note, "why the file was not used ('' when it was)")
      .def_property_readonly("changed", [](const PyMetadataCache& c) { return c.cache().changed(); })
      .def_property_readonly("hits", [](const PyMetadataCache& c) { return c.cache().hits(); })
      .def_property_readonly("misses", [](const PyMetadataCache& c) { return c.cache().misses(); })
      .def_property_readonly("probes", &PyMetadataCache::probes)
      .def("__len__", [](const PyMetadataCache& c) { return c.cache().size(); });
  m.def("describe_segment", [](double start, const py::object& end) {
    return describe_segment({start, end.is_none() ? std::numeric_limits<double>::infinity() : end.cast<double>()});
  }, py::arg("start"), py::arg("end"), "'[1.5 s, 4 s)' or '[1.5 s, end)', as video_reader's messages name a segment.");
  m.def("probe_video_info", &probe, py::arg("path"),
        "A video's metadata as a VideoInfo (demuxes every packet, decodes nothing). DataError names the file.");
  m.def("probe_video", [](const std::string& path) { return info_to_dict(*probe(path)); }, py::arg("path"),
        "A video's metadata: frames, fps (average), duration (s), width, height (displayed, after rotation), "
        "coded_width, coded_height, rotation, codec, container, pixel_format, stream_index, time_base (num, "
        "den), pts (every frame's, presentation order), keyframes (frame indices), num_keyframes, "
        "sequential. Bad data raises DataError (a RuntimeError) naming the file.");
  m.def("decode_clip", &decode_clip, py::arg("path"), py::arg("frames"), py::arg("output_type") = "rgb",
        py::arg("apply_rotation") = true, py::arg("threads") = 1, py::arg("info") = nullptr,
        "Frames `frames` (indices in presentation order, any order, repeats allowed) of the video at `path` "
        "as a uint8 numpy array [T, H, W, C] (C = 3 for rgb / bgr, 1 for gray), the pixels video_reader "
        "decodes (FFmpeg; `ffmpeg -i F -f rawvideo -pix_fmt rgb24` equal). `info`: the file's VideoInfo, "
        "to skip probing it again. An index outside the video raises ValueError; bad data DataError; both "
        "name the file.");
}

}  // namespace hdl::python
