#pragma once
// Evaluation metrics, as in mxnet.metric: update() with each batch's labels and predictions,
// get() the value over every batch since the last reset().
//
//   mx::metric::Accuracy acc;
//   for (auto& [X, y] : test_loader) acc.update(y, net(X.as_in_context(ctx)));
//   auto [name, value] = acc.get();   // "accuracy", 0.85
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ndarray/array.hpp"

namespace mx::metric {

// The fraction of samples whose predicted class is the label.
class Accuracy {
 public:
  explicit Accuracy(std::string name = "accuracy") : name_(std::move(name)) {}

  // labels (B,) class ids of any numeric dtype (a float id is truncated, as MXNet's astype does).
  // preds (B, C) scores, whose argmax over axis 1 is the predicted class (taken on the preds'
  // context), or (B,) class ids, the same shape as labels. labels and preds may be on any contexts:
  // only the B class ids of each are copied to the host. A prediction count other than the label
  // count is an mx::ShapeError naming both shapes.
  void update(const nd::NDArray& labels, const nd::NDArray& preds);
  // One pair per device, as MXNet takes lists; the two lists must be equally long (mx::ValueError).
  void update(const std::vector<nd::NDArray>& labels, const std::vector<nd::NDArray>& preds);

  // {name, correct / seen}; the value is NaN before any sample, as in MXNet.
  std::pair<std::string, double> get() const;
  void reset();

  std::int64_t num_correct() const { return num_correct_; }
  std::int64_t num_inst() const { return num_inst_; }  // samples seen (MXNet's num_inst)

 private:
  std::string name_;
  std::int64_t num_correct_ = 0;
  std::int64_t num_inst_ = 0;
};

}  // namespace mx::metric
