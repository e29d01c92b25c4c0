#include "gluon/data/vision/cifar.hpp"

#include <cstdlib>
#include <filesystem>

#include "context/error.hpp"
#include "context/file.hpp"
#include "ndarray/ops/creation.hpp"

namespace mx::gluon::data::vision {
namespace {

constexpr std::int64_t kSide = 32, kPlane = kSide * kSide, kImageBytes = 3 * kPlane;

std::string root_from(const char* variable, const char* cache) {
  const char* dir = std::getenv(variable);
  if (dir && *dir) return dir;
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "") + "/.mxnet/datasets/" + cache;
}

// The folder under root that holds `first`: root itself or root/inner (MXNet's download folder).
// mx::FileError naming both places and the variable otherwise.
std::string folder_with(const std::string& dataset, const std::string& root, const std::string& inner,
                        const std::string& first, const char* variable) {
  for (const std::string& folder : {root, root + "/" + inner}) {
    std::error_code ignored;
    if (std::filesystem::is_regular_file(folder + "/" + first, ignored)) return folder;
  }
  throw FileError(dataset + ": " + first + " is neither in '" + root + "' nor in '" + root + "/" + inner +
                  "' (pass the folder as root or set " + variable + "; the binary version's archive from "
                  "https://www.cs.toronto.edu/~kriz/cifar.html unpacks to " + inner + ")");
}

ArrayDataset make_dataset(const std::vector<std::uint8_t>& data, const std::vector<std::int32_t>& labels) {
  const auto n = static_cast<std::int64_t>(labels.size());
  return ArrayDataset(nd::array(data.data(), DType::uint8, {n, kSide, kSide, 3}, cpu(), DType::uint8),
                      nd::array(labels.data(), DType::int32, {n}, cpu(), DType::int32));
}

ArrayDataset read_files(const std::string& dataset, const std::string& folder, const std::vector<std::string>& files,
                        int label_bytes, int label_index, int classes, std::int64_t num_samples) {
  std::vector<std::uint8_t> data;
  std::vector<std::int32_t> labels;
  for (const std::string& file : files) {
    const std::int64_t left = num_samples < 0 ? -1 : num_samples - static_cast<std::int64_t>(labels.size());
    if (left == 0) break;
    const std::string path = folder + "/" + file;
    detail::read_cifar_records(read_file(path, dataset.c_str()), label_bytes, label_index, classes, dataset + ": " + path,
                               left, data, labels);
  }
  return make_dataset(data, labels);
}

}  // namespace

namespace detail {

void read_cifar_records(std::string_view bytes, int label_bytes, int label_index, int classes, const std::string& name,
                        std::int64_t max_records, std::vector<std::uint8_t>& data, std::vector<std::int32_t>& labels) {
  const std::int64_t record = label_bytes + kImageBytes;
  const auto size = static_cast<std::int64_t>(bytes.size());
  if (size == 0 || size % record != 0) {
    throw FileError(name + ": " + std::to_string(size) + " bytes, not a whole number of " + std::to_string(record) +
                    "-byte records (" + std::to_string(label_bytes) + " label byte" + (label_bytes > 1 ? "s" : "") +
                    " and a 32x32x3 image): truncated, or another file");
  }
  std::int64_t count = size / record;
  if (max_records >= 0) count = std::min(count, max_records);
  data.reserve(data.size() + static_cast<std::size_t>(count * kImageBytes));
  for (std::int64_t r = 0; r < count; ++r) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(bytes.data()) + r * record;
    const int label = p[label_index];
    if (label >= classes) {
      throw FileError(name + ": record " + std::to_string(r) + " has label " + std::to_string(label) + ", outside [0, " +
                      std::to_string(classes) + ")");
    }
    labels.push_back(label);
    const std::uint8_t* image = p + label_bytes;
    for (std::int64_t i = 0; i < kPlane; ++i) {  // planes R, G, B -> pixels (R, G, B)
      for (std::int64_t c = 0; c < 3; ++c) data.push_back(image[c * kPlane + i]);
    }
  }
}

}  // namespace detail

CIFAR10::CIFAR10(bool train, const std::string& root, std::int64_t num_samples)
    : CIFAR10([&] {
        const std::vector<std::string> files =
            train ? std::vector<std::string>{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                             "data_batch_4.bin", "data_batch_5.bin"}
                  : std::vector<std::string>{"test_batch.bin"};
        const std::string folder = folder_with("CIFAR10", root.empty() ? default_root() : root, "cifar-10-batches-bin",
                                               files[0], "CIFAR10_DIR");
        return std::pair{read_files("CIFAR10", folder, files, 1, 0, kNumClasses, num_samples), folder};
      }()) {}

CIFAR10::CIFAR10(std::pair<ArrayDataset, std::string> loaded)
    : ArrayDataset(std::move(loaded.first)), root_(std::move(loaded.second)) {}

std::string CIFAR10::default_root() { return root_from("CIFAR10_DIR", "cifar10"); }

CIFAR100::CIFAR100(bool train, const std::string& root, bool fine_label, std::int64_t num_samples)
    : CIFAR100([&] {
        const std::string file = train ? "train.bin" : "test.bin";
        const std::string folder =
            folder_with("CIFAR100", root.empty() ? default_root() : root, "cifar-100-binary", file, "CIFAR100_DIR");
        return std::pair{read_files("CIFAR100", folder, {file}, 2, fine_label ? 1 : 0,
                                    fine_label ? kNumFineClasses : kNumCoarseClasses, num_samples),
                         folder};
      }()) {}

CIFAR100::CIFAR100(std::pair<ArrayDataset, std::string> loaded)
    : ArrayDataset(std::move(loaded.first)), root_(std::move(loaded.second)) {}

std::string CIFAR100::default_root() { return root_from("CIFAR100_DIR", "cifar100"); }

}  // namespace mx::gluon::data::vision
