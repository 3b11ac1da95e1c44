#include "pipeline/readers/tar/shard_member_file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "pipeline/registry.h"

namespace hdl {
namespace {

class FileWindow final : public RandomAccessFile {
 public:
  FileWindow(std::shared_ptr<const RandomAccessFile> file, int64_t offset, int64_t size)
      : file_(std::move(file)), offset_(offset), size_(size) {}
  int64_t size() const override { return size_; }
  int64_t modified_ns() const override { return file_->modified_ns(); }
  Result<int64_t> read(int64_t offset, int64_t n, void* dst) const override {
    if (offset < 0 || n < 0) return Status::invalid_argument("negative offset or length");
    if (offset >= size_) return int64_t{0};
    return file_->read(offset_ + offset, std::min(n, size_ - offset), dst);
  }

 private:
  std::shared_ptr<const RandomAccessFile> file_;
  int64_t offset_, size_;
};

}  // namespace

std::unique_ptr<RandomAccessFile> file_window(std::shared_ptr<const RandomAccessFile> file, int64_t offset,
                                              int64_t size) {
  return std::make_unique<FileWindow>(std::move(file), offset, size);
}

ShardMemberFileSystem::ShardMemberFileSystem(std::shared_ptr<FileSystem> inner, IndexOptions index_options)
    : inner_(std::move(inner)), index_options_(index_options) {}

std::shared_ptr<FileSystem> shard_member_file_system(std::shared_ptr<FileSystem> inner) {
  return std::make_shared<ShardMemberFileSystem>(std::move(inner));
}

std::shared_ptr<const ShardMemberFileSystem::Members> ShardMemberFileSystem::cached(const std::string& shard) {
  std::lock_guard lock(mu_);
  for (auto it = indexes_.begin(); it != indexes_.end(); ++it)
    if (it->first == shard) {
      indexes_.splice(indexes_.begin(), indexes_, it);
      return indexes_.front().second;
    }
  return nullptr;
}

Result<std::shared_ptr<const ShardMemberFileSystem::Members>> ShardMemberFileSystem::members_of(
    const std::string& shard) {
  if (auto known = cached(shard)) return known;
  std::string warning;  // a stale sidecar is rebuilt (and, by the policy, saved)
  HDL_ASSIGN_OR_RETURN(ShardIndex index, load_or_build_index(*inner_, shard, index_options_, &warning));
  auto members = std::make_shared<Members>();
  for (const IndexedSample& s : index.samples)
    for (const IndexedField& f : s.fields) (*members)[f.member_name] = {f.offset, f.size};
  std::lock_guard lock(mu_);
  for (const auto& [name, known] : indexes_)  // another thread indexed it meanwhile: one entry per shard
    if (name == shard) return known;
  indexes_.emplace_front(shard, members);
  if (indexes_.size() > kKeepIndexes) indexes_.pop_back();
  return std::shared_ptr<const Members>(members);
}

Result<std::unique_ptr<RandomAccessFile>> ShardMemberFileSystem::member(const std::string& shard,
                                                                       const std::string& name,
                                                                       std::unique_ptr<RandomAccessFile> file) {
  HDL_ASSIGN_OR_RETURN(std::shared_ptr<const Members> members, members_of(shard));
  const auto it = members->find(name);
  if (it == members->end())
    return Status::not_found("tar shard \"" + shard + "\" has no member \"" + name + "\" (of a sample)");
  if (!file) {
    HDL_ASSIGN_OR_RETURN(file, inner_->open(shard));
  }
  member_opens_.fetch_add(1, std::memory_order_relaxed);
  return file_window(std::shared_ptr<const RandomAccessFile>(std::move(file)), it->second.first, it->second.second);
}

namespace {
// What a path under a regular file gives: ENOENT on some systems and stores, ENOTDIR (POSIX).
bool may_be_under_a_file(const Status& st) {
  return st.code() == StatusCode::kNotFound || st.message() == std::strerror(ENOTDIR);
}
}  // namespace

Result<std::unique_ptr<RandomAccessFile>> ShardMemberFileSystem::open(const std::string& path) {
  size_t at = path.find(".tar/");
  if (at == std::string::npos) return inner_->open(path);  // the fast path: one search, no lock
  // A shard already indexed: nothing else can lie under it.
  for (size_t a = at; a != std::string::npos; a = path.find(".tar/", a + 5))
    if (cached(path.substr(0, a + 4))) return member(path.substr(0, a + 4), path.substr(a + 5), nullptr);
  Result<std::unique_ptr<RandomAccessFile>> direct = inner_->open(path);
  if (direct.is_ok() || !may_be_under_a_file(direct.status())) return direct;
  // The first prefix ending in ".tar" that opens as a file is the shard (a folder named x.tar
  // does not open); none: the path's own error.
  for (int tries = 0; at != std::string::npos && tries < 8; at = path.find(".tar/", at + 5), ++tries) {
    const std::string shard = path.substr(0, at + 4);
    Result<std::unique_ptr<RandomAccessFile>> file = inner_->open(shard);
    if (file.is_ok()) return member(shard, path.substr(at + 5), std::move(file).value());
    if (file.status().code() != StatusCode::kNotFound && !may_be_under_a_file(file.status())) break;
  }
  return direct;
}

std::vector<std::pair<std::string, int64_t>> ShardMemberFileSystem::counters() const {
  std::vector<std::pair<std::string, int64_t>> c = inner_->counters();
  if (const int64_t n = member_opens_.load(std::memory_order_relaxed); n > 0) c.emplace_back("shard_member_opens", n);
  return c;
}

}  // namespace hdl
