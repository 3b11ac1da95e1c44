// A member of a plain tar shard as a file of its own: "<shard>.tar/<member name>" opens a
// window onto the member's data inside the shard, so that a reader that seeks (the video
// decoder, through RandomAccessFile) reads a video stored in a shard as it reads one on disk,
// one pread per read, no copy.
//
// The path form is unambiguous: nothing can lie under a regular file, so "a.tar/x.mp4" cannot
// also name a real file. ShardMemberFileSystem decorates another file system, and the pipeline
// puts it over its default one (pipeline/detail/executor.cc), as do the Python bindings'
// decode_clip / probe_video, so a member path works wherever a file path does:
// - a path without ".tar/" goes to the inner file system unchanged (one substring search: local
//   files pay nothing else);
// - a path under a shard already indexed here opens the member at once;
// - any other path containing ".tar/" is first opened as it is; only when that fails with
//   kNotFound or "Not a directory" (what a path under a regular file gives) is the first prefix
//   ending in ".tar" that opens as a file taken as the shard: the member is found by its full
//   name in the shard's index (load_or_build_index: its `.idx` sidecar, else built from the
//   headers and, by the policy given, saved, so no open scans the shard) and a window onto it
//   returned. When no prefix opens, the path's own error is returned.
// The indexes of the last 64 shards used are kept. counters(): the inner one's, and
// "shard_member_opens" once a member was opened.
//
// Thread safety: ShardMemberFileSystem is thread-safe; a window is a RandomAccessFile (its
// read() is a pread on the shard, safe from any thread).
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "media/api.h"
#include "media/file_system.h"
#include "pipeline/readers/tar/shard_index.h"

HDL_API_BEGIN
namespace hdl {

/// The bytes [offset, offset + size) of `file` as a file of `size` bytes (modified_ns: the
/// file's). Reads past its end return 0.
std::unique_ptr<RandomAccessFile> file_window(std::shared_ptr<const RandomAccessFile> file, int64_t offset,
                                              int64_t size);

class ShardMemberFileSystem final : public FileSystem {
 public:
  static constexpr size_t kKeepIndexes = 64;

  explicit ShardMemberFileSystem(std::shared_ptr<FileSystem> inner, IndexOptions index_options = {});

  /// "<shard>.tar/<member>": the member's window (kNotFound naming shard and member when the
  /// shard has no such member; the shard's index errors when it is not a valid tar); any other
  /// path, or one whose prefixes are no file: inner's (its own error).
  Result<std::unique_ptr<RandomAccessFile>> open(const std::string& path) override;
  std::vector<std::pair<std::string, int64_t>> counters() const override;

 private:
  // Member name -> (data offset, size) of one shard.
  using Members = std::unordered_map<std::string, std::pair<int64_t, int64_t>>;
  std::shared_ptr<const Members> cached(const std::string& shard);  // null when not indexed here
  Result<std::shared_ptr<const Members>> members_of(const std::string& shard);
  // The member `name` of `shard` (`file`: the shard, open; null: opened here).
  Result<std::unique_ptr<RandomAccessFile>> member(const std::string& shard, const std::string& name,
                                                   std::unique_ptr<RandomAccessFile> file);

  std::shared_ptr<FileSystem> inner_;
  IndexOptions index_options_;
  std::mutex mu_;
  std::list<std::pair<std::string, std::shared_ptr<const Members>>> indexes_;  // most recent first
  std::atomic<int64_t> member_opens_{0};
};

}  // namespace hdl
HDL_API_END
