#include "gluon/data/dataset.hpp"

#include <string>

#include "ndarray/core/describe.hpp"

namespace mx::gluon::data {
namespace {

void check_has_sample_axis(const char* which, const nd::NDArray& array) {
  nd::check_not_none("ArrayDataset", array);
  if (array.ndim() == 0) {
    throw ShapeError(std::string("ArrayDataset: the ") + which +
                     " array needs a first axis that counts samples, but its shape is " + array.shape().tuple_str());
  }
}


}  // namespace

ArrayDataset::ArrayDataset(nd::NDArray data, nd::NDArray label) : data_(std::move(data)), label_(std::move(label)) {
  check_has_sample_axis("data", data_);
  check_has_sample_axis("label", label_);
  if (data_.shape()[0] != label_.shape()[0]) {
    throw ShapeError("ArrayDataset: data has " + std::to_string(data_.shape()[0]) + " samples " +
                     nd::describe(data_) + " but label has " + std::to_string(label_.shape()[0]) + " " +
                     nd::describe(label_) + "; their first axes must agree");
  }
}

std::pair<nd::NDArray, nd::NDArray> ArrayDataset::operator[](std::int64_t i) const {
  if (i < 0 || i >= size()) {
    throw IndexError("ArrayDataset[" + std::to_string(i) + "]: the dataset has " + std::to_string(size()) +
                     " samples, [0, " + std::to_string(size()) + ")");
  }
  return {data_[i], label_[i]};
}

ArrayDataset ArrayDataset::subset(std::int64_t n) const {
  if (n < 0 || n > size()) {
    throw IndexError("ArrayDataset::subset(" + std::to_string(n) + "): the dataset has " + std::to_string(size()) +
                     " samples; n must be in [0, " + std::to_string(size()) + "]");
  }
  return ArrayDataset(data_.slice(0, n), label_.slice(0, n));
}

}  // namespace mx::gluon::data
