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

// transform_first's dataset: another's samples, fn applied to their data.
class TransformedDataset : public Dataset {
 public:
  TransformedDataset(std::shared_ptr<const Dataset> dataset, std::function<nd::NDArray(const nd::NDArray&)> fn)
      : dataset_(std::move(dataset)), fn_(std::move(fn)) {
    if (!dataset_) throw ValueError("transform_first: the dataset is null");
    if (!fn_) throw ValueError("transform_first: the transform is empty");
  }
  std::int64_t size() const override { return dataset_->size(); }
  Sample get(std::int64_t i) const override {
    Sample s = dataset_->get(i);
    s.data = fn_(s.data);
    return s;
  }

 private:
  std::shared_ptr<const Dataset> dataset_;
  std::function<nd::NDArray(const nd::NDArray&)> fn_;
};

// An ArrayDataset's rows as samples (on cpu(0)).
class RowDataset : public Dataset {
 public:
  explicit RowDataset(const ArrayDataset& rows)
      : rows_(rows.data().as_in_context(cpu()), rows.label().as_in_context(cpu())) {}
  std::int64_t size() const override { return rows_.size(); }
  Sample get(std::int64_t i) const override {
    auto [data, label] = rows_[i];
    return {data, label.ndim() == 0 ? label.reshape({1}) : label};
  }

 private:
  ArrayDataset rows_;
};

}  // namespace

std::shared_ptr<const Dataset> transform_first(std::shared_ptr<const Dataset> dataset,
                                               std::function<nd::NDArray(const nd::NDArray&)> fn) {
  return std::make_shared<TransformedDataset>(std::move(dataset), std::move(fn));
}

std::shared_ptr<const Dataset> transform_first(const ArrayDataset& dataset,
                                               std::function<nd::NDArray(const nd::NDArray&)> fn) {
  return transform_first(std::make_shared<RowDataset>(dataset), std::move(fn));
}

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
