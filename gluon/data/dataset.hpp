#pragma once
// The data sets: ArrayDataset, samples stored as the rows of two arrays, as in
// mxnet.gluon.data.ArrayDataset(data, label) (sample i is (data[i], label[i])); and Dataset, the
// base of data sets whose samples are made on demand (the image data sets decode them), as
// mxnet.gluon.data.Dataset. A DataLoader takes either.
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>

#include "ndarray/core/array.hpp"

namespace mx::gluon::data {

// One sample of a Dataset, on cpu(0): its data (an image (height, width, channels) uint8, ...) and
// its label, (k,) for k >= 1 values (one class; or a record's several labels).
struct Sample {
  nd::NDArray data;
  nd::NDArray label;
};

// A data set of samples made on demand. get(i) is called by the DataLoader's workers, several at
// once: it must be safe to call from several threads.
class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual std::int64_t size() const = 0;
  // Sample i; i outside [0, size()) is an mx::IndexError.
  virtual Sample get(std::int64_t i) const = 0;
};

class ArrayDataset {
 public:
  // data (N, ...) and label (N, ...) of any dtype and context: the first axis counts samples, so
  // both must have it and agree on it, else mx::ShapeError. The arrays are shared, not copied.
  ArrayDataset(nd::NDArray data, nd::NDArray label);

  std::int64_t size() const { return data_.shape()[0]; }  // N
  const nd::NDArray& data() const { return data_; }       // (N, ...)
  const nd::NDArray& label() const { return label_; }     // (N, ...)

  // Sample i as views: data (...) and label (...); a 1-D label gives shape (1,), as x[i] does.
  // i outside [0, N) is an mx::IndexError.
  std::pair<nd::NDArray, nd::NDArray> operator[](std::int64_t i) const;

  // The first n samples, as views of the same arrays (for quick experiments and tests).
  // n outside [0, N] is an mx::IndexError.
  ArrayDataset subset(std::int64_t n) const;

 private:
  nd::NDArray data_;   // (N, ...)
  nd::NDArray label_;  // (N, ...)
};

// MXNet's dataset.transform_first(fn): a Dataset whose sample i is dataset's with fn applied to
// its data, when a DataLoader's worker asks for it (the label is kept). fn gets and returns cpu(0)
// arrays; a vision transform draws with the sample's key (gluon/data/sample_random.hpp). A null
// dataset or fn is an mx::ValueError.
std::shared_ptr<const Dataset> transform_first(std::shared_ptr<const Dataset> dataset,
                                               std::function<nd::NDArray(const nd::NDArray&)> fn);
// The same over an ArrayDataset's rows: sample i is (fn(data[i]), label[i]).
std::shared_ptr<const Dataset> transform_first(const ArrayDataset& dataset,
                                               std::function<nd::NDArray(const nd::NDArray&)> fn);

}  // namespace mx::gluon::data
