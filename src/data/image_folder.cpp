// Image folders: one subfolder per class.
#include "convkit/data/image_folder.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace convkit::data {

namespace {

namespace fs = std::filesystem;

bool is_image_file(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg";
}

bool is_hidden(const fs::path& p) {
  const std::string name = p.filename().string();
  return !name.empty() && name[0] == '.';
}

// Image files under dir, recursively, in sorted path order.
std::vector<std::string> images_under(const fs::path& dir) {
  std::vector<std::string> files;
  auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied);
  for (auto end = fs::recursive_directory_iterator(); it != end; ++it) {
    if (is_hidden(it->path())) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && is_image_file(it->path())) files.push_back(it->path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

ImageFolder::ImageFolder(const std::string& root, ImageFolderOptions options)
    : options_(options) {
  CK_CHECK((options.height == 0) == (options.width == 0) && options.height >= 0 &&
               options.width >= 0,
           "ImageFolder: resize needs both height and width positive (or both 0 for none), got ",
           options.height, "x", options.width);
  CK_CHECK(fs::is_directory(root), "ImageFolder: '", root, "' is not a directory");
  std::vector<fs::path> class_dirs;
  for (const fs::directory_entry& e : fs::directory_iterator(root)) {
    if (e.is_directory() && !is_hidden(e.path())) class_dirs.push_back(e.path());
  }
  std::sort(class_dirs.begin(), class_dirs.end());
  CK_CHECK(!class_dirs.empty(), "ImageFolder: '", root,
           "' has no class subfolders (expected root/<class>/<image>.png|jpg)");
  for (std::size_t c = 0; c < class_dirs.size(); ++c) {
    class_names_.push_back(class_dirs[c].filename().string());
    for (std::string& file : images_under(class_dirs[c])) {
      files_.push_back(std::move(file));
      labels_.push_back(static_cast<std::int64_t>(c));
    }
  }
  CK_CHECK(!files_.empty(), "ImageFolder: no .png, .jpg or .jpeg files under '", root, "' (",
           class_dirs.size(), " class folders)");
  if (options_.check_headers) {
    for (const std::string& file : files_) {
      try {
        probe_image(file);
      } catch (const Error& e) {
        CK_FAIL("ImageFolder '", root, "': ", e.what());
      }
    }
  }
}

const std::string& ImageFolder::path(std::int64_t index) const {
  check_index("ImageFolder", index, size());
  return files_[static_cast<std::size_t>(index)];
}

Example ImageFolder::get(std::int64_t index) const {
  Tensor image = load_image(path(index));
  if (options_.height > 0 &&
      (image.size(1) != options_.height || image.size(2) != options_.width)) {
    image = resize(image, options_.height, options_.width, options_.interpolation);
  }
  return Example{image, labels_[static_cast<std::size_t>(index)]};
}

}  // namespace convkit::data
