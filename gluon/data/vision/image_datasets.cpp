#include "gluon/data/vision/image_datasets.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "context/error.hpp"
#include "ndarray/io/im2rec.hpp"
#include "ndarray/io/image.hpp"
#include "ndarray/io/recordio.hpp"
#include "ndarray/ops/creation.hpp"

namespace mx::gluon::data::vision {
namespace {

namespace fs = std::filesystem;

bool is_image_file(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

void check_index(const char* dataset, std::int64_t i, std::int64_t size) {
  if (i < 0 || i >= size) {
    throw IndexError(std::string(dataset) + "[" + std::to_string(i) + "]: the data set has " + std::to_string(size) +
                     " samples, [0, " + std::to_string(size) + ")");
  }
}

std::vector<fs::path> sorted_entries(const fs::path& folder) {
  std::vector<fs::path> entries;
  for (const fs::directory_entry& e : fs::directory_iterator(folder)) entries.push_back(e.path());
  std::sort(entries.begin(), entries.end());
  return entries;
}

}  // namespace

ImageFolderDataset::ImageFolderDataset(const std::string& root, int flag) : flag_(flag) {
  std::error_code error;
  if (!fs::is_directory(root, error)) throw FileError("ImageFolderDataset: '" + root + "' is not a folder");
  for (const fs::path& folder : sorted_entries(root)) {
    if (!fs::is_directory(folder, error)) continue;  // a file beside the class folders
    const int label = static_cast<int>(synsets_.size());
    std::size_t images = 0;
    for (const fs::path& file : sorted_entries(folder)) {
      if (!fs::is_regular_file(file, error) || !is_image_file(file)) continue;
      items_.emplace_back(file.string(), label);
      ++images;
    }
    if (images == 0) {
      throw FileError("ImageFolderDataset: the class folder '" + folder.string() +
                      "' holds no image (.jpg, .jpeg or .png); every class needs samples");
    }
    synsets_.push_back(folder.filename().string());
  }
  if (synsets_.empty()) throw FileError("ImageFolderDataset: '" + root + "' has no class folder");
}

Sample ImageFolderDataset::get(std::int64_t i) const {
  check_index("ImageFolderDataset", i, size());
  const auto& [path, label] = items_[static_cast<std::size_t>(i)];
  const std::int32_t value = label;
  return {image::imread(path, flag_), nd::array(&value, DType::int32, {1}, cpu(), DType::int32)};
}

ImageListDataset::ImageListDataset(const std::string& root, const std::string& list_file, int flag) : flag_(flag) {
  std::vector<im2rec::ListItem> items;
  try {
    items = im2rec::read_list(list_file);
  } catch (const FileError& e) {
    throw FileError(std::string("ImageListDataset: ") + e.what());
  }
  for (im2rec::ListItem& item : items) items_.emplace_back((fs::path(root) / item.path).string(), std::move(item.labels));
  if (items_.empty()) throw FileError("ImageListDataset: the list '" + list_file + "' lists no image");
}

Sample ImageListDataset::get(std::int64_t i) const {
  check_index("ImageListDataset", i, size());
  const auto& [path, labels] = items_[static_cast<std::size_t>(i)];
  return {image::imread(path, flag_),
          nd::array(labels.data(), DType::float32, {static_cast<std::int64_t>(labels.size())}, cpu(), DType::float32)};
}

ImageRecordDataset::ImageRecordDataset(const std::string& filename, int flag)
    : filename_(filename), flag_(flag),
      records_(std::make_shared<recordio::MXIndexedRecordIO>(fs::path(filename).replace_extension(".idx").string(),
                                                            filename, 'r')) {}

std::int64_t ImageRecordDataset::size() const { return static_cast<std::int64_t>(records_->keys().size()); }

Sample ImageRecordDataset::get(std::int64_t i) const {
  check_index("ImageRecordDataset", i, size());
  const std::int64_t key = records_->keys()[static_cast<std::size_t>(i)];
  const std::string what = "'" + filename_ + "', record " + std::to_string(key);
  const auto [header, payload] = recordio::unpack(records_->read_idx(key), what);
  return {image::imdecode(payload, flag_, true, what),
          nd::array(header.label.data(), DType::float32, {static_cast<std::int64_t>(header.label.size())}, cpu(),
                    DType::float32)};
}

}  // namespace mx::gluon::data::vision
