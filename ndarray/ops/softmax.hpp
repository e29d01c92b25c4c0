#pragma once
// softmax, log_softmax, SoftmaxOutput and one_hot, as mx.nd. softmax, log_softmax and
// SoftmaxOutput are registered ops with fused kernels (ndarray/ops/softmax.cpp); one_hot is
// composed of other ops.
#include <string>

#include "ndarray/core/array.hpp"

namespace mx::nd {

// exp(x / t) / sum(exp(x / t)) along axis, computed from x - max(x) so that it cannot overflow
// (t, the temperature, > 0: mx::ValueError otherwise).
NDArray softmax(const NDArray& x, int axis = -1, double temperature = 1.0);
// (x - max) / t - log(sum(exp((x - max) / t))) along axis: the numerically stable log of softmax.
NDArray log_softmax(const NDArray& x, int axis = -1, double temperature = 1.0);
// The same over each line's first length[line] elements, the others 0 in the result and its
// gradient (MXNet's use_length=True): length has x's shape without `axis` ((1,) for 1-D x), any
// dtype, each value truncated and clipped to [0, x.shape[axis]]. A length of another shape:
// mx::ShapeError naming both.
NDArray softmax(const NDArray& x, const NDArray& length, int axis = -1, double temperature = 1.0);
NDArray log_softmax(const NDArray& x, const NDArray& length, int axis = -1, double temperature = 1.0);
// SoftmaxOutput's attributes, MXNet's names and defaults.
struct SoftmaxOutputOptions {
  double grad_scale = 1.0;
  double ignore_label = -1.0;
  bool multi_output = false;    // true (the softmax along axis 1) is not supported
  bool use_ignore = false;      // rows labelled ignore_label get no gradient
  bool preserve_shape = false;  // data (..., classes) of any rank, label (...)
  std::string normalization = "null";  // "null", "batch" or "valid"
};

// MXNet's loss head: softmax(data) along the last axis, whose gradient with respect to data is
// that of the cross entropy with label, whatever the head gradient (as mx.nd.SoftmaxOutput):
//   (softmax(data) - one_hot(label)) * grad_scale / n,  n = 1 ("null"), rows ("batch"), or the
//   labels other than ignore_label ("valid", at least 1); rows labelled ignore_label get 0 when
//   use_ignore.
// data (rows, classes), or (..., classes) with preserve_shape; label of data's leading axes and
// dtype, holding class indices (a label outside [0, classes) subtracts nothing), or a none array:
// the forward needs no label, and the gradient is then softmax's of the head gradient.
// mx::ValueError naming SoftmaxOutput for multi_output or an unknown normalization, mx::ShapeError
// and mx::DTypeError for data or a label that does not fit.
NDArray SoftmaxOutput(const NDArray& data, const NDArray& label = NDArray(), const SoftmaxOutputOptions& options = {});

// indices (any shape, integer values in any dtype) -> indices.shape + (depth,), 1 at each index.
NDArray one_hot(const NDArray& indices, std::int64_t depth, DType dtype = DType::float32);

}  // namespace mx::nd
