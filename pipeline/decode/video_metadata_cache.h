// Video metadata cache: every video's VideoInfo (frame timestamps, keyframes, size, rotation) in
// one file on disk, so that a second run starts without demuxing its videos again.
//
// Entries are keyed by the video's path relative to the dataset's root (so a tree that moves
// keeps its cache) and validated by the file's stamp: its size, its modification time and a
// hash of its first and last 64 KiB. An entry whose stamp differs is a miss: the video is
// probed again and the entry replaced.
//
// File format (little-endian; version 1), compact and bounds-checked when read (it is
// untrusted input: tests/fuzz/fuzz_video_metadata.cc):
//   header   "HDLVMETA", u32 version, u32 flags (0), u64 entry count
//   entry    varint key length, key bytes; varint size, zigzag varint mtime (ns), u64
//            fingerprint; varint payload length, then the payload: container, codec and pixel
//            format (varint length + bytes each), varints stream index, width, height,
//            rotation, time base num and den, u8 flags (1: sequential), varint last frame
//            duration, varint frame count, zigzag first pts then the (positive) pts deltas,
//            varint keyframe count, the first keyframe then the (positive) deltas
//   trailer  u64 checksum of everything before it
// Varints are LEB128 in their shortest form (anything else is corrupt), so a file that parses
// re-encodes to the same bytes.
//
// Saving writes a temporary file next to the cache (its name has the process id and a random
// part), flushes it to disk and renames it over the cache: a crash leaves the old cache, and
// several processes saving at once (DDP ranks sharing one file) each replace it whole, the
// last one winning. A missing or empty file is an empty cache; a corrupt file, or one of
// another format version, is an empty cache with a note for the caller to warn once; a file
// that is not a cache at all (another magic) is refused rather than overwritten.
//
// Thread safety: VideoMetadataCache's find, put and get_or_probe may be called concurrently;
// load, save and the free functions are pure or touch only their own files.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "decoders/video_decoder.h"
#include "media/api.h"
#include "media/status.h"

HDL_API_BEGIN
namespace hdl {

class RandomAccessFile;  // media/file_system.h

/// What identifies a file's bytes for the cache.
struct FileStamp {
  int64_t size = 0;
  int64_t modified_ns = 0;  ///< 0: the file system does not say
  uint64_t fingerprint = 0; ///< hash of the size and the first and last kStampBytes bytes
  friend bool operator==(const FileStamp&, const FileStamp&) = default;
};

/// Bytes hashed at each end of a file for its stamp.
constexpr int64_t kStampBytes = int64_t(64) << 10;

/// The file's stamp: size and modification time as opened, and the hash of its first and last
/// kStampBytes (the whole file when it is smaller). Errors: the file's read errors.
Result<FileStamp> stamp_file(const RandomAccessFile& file);

/// One cached video.
struct VideoMetadataEntry {
  std::string key;  ///< path relative to the dataset's root
  FileStamp stamp;
  VideoInfo info;
};

/// The file format's version; a file of another version is rebuilt.
constexpr uint32_t kVideoMetadataVersion = 1;

/// The file's bytes for `entries` (each info as probe() makes them: see parse for the rules).
std::string encode_video_metadata(std::span<const VideoMetadataEntry* const> entries);

/// The checksum a cache file's trailer holds for the bytes before it (exposed so that the
/// fuzz target can fix it up and reach the entries).
uint64_t video_metadata_checksum(std::span<const uint8_t> bytes);

/// Parses a cache file's bytes. Every field is bounds-checked and every VideoInfo must be one
/// probe() could make: at least one frame, strictly ascending timestamps and keyframe indices
/// (at least one, all below the frame count), positive sizes and time base, a rotation of 0,
/// 90, 180 or 270, strings of at most 256 bytes, keys of 1 to 4095 bytes. Errors:
/// kInvalidArgument when the bytes do not start with the magic (not a cache file),
/// kUnsupported for another version (the message names it), kInvalidData for anything
/// corrupt or truncated (the message says what and where).
Result<std::vector<VideoMetadataEntry>> parse_video_metadata(std::span<const uint8_t> bytes);

class VideoMetadataCache {
 public:
  using Info = std::shared_ptr<const VideoInfo>;

  /// An empty cache that saves to `path`.
  explicit VideoMetadataCache(std::string path);
  /// The cache in `path`: empty when the file is missing or empty; empty with `*note` set
  /// (e.g. "corrupt (checksum mismatch); rebuilding it") when it is corrupt or of another
  /// version. Throws ConfigError when the path is a folder, or the file exists but cannot be
  /// read, or is not a video metadata cache (it would be overwritten).
  static std::unique_ptr<VideoMetadataCache> load(const std::string& path, std::string* note);

  const std::string& path() const { return path_; }

  /// The entry for `key` when its stamp is `stamp` (counted as a hit), else null (a miss).
  Info find(const std::string& key, const FileStamp& stamp);
  /// Keeps `info` for `key` (replacing any entry) until save().
  void put(const std::string& key, const FileStamp& stamp, Info info);
  /// A video's metadata: stamps `file`, returns the entry when it is valid and within the
  /// decoder's max_frame_pixels, else probes with `decoder` and keeps the result. `*probed`
  /// says whether it probed. Errors: the stamp's read errors, the probe's errors.
  Result<Info> get_or_probe(const std::string& key, const RandomAccessFile& file, VideoDecoder& decoder,
                            bool* probed = nullptr);

  /// True when put() changed something since load.
  bool changed() const;
  /// Writes every entry (those loaded and those put) to path(): a temporary file, flushed,
  /// renamed over it. Errors: kIoError naming the file and the system's words.
  Status save() const;

  int64_t hits() const { return hits_.load(std::memory_order_relaxed); }
  int64_t misses() const { return misses_.load(std::memory_order_relaxed); }
  int64_t size() const;

 private:
  struct Entry {
    FileStamp stamp;
    Info info;
  };
  std::string path_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
  bool changed_ = false;
  std::atomic<int64_t> hits_{0}, misses_{0};
};

}  // namespace hdl
HDL_API_END
