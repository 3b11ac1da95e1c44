#include "pipeline/readers/dataset.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "pipeline/errors.h"

namespace hdl {
namespace fs = std::filesystem;

const std::vector<std::string>& default_image_extensions() {
  static const std::vector<std::string> ext = {".jpg", ".jpeg", ".png", ".ppm", ".bmp",
                                               ".pgm", ".tif",  ".tiff", ".webp"};
  return ext;
}

namespace {

bool has_extension(std::string_view name, const std::vector<std::string>& lowered) {
  for (const auto& e : lowered) {
    if (name.size() < e.size()) continue;
    bool match = true;
    for (size_t i = 0; i < e.size() && match; ++i)
      match = std::tolower(static_cast<unsigned char>(name[name.size() - e.size() + i])) == e[i];
    if (match) return true;
  }
  return false;
}

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);  // follows symlinks, as os.scandir's entry.is_dir() does
}

// os.walk(top, followlinks=True) flattened to (directory, sorted files), sorted by directory
// path string, as torchvision's make_dataset iterates sorted(os.walk(...)).
void walk(const fs::path& dir, std::vector<std::pair<std::string, std::vector<std::string>>>& out) {
  std::vector<std::string> files;
  std::vector<fs::path> subdirs;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (is_dir(it->path())) subdirs.push_back(it->path());
    else files.push_back(it->path().filename().string());
  }
  std::sort(files.begin(), files.end());
  out.emplace_back(dir.string(), std::move(files));
  for (const auto& s : subdirs) walk(s, out);
}

}  // namespace

Dataset Dataset::image_folder(const std::string& root, const std::vector<std::string>& extensions,
                              bool allow_empty_classes) {
  if (!is_dir(root)) throw ConfigError("file_root \"" + root + "\" is not a directory");
  std::vector<std::string> lowered;
  for (auto e : extensions) {
    std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return std::tolower(c); });
    lowered.push_back(e);
  }
  Dataset d;
  d.root_ = root;
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec))
    if (is_dir(it->path())) d.classes_.push_back(it->path().filename().string());
  if (ec) throw ConfigError("cannot list file_root \"" + root + "\": " + ec.message());
  std::sort(d.classes_.begin(), d.classes_.end());
  if (d.classes_.empty())
    throw ConfigError("file_root \"" + root + "\" has no class folders (ImageFolder expects root/<class>/<files>)");

  std::vector<std::string> empty;
  for (size_t label = 0; label < d.classes_.size(); ++label) {
    const fs::path class_dir = fs::path(root) / d.classes_[label];
    std::vector<std::pair<std::string, std::vector<std::string>>> dirs;
    walk(class_dir, dirs);
    std::sort(dirs.begin(), dirs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    const size_t before = d.labels_.size();
    for (const auto& [dir, files] : dirs) {
      const std::string rel_dir = fs::path(dir).lexically_relative(root).string();
      for (const auto& f : files)
        if (has_extension(f, lowered)) d.add(rel_dir + "/" + f, static_cast<int64_t>(label));
    }
    if (d.labels_.size() == before) empty.push_back(d.classes_[label]);
  }
  if (!empty.empty() && !allow_empty_classes) {
    std::string names;
    for (const auto& c : empty) names += (names.empty() ? "" : ", ") + c;
    std::string exts;
    for (const auto& e : extensions) exts += (exts.empty() ? "" : ", ") + e;
    throw ConfigError("file_root \"" + root + "\": found no valid file for the classes " + names +
                      ". Supported extensions are: " + exts);
  }
  return d;
}

Dataset Dataset::file_list(const std::string& list_path, const std::string& root) {
  std::ifstream in(list_path);
  if (!in) throw ConfigError("file_list \"" + list_path + "\" cannot be opened");
  return parse_file_list(in, list_path, root.empty() ? fs::path(list_path).parent_path().string() : root);
}

Dataset Dataset::file_list_from_text(std::string_view text, const std::string& list_name, const std::string& root) {
  std::istringstream in{std::string(text)};
  return parse_file_list(in, list_name, root);
}

Dataset Dataset::parse_file_list(std::istream& in, const std::string& list_path, std::string root) {
  Dataset d;
  d.root_ = std::move(root);
  std::string line;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    size_t start = 0;
    while (start < line.size() && std::isspace(static_cast<unsigned char>(line[start]))) ++start;
    if (start == line.size() || line[start] == '#') continue;
    const size_t sep = line.find_last_of(" \t");
    const auto where = [&] { return "file_list \"" + list_path + "\" line " + std::to_string(line_no); };
    if (sep == std::string::npos || sep < start)
      throw ConfigError(where() + ": expected \"path label\", got \"" + line + "\"");
    size_t path_end = sep;
    while (path_end > start && std::isspace(static_cast<unsigned char>(line[path_end - 1]))) --path_end;
    const std::string label_text = line.substr(sep + 1);
    int64_t label = 0;
    try {
      size_t used = 0;
      label = std::stoll(label_text, &used);
      if (used != label_text.size()) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
      throw ConfigError(where() + ": label \"" + label_text + "\" is not an integer");
    }
    d.add(std::string_view(line).substr(start, path_end - start), label);
  }
  if (d.size() == 0) throw ConfigError("file_list \"" + list_path + "\" lists no files");
  return d;
}

void Dataset::add(std::string_view rel, int64_t label) {
  names_.insert(names_.end(), rel.begin(), rel.end());
  offsets_.push_back(names_.size());
  labels_.push_back(label);
}

std::string Dataset::path(int64_t i) const {
  std::string p = root_;
  if (!p.empty() && p.back() != '/') p += '/';
  p += relative_path(i);
  return p;
}

std::map<std::string, int64_t> Dataset::class_to_idx() const {
  std::map<std::string, int64_t> m;
  for (size_t i = 0; i < classes_.size(); ++i) m[classes_[i]] = static_cast<int64_t>(i);
  return m;
}

}  // namespace hdl
