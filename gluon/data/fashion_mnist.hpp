#pragma once
// mx::gluon::data::MNIST and FashionMNIST. Fashion-MNIST is Zalando's: 70,000 grayscale 28x28 images of ten
// kinds of clothing, read from the four gzip-compressed IDX files that MXNet downloads:
//
//   train-images-idx3-ubyte.gz  train-labels-idx1-ubyte.gz   60,000 training samples
//   t10k-images-idx3-ubyte.gz   t10k-labels-idx1-ubyte.gz    10,000 test samples
//
// Nothing is downloaded: the files are read from a directory (default_root() unless given).
//
// Dtypes, as in mxnet.gluon.data.vision.FashionMNIST: images are uint8 and labels int32 (MXNet reads
// the label bytes as uint8 and converts them with astype(np.int32), and its DataLoader keeps that
// dtype; D2L converts with y.astype('float32') where a float is needed). Unlike MXNet, the images
// have no trailing channel axis, (N, 28, 28) rather than (N, 28, 28, 1); to_tensor turns a batch of
// them into the (B, 1, 28, 28) float32 that a network takes.
//
//   mx::gluon::data::FashionMNIST train_set(true), test_set(false);
//   mx::gluon::data::DataLoader loader(train_set, 256, true, "keep", mx::gluon::data::to_tensor);
#include <cstdint>
#include <string>
#include <vector>

#include "gluon/data/dataset.hpp"

namespace mx::gluon::data {

// MNIST's handwritten digits in the same four files (MXNet's gluon.data.vision.MNIST, whose
// FashionMNIST derives from it): an empty root means $MNIST_DIR when set, else MXNet's cache,
// ~/.mxnet/datasets/mnist. Everything else as FashionMNIST below.
class MNIST : public ArrayDataset {
 public:
  static constexpr int kNumClasses = 10;
  static constexpr int kImageSize = 28;  // rows and columns of every image

  // Reads the training split (train = true) or the test split from root ("" means default_root()).
  // num_samples >= 0 keeps only the first num_samples samples (all of them when the split is
  // shorter), reading no further into the files: the quick way to a small data set for tests.
  //
  // A file that is missing, empty, not gzip-compressed, corrupt, truncated, of the wrong kind (IDX
  // magic number 2051 for images, 2049 for labels), with images other than 28x28, with labels
  // outside [0, 10), or whose image and label counts differ throws mx::FileError naming the data
  // set, the file and the values involved.
  explicit MNIST(bool train = true, const std::string& root = "", std::int64_t num_samples = -1);

  // data() is (N, 28, 28) uint8 on cpu(0) and label() is (N,) int32 on cpu(0) (ArrayDataset's).
  bool train() const { return train_; }
  const std::string& root() const { return root_; }  // the directory the files were read from

  static std::string default_root();

 protected:
  struct Resolved {};  // tags the constructor that takes an already-resolved root
  MNIST(Resolved, bool train, std::string root, std::int64_t num_samples, bool fashion);

 private:
  bool train_;
  std::string root_;
};

class FashionMNIST : public MNIST {
 public:
  explicit FashionMNIST(bool train = true, const std::string& root = "", std::int64_t num_samples = -1);

  // $FASHION_MNIST_DIR when it is set and not empty, else /usr/share/datasets/fashion-mnist (where
  // the Debian package dataset-fashion-mnist installs the files).
  static std::string default_root();

  // D2L's names of the classes ("t-shirt", "trouser", ..., "ankle boot") for labels of any numeric
  // dtype and context (a class id stored as a float is truncated, as MXNet's astype does). A label
  // outside [0, 10) throws mx::IndexError.
  static std::vector<std::string> text_labels(const nd::NDArray& labels);
  static std::vector<std::string> text_labels(const std::vector<std::int64_t>& labels);
};

// The names MXNet gives them: mx::gluon::data::vision::FashionMNIST and MNIST.
namespace vision {
using data::FashionMNIST;
using data::MNIST;
}

}  // namespace mx::gluon::data
