// url_file_system(), is_remote_url() and default_file_system() (media/url_file_system.h).
#include "media/url_file_system.h"

#include <algorithm>
#include <functional>
#include <mutex>
#include <vector>

#include "media/cache_file_system.h"
#include "media/detail/http_client.h"
#include "media/http_file_system.h"
#include "media/s3_file_system.h"

namespace hdl {
namespace {

// The stores, one row each: the schemes a store serves and how it is made (on first use: s3's
// configuration is read from the environment then, and an error in it is open()'s). A new
// store is one row here and a header of its own (media/README.md, "Adding a store").
struct Store {
  std::vector<std::string_view> schemes;
  std::function<Result<std::shared_ptr<RemoteFileSystem>>(const RemoteOptions&)> make;
};

const std::vector<Store>& stores() {
  static const std::vector<Store> table = {
      {{"http://", "https://"},
       [](const RemoteOptions& o) -> Result<std::shared_ptr<RemoteFileSystem>> { return http_file_system(o); }},
      {{"s3://"},
       [](const RemoteOptions& o) -> Result<std::shared_ptr<RemoteFileSystem>> {
         HDL_ASSIGN_OR_RETURN(S3Config config, s3_config_from_environment());
         return s3_file_system(config, o);
       }},
  };
  return table;
}

// The row of the store that serves `path`; -1 for a local path.
int store_of(std::string_view path) {
  const std::vector<Store>& table = stores();
  for (size_t i = 0; i < table.size(); ++i)
    for (std::string_view scheme : table[i].schemes)
      if (detail::has_scheme(path, scheme)) return int(i);
  return -1;
}

RemoteStats operator+(RemoteStats a, const RemoteStats& b) {
  a.requests += b.requests, a.retries += b.retries, a.failures += b.failures, a.bytes += b.bytes;
  a.not_found += b.not_found;
  a.first_byte_ns += b.first_byte_ns, a.transfer_ns += b.transfer_ns, a.connections += b.connections;
  a.stalls += b.stalls, a.in_flight_peak = std::max(a.in_flight_peak, b.in_flight_peak);
  a.prefetches += b.prefetches, a.prefetch_hits += b.prefetch_hits;
  a.prefetch_wasted_bytes += b.prefetch_wasted_bytes, a.prefetch_cut += b.prefetch_cut;
  return a;
}

class UrlFileSystem final : public RemoteFileSystem {
 public:
  UrlFileSystem(const RemoteOptions& o, std::shared_ptr<FileSystem> local)
      : options_(o), local_(std::move(local)), made_(stores().size()) {}

  Result<std::unique_ptr<RandomAccessFile>> open(const std::string& path) override {
    const int row = store_of(path);
    if (row < 0) return local_->open(path);
    HDL_ASSIGN_OR_RETURN(RemoteFileSystem * store, made(row));
    return store->open(path);
  }
  RemoteStats stats() const override {
    RemoteStats s;
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& store : made_)
      if (store) s = s + store->stats();
    return s;
  }
  Result<std::vector<RemoteObject>> list(const std::string& prefix) override {
    const int row = store_of(prefix);
    if (row < 0) return Status::unsupported("cannot list \"" + prefix + "\": not the URL of a store");
    HDL_ASSIGN_OR_RETURN(RemoteFileSystem * store, made(row));
    return store->list(prefix);
  }

 private:
  Result<RemoteFileSystem*> made(int row) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!made_[size_t(row)]) {
      Result<std::shared_ptr<RemoteFileSystem>> store = stores()[size_t(row)].make(options_);
      if (!store.is_ok()) return store.status();
      made_[size_t(row)] = std::move(*store);
    }
    return made_[size_t(row)].get();
  }

  RemoteOptions options_;
  std::shared_ptr<FileSystem> local_;
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<RemoteFileSystem>> made_;  // by row of stores(), on first use
};

}  // namespace

bool is_remote_url(std::string_view path) { return store_of(path) >= 0; }

std::shared_ptr<RemoteFileSystem> url_file_system(const RemoteOptions& options, std::shared_ptr<FileSystem> local) {
  return std::make_shared<UrlFileSystem>(options, std::move(local));
}

std::shared_ptr<RemoteFileSystem> default_file_system() {
  // Under a local cache when HDL_CACHE_DIR names one (media/cache_file_system.h).
  static const std::shared_ptr<RemoteFileSystem> fs = cached_file_system(url_file_system(), CacheOptions::from_environment());
  return fs;
}

}  // namespace hdl
