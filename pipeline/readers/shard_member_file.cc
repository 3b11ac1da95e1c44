#include "pipeline/readers/shard_member_file.h"

#include <algorithm>

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

Result<std::shared_ptr<const ShardMemberFileSystem::Members>> ShardMemberFileSystem::members_of(
    const std::string& shard) {
  {
    std::lock_guard lock(mu_);
    for (auto it = indexes_.begin(); it != indexes_.end(); ++it)
      if (it->first == shard) {
        indexes_.splice(indexes_.begin(), indexes_, it);
        return indexes_.front().second;
      }
  }
  std::string warning;  // a stale sidecar is rebuilt (and, by the policy, saved)
  HDL_ASSIGN_OR_RETURN(ShardIndex index, load_or_build_index(*inner_, shard, index_options_, &warning));
  auto members = std::make_shared<Members>();
  for (const IndexedSample& s : index.samples)
    for (const IndexedField& f : s.fields) (*members)[f.member_name] = {f.offset, f.size};
  std::lock_guard lock(mu_);
  indexes_.emplace_front(shard, members);
  if (indexes_.size() > kKeepIndexes) indexes_.pop_back();
  return std::shared_ptr<const Members>(members);
}

Result<std::unique_ptr<RandomAccessFile>> ShardMemberFileSystem::open(const std::string& path) {
  const size_t at = path.find(".tar/");
  if (at == std::string::npos) return inner_->open(path);
  const std::string shard = path.substr(0, at + 4), member = path.substr(at + 5);
  HDL_ASSIGN_OR_RETURN(std::shared_ptr<const Members> members, members_of(shard));
  const auto it = members->find(member);
  if (it == members->end())
    return Status::not_found("tar shard \"" + shard + "\" has no member \"" + member + "\" (of a sample)");
  HDL_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, inner_->open(shard));
  return file_window(std::shared_ptr<const RandomAccessFile>(std::move(file)), it->second.first, it->second.second);
}

}  // namespace hdl
