#include "pipeline/readers/tar/tar_stream.h"

#include <archive.h>
#include <archive_entry.h>

#include <algorithm>
#include <cctype>

#include "media/url_file_system.h"

namespace hdl {
namespace {

bool ends_with_ci(std::string_view s, std::string_view suffix) {
  if (s.size() < suffix.size()) return false;
  for (size_t i = 0; i < suffix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[s.size() - suffix.size() + i])) != suffix[i])
      return false;
  return true;
}

class PlainMemberStream : public MemberStream {
 public:
  PlainMemberStream(std::unique_ptr<ByteSource> source, std::string shard, const TarLimits& limits)
      : source_(std::move(source)), reader_(*source_, std::move(shard), limits), limits_(limits) {}
  Result<const TarMember*> next() override { return reader_.next(); }
  Status read_data(void* dst) override { return reader_.read_data(dst); }
  const TarLimits& limits() const override { return limits_; }

 private:
  std::unique_ptr<ByteSource> source_;
  TarReader reader_;
  TarLimits limits_;
};

// libarchive reading from our ByteSource through its read callback.
class ArchiveMemberStream : public MemberStream {
 public:
  ArchiveMemberStream(std::unique_ptr<ByteSource> source, std::string shard, const TarLimits& limits)
      : source_(std::move(source)), shard_(std::move(shard)), limits_(limits), buffer_(1 << 16) {
    a_ = archive_read_new();
    archive_read_support_filter_all(a_);
    archive_read_support_format_tar(a_);
    archive_read_support_format_empty(a_);
    if (archive_read_open(a_, this, nullptr, &ArchiveMemberStream::read_cb, nullptr) != ARCHIVE_OK)
      (void)fail_archive(-1);
  }
  ~ArchiveMemberStream() override { archive_read_free(a_); }
  const TarLimits& limits() const override { return limits_; }

  Result<const TarMember*> next() override {
    for (;;) {
      if (done_) {
        if (!error_.is_ok()) return error_;
        return static_cast<const TarMember*>(nullptr);
      }
      archive_entry* e = nullptr;
      int rc = archive_read_next_header(a_, &e);
      if (rc == ARCHIVE_EOF) {
        done_ = true;
        continue;
      }
      if (rc < ARCHIVE_WARN) return fail_archive(-1);
      data_read_ = false;
      if (archive_entry_filetype(e) != AE_IFREG || archive_entry_hardlink(e) != nullptr) continue;
      const char* name = archive_entry_pathname(e);
      member_.name = name ? name : "";
      member_.size = archive_entry_size_is_set(e) ? archive_entry_size(e) : 0;
      member_.header_offset = archive_read_header_position(a_);  // in the decompressed tar
      member_.data_offset = -1;
      if (member_.size < 0 || member_.size > limits_.max_member_bytes)
        return fail(tar_error(StatusCode::kResourceExhausted, shard_, key_of(member_.name), -1,
                              "tar member of " + std::to_string(member_.size) +
                                  " bytes is over the limit of " +
                                  std::to_string(limits_.max_member_bytes) +
                                  " (TarLimits::max_member_bytes)"));
      return static_cast<const TarMember*>(&member_);
    }
  }

  Status read_data(void* dst) override {
    if (!error_.is_ok()) return error_;
    if (data_read_) return Status::internal("read_data called twice for one member");
    data_read_ = true;
    int64_t got = 0;
    while (got < member_.size) {
      la_ssize_t r = archive_read_data(a_, static_cast<uint8_t*>(dst) + got, size_t(member_.size - got));
      if (r < 0) return fail_archive(-1);
      if (r == 0) break;
      got += r;
    }
    if (got != member_.size)
      return fail(tar_error(StatusCode::kInvalidData, shard_, key_of(member_.name), member_.header_offset,
                            "truncated tar: member data (" + std::to_string(member_.size) +
                                " bytes) runs past the end of the stream (got " +
                                std::to_string(got) + ")"));
    return Status::ok();
  }

 private:
  static la_ssize_t read_cb(archive* a, void* self_ptr, const void** out) {
    auto* self = static_cast<ArchiveMemberStream*>(self_ptr);
    auto r = self->source_->read(self->buffer_.data(), int64_t(self->buffer_.size()));
    if (!r.is_ok()) {
      self->source_error_ = r.status();
      archive_set_error(a, EIO, "%s", r.status().message().c_str());
      return -1;
    }
    *out = self->buffer_.data();
    self->compressed_read_ += *r;
    return la_ssize_t(*r);
  }
  static std::string key_of(const std::string& name) {
    std::string key, ext;
    return split_member_name(name, &key, &ext) ? key : name;
  }
  Status fail(Status s) {
    done_ = true;
    error_ = s;
    return s;
  }
  Status fail_archive(int64_t offset) {
    if (!source_error_.is_ok())
      return fail(source_error_.with_context("tar shard \"" + shard_ + "\""));
    const char* msg = archive_error_string(a_);
    // The last member's header (the error is in it, its data or the header after it), in the
    // decompressed tar; the key is that member's.
    if (offset < 0) offset = std::max<int64_t>(member_.header_offset, 0);
    return fail(tar_error(StatusCode::kInvalidData, shard_, member_.name.empty() ? "" : key_of(member_.name), offset,
                          std::string("libarchive: ") + (msg ? msg : "unknown error") + " (at or after the member " +
                              "whose header is at this byte of the decompressed tar; " +
                              std::to_string(compressed_read_) + " bytes of the file read)"));
  }

