// http_file_system() (media/http_file_system.h); the transport is media/detail/http_client.cc.
#include "media/http_file_system.h"

#include "media/detail/remote_file.h"

namespace hdl {
namespace {

class HttpReader final : public detail::ObjectReader {
 public:
  explicit HttpReader(const RemoteOptions& o) : ObjectReader(o) {}
  Result<detail::HttpRequest> range_request(const std::string& url, int64_t offset, int64_t n, void* dst) const override {
    detail::HttpRequest q;
    q.url = url, q.begin = offset, q.length = n, q.dst = dst;
    return q;
  }
  Status status_for(const detail::HttpRequest& q, const detail::HttpResponse& r) const override {
    const std::string m = detail::HttpClient::describe(q, r, "");
    return r.status == 404 || r.status == 410 ? Status::not_found(m) : Status::io_error(m);
  }
};

class HttpFileSystem final : public RemoteFileSystem {
 public:
  explicit HttpFileSystem(const RemoteOptions& o) : reader_(std::make_shared<HttpReader>(o)) {}

  Result<std::unique_ptr<RandomAccessFile>> open(const std::string& path) override {
    if (!detail::has_scheme(path, "http://") && !detail::has_scheme(path, "https://"))
      return Status::invalid_argument("not an http:// or https:// URL: \"" + path + "\"");
    detail::HttpRequest q;
    q.url = path, q.head = true;
    HDL_ASSIGN_OR_RETURN(detail::HttpResponse r, reader_->client.perform(q));
    if (r.status / 100 != 2) return reader_->status_for(q, r);
    if (r.content_length < 0)
      return Status::unsupported(detail::HttpClient::describe(q, r, "") + ": no Content-Length (a size is needed)");
    return std::unique_ptr<RandomAccessFile>(
        std::make_unique<detail::RemoteFile>(reader_, path, r));
  }
  RemoteStats stats() const override { return reader_->client.stats(); }
  Result<std::vector<RemoteObject>> list(const std::string& prefix) override {
    return Status::unsupported("HTTP cannot list \"" + prefix + "\": name the files (or use s3://)");
  }

 private:
  std::shared_ptr<HttpReader> reader_;
};

}  // namespace

std::shared_ptr<RemoteFileSystem> http_file_system(const RemoteOptions& options) {
  return std::make_shared<HttpFileSystem>(options);
}

}  // namespace hdl
