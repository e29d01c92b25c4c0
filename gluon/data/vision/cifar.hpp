#pragma once
// mx::gluon::data::vision::CIFAR10 and CIFAR100: the CIFAR data sets from the binary versions'
// files, as mxnet.gluon.data.vision reads them. Nothing is downloaded.
//
//   CIFAR-10   data_batch_1.bin ... data_batch_5.bin (50,000 training images), test_batch.bin
//              (10,000): records of 1 label byte (0-9) and 3072 image bytes
//   CIFAR-100  train.bin (50,000), test.bin (10,000): records of a coarse label byte (0-19), a fine
//              label byte (0-99) and 3072 image bytes
//
// The image bytes are 1024 red, 1024 green, then 1024 blue, rows of 32; as MXNet, data() holds
// them as (N, 32, 32, 3) uint8 (height, width, channel) and label() as (N,) int32, on cpu(0). The
// files are read from root: the folder that holds them, or the folder MXNet downloads into, which
// holds cifar-10-batches-bin/ (cifar-100-binary/). An empty root means $CIFAR10_DIR
// ($CIFAR100_DIR) when set, else MXNet's cache, ~/.mxnet/datasets/cifar10 (cifar100).
//
//   vision::CIFAR10 train_set(true, "/data/cifar-10-batches-bin");
//   gdata::DataLoader loader(train_set, 128, true, "keep", gdata::to_tensor);  // (128, 3, 32, 32)
//
// A missing file is an mx::FileError naming every place looked in; a file whose size is not a whole
// number of records, or a label out of range, an mx::FileError naming the file and the record.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gluon/data/dataset.hpp"

namespace mx::gluon::data::vision {

class CIFAR10 : public ArrayDataset {
 public:
  static constexpr int kNumClasses = 10;
  // The training split (train) or the test split; num_samples >= 0 keeps only the first ones.
  explicit CIFAR10(bool train = true, const std::string& root = "", std::int64_t num_samples = -1);
  const std::string& root() const { return root_; }  // the folder the files were read from
  // $CIFAR10_DIR when set and not empty, else ~/.mxnet/datasets/cifar10.
  static std::string default_root();

 private:
  explicit CIFAR10(std::pair<ArrayDataset, std::string> loaded);  // the samples and their folder
  std::string root_;
};

class CIFAR100 : public ArrayDataset {
 public:
  static constexpr int kNumCoarseClasses = 20, kNumFineClasses = 100;
  // Labels are the 20 coarse classes unless fine_label, as MXNet's CIFAR100(fine_label=False).
  explicit CIFAR100(bool train = true, const std::string& root = "", bool fine_label = false,
                    std::int64_t num_samples = -1);
  const std::string& root() const { return root_; }
  // $CIFAR100_DIR when set and not empty, else ~/.mxnet/datasets/cifar100.
  static std::string default_root();

 private:
  explicit CIFAR100(std::pair<ArrayDataset, std::string> loaded);
  std::string root_;
};

namespace detail {

// The records of one CIFAR binary file's bytes (`name` in errors): label_bytes 1 (CIFAR-10) or 2
// (CIFAR-100), the label read from byte label_index and checked below classes. At most max_records
// (< 0: all). Appends HWC images to data and labels to labels.
void read_cifar_records(std::string_view bytes, int label_bytes, int label_index, int classes, const std::string& name,
                        std::int64_t max_records, std::vector<std::uint8_t>& data, std::vector<std::int32_t>& labels);

}  // namespace detail

}  // namespace mx::gluon::data::vision