  std::unique_ptr<ByteSource> source_;
  std::string shard_;
  TarLimits limits_;
  std::vector<uint8_t> buffer_;
  archive* a_ = nullptr;
  TarMember member_;
  bool data_read_ = true;
  bool done_ = false;
  int64_t compressed_read_ = 0;  // bytes of the file handed to libarchive
  Status error_, source_error_;
};

}  // namespace

ShardCompression shard_compression(std::string_view name) {
  if (is_remote_url(name)) name = name.substr(0, name.find_first_of("?#"));  // a URL's query is not its name
  for (std::string_view s : {".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar.zst"})
    if (ends_with_ci(name, s)) return ShardCompression::kCompressed;
  return ShardCompression::kNone;
}

std::unique_ptr<MemberStream> open_member_stream(std::unique_ptr<ByteSource> source,
                                                 std::string shard_name, ShardCompression compression,
                                                 const TarLimits& limits) {
  if (compression == ShardCompression::kCompressed)
    return std::make_unique<ArchiveMemberStream>(std::move(source), std::move(shard_name), limits);
  return std::make_unique<PlainMemberStream>(std::move(source), std::move(shard_name), limits);
}

const StreamedField* StreamedSample::find(std::string_view ext) const {
  for (const auto& f : fields)
    if (f.ext == ext) return &f;
  return nullptr;
}

SampleStream::SampleStream(std::unique_ptr<MemberStream> members, std::string url,
                           SampleStreamOptions options)
    : members_(std::move(members)), url_(std::move(url)), options_(std::move(options)), grouper_(url_) {}

Status SampleStream::read_field(const TarMember& m, const std::string& ext, StreamedSample* into) {
  if (!options_.fields.empty() &&
      std::find(options_.fields.begin(), options_.fields.end(), ext) == options_.fields.end())
    return Status::ok();  // not wanted: its bytes are skipped by the next next()
  StreamedField f;
  f.ext = ext;
  f.member_name = m.name;
  f.data_offset = m.data_offset;
  if (options_.read_data) {
    int64_t held = m.size;
    for (const StreamedField& g : into->fields) held += int64_t(g.data.size());
    const int64_t limit = members_->limits().max_sample_bytes;
    if (held > limit)
      return tar_error(StatusCode::kResourceExhausted, url_, into->key, m.header_offset,
                       "the sample's fields hold more than " + std::to_string(limit) + " bytes with member \"" + m.name +
                           "\" (" + std::to_string(m.size) + " bytes; TarLimits::max_sample_bytes)");
    f.data.resize(size_t(m.size));
    HDL_RETURN_IF_ERROR(members_->read_data(f.data.data()));
  }
  into->fields.push_back(std::move(f));
  return Status::ok();
}

Result<bool> SampleStream::next(StreamedSample* out) {
  if (done_) {
    if (!error_.is_ok()) return error_;
    return false;
  }
  auto fail = [&](Status s) -> Result<bool> {
    done_ = true;
    error_ = s;
    return s;
  };
  StreamedSample cur;
  bool have = false;
  if (have_pending_) {
    cur = std::move(pending_);
    have = true;
    have_pending_ = false;
  }
  std::string key, ext;
  for (;;) {
    auto m = members_->next();
    if (!m.is_ok()) return fail(m.status());
    if (*m == nullptr) {
      done_ = true;
      if (!have) return false;
      break;
    }
    const TarMember& member = **m;
    auto step = grouper_.add(member.name, member.header_offset, &key, &ext);
    if (!step.is_ok()) return fail(step.status());
    if (*step == SampleGrouper::Step::kSkip) continue;
    if (*step == SampleGrouper::Step::kNewSample && have) {
      // This member starts the next sample: keep it for the next call.
      pending_ = StreamedSample{key, url_, {}};
      if (Status s = read_field(member, ext, &pending_); !s.is_ok()) return fail(s);
      have_pending_ = true;
      break;
    }
    if (!have) {
      cur = StreamedSample{key, url_, {}};
      have = true;
    }
    if (Status s = read_field(member, ext, &cur); !s.is_ok()) return fail(s);
  }
  *out = std::move(cur);
  return true;
}

}  // namespace hdl
