#pragma once
// Neural-network ops, as MXNet's mx.nd.FullyConnected, Convolution, Pooling, BatchNorm, Dropout,
// LeakyReLU and BlockGrad.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ndarray/core/array.hpp"
#include "ndarray/ops/op_kinds.hpp"

namespace mx::nd {

// The UnaryOp of an activation name as MXNet's act_type ("relu", "sigmoid", "tanh", "softrelu");
// "" gives none. Throws mx::ValueError naming `op` and listing the valid names.
std::optional<UnaryOp> activation_type(const std::string& act_type, const char* op = "Activation");

// out = x · weightᵀ + bias, recorded for autograd (dx, dweight, dbias: only those that lead to a
// variable are computed).
//   x      (batch, in...) flattened to (batch, in) when flatten; otherwise (..., in), applied
//          over the last axis
//   weight (num_hidden, in)
//   bias   (num_hidden,), ignored (and may be a none NDArray) when no_bias
//   out    (batch, num_hidden) when flatten, else (..., num_hidden)
// act_type is an ndgluon extension that MXNet's FullyConnected does not have: "" (none), "relu",
// "sigmoid", "tanh" or "softrelu", applied with the bias in one pass after the matrix product,
// as nd::Activation would be afterwards. Operands on different contexts throw
// mx::ContextMismatch, of different or integer dtypes mx::DTypeError, of shapes that do not fit
// mx::ShapeError; an unknown act_type or num_hidden <= 0 mx::ValueError.
NDArray FullyConnected(const NDArray& x, const NDArray& weight, const NDArray& bias, std::int64_t num_hidden,
                       bool no_bias = false, bool flatten = true, const std::string& act_type = "");

// Inverted dropout, as mx.nd.Dropout: in training (autograd::is_training(), which record() sets)
// or with mode "always", each element is zeroed with probability p and the others are scaled by
// 1 / (1 - p), with a mask drawn from the context's generator (cuRAND on a GPU) that backward
// reuses; otherwise x itself. p in [0, 1) and mode "training" | "always", else mx::ValueError;
// integer dtypes mx::DTypeError.
NDArray Dropout(const NDArray& x, double p = 0.5, const std::string& mode = "training");

// The activations of mx.nd.LeakyReLU, elementwise, recorded for autograd (_backward_LeakyReLU):
//   "leaky"  x > 0 ? x : slope * x
//   "elu"    x > 0 ? x : slope * (exp(x) - 1)
//   "selu"   lambda * (x > 0 ? x : alpha * (exp(x) - 1)), MXNet's constants (slope unused)
//   "gelu"   x * Phi(x) = 0.5 x (1 + erf(x / sqrt(2))), the exact GELU (slope unused)
// MXNet's "prelu" (a learned slope input) and "rrelu" (random slopes) are not supported: they and
// any other act_type throw mx::ValueError naming LeakyReLU; integer dtypes mx::DTypeError.
NDArray LeakyReLU(const NDArray& x, const std::string& act_type = "leaky", double slope = 0.25);

// x's values in a new array, through which no gradient flows: recorded for autograd with a zero
// gradient, as mx.nd.BlockGrad. stop_gradient is its other name, as in MXNet.
NDArray BlockGrad(const NDArray& x);
NDArray stop_gradient(const NDArray& x);

// Convolution's attributes, in MXNet's order, for designated initialisers:
//   nd::Convolution(x, w, b, {.kernel = {3, 3}, .pad = {1, 1}, .num_filter = 64})
struct ConvolutionOptions {
  std::vector<std::int64_t> kernel;  // 1 to 3 extents: a 1-, 2- or 3-D convolution
  std::vector<std::int64_t> stride = {};  // empty: 1 along every axis
  std::vector<std::int64_t> dilate = {};  // empty: 1
  std::vector<std::int64_t> pad = {};     // empty: 0; zeros on both sides of each axis
  std::int64_t num_filter = 0;
  std::int64_t num_group = 1;  // channels split into groups (num_group = channels: depthwise)
  bool no_bias = false;
  // An ndgluon extension, as FullyConnected's: "" (none), "relu", "sigmoid", "tanh" or "softrelu",
  // applied with the bias in one pass after the convolution.
  std::string act_type = "";
  // MXNet's layout: "" or NCW / NCHW / NCDHW (channels first), or NWC / NHWC / NDHWC (channels
  // last: data (batch, spatial..., channels), weight (num_filter, kernel..., channels / num_group),
  // output (batch, out..., num_filter); on a GPU cuDNN reads them as they are).
  std::string layout = "";
};

// Cross-correlation of data (batch, channels, spatial...) with weight (num_filter, channels /
// num_group, kernel...), plus bias (num_filter,) unless no_bias (bias may then be a none array), as
// mx.nd.Convolution with layout NCW / NCHW / NCDHW (channels last: see layout). The output is (batch, num_filter, out...) with
// out = (in + 2 pad - dilate (kernel - 1) - 1) / stride + 1. cuDNN on a GPU where the build has it
// (the engine chosen and cached per shape), else im2col + GEMM (cuBLAS, OpenBLAS). Recorded for
// autograd. Bad attributes (kernel of 0 or more than 3 axes, stride or dilate < 1, pad < 0, tuples
// of different lengths, num_filter < 1, a num_group not dividing channels and num_filter) throw
// mx::ValueError; operands that do not fit (data not (batch, channels, spatial...) for the
// kernel, a weight or bias of another shape, a kernel larger than the padded input)
// mx::ShapeError; the message names Convolution and the shapes.
NDArray Convolution(const NDArray& data, const NDArray& weight, const NDArray& bias, const ConvolutionOptions& options);

struct DeconvolutionOptions {
  std::vector<std::int64_t> kernel;       // 1 to 3 extents
  std::vector<std::int64_t> stride = {};  // empty: 1
  std::vector<std::int64_t> dilate = {};  // empty: 1
  std::vector<std::int64_t> pad = {};     // empty: 0; removed from both ends of each output axis
  std::vector<std::int64_t> adj = {};     // empty: 0; added at the end of each output axis, < stride
  std::vector<std::int64_t> target_shape = {};  // the output's spatial extents; sets pad and adj
  std::int64_t num_filter = 0;            // the output's channels
  std::int64_t num_group = 1;
  bool no_bias = true;  // MXNet's default for Deconvolution
  std::string act_type = "";
};

// The transposed convolution ("deconvolution") of data (batch, channels, spatial...) with weight
// (channels, num_filter / num_group, kernel...), plus bias (num_filter,) unless no_bias, as
// mx.nd.Deconvolution: the gradient of a Convolution with respect to its data. The output is
// (batch, num_filter, out...) with out = (in - 1) stride - 2 pad + dilate (kernel - 1) + 1 + adj,
// or target_shape, from which pad and adj follow as MXNet computes them. cuDNN or im2col + GEMM as
// Convolution. Errors as Convolution's, plus mx::ValueError for adj >= stride.
NDArray Deconvolution(const NDArray& data, const NDArray& weight, const NDArray& bias,
                      const DeconvolutionOptions& options);

struct PoolingOptions {
  std::vector<std::int64_t> kernel = {};  // 1 to 3 extents; ignored with global_pool
  std::string pool_type = "max";          // "max" or "avg"
  bool global_pool = false;               // one window over all of each channel
  std::string pooling_convention = "valid";  // "valid": out rounded down; "full": rounded up
  std::vector<std::int64_t> stride = {};  // empty: 1 along every axis
  std::vector<std::int64_t> pad = {};     // empty: 0
  bool count_include_pad = true;          // avg: padding counts in the divisor
};

// Max or average pooling of data (batch, channels, spatial...), as mx.nd.Pooling: out = (in + 2 pad
// - kernel) / stride + 1, rounded down ("valid") or up ("full"). Max remembers where each maximum
// was, for backward. Recorded for autograd. Bad attributes throw mx::ValueError, data that does not
// fit the kernel (wrong rank, a kernel larger than the padded input) mx::ShapeError, naming Pooling.
NDArray Pooling(const NDArray& data, const PoolingOptions& options);

struct BatchNormOptions {
  double eps = 1e-3;
  double momentum = 0.9;  // running = momentum * running + (1 - momentum) * batch statistic
  bool fix_gamma = true;  // gamma is taken as 1 (and gets no gradient), as MXNet's default
  bool use_global_stats = false;  // normalise by the running statistics in training too
  int axis = 1;           // the channel axis
};

// Batch normalisation over every axis but `axis`, as mx.nd.BatchNorm: in training
// (autograd::is_training() and not use_global_stats) by the batch's mean and variance, updating
// moving_mean and moving_var in place (the variance with Bessel's correction, as cuDNN and PyTorch
// keep it); otherwise by moving_mean and moving_var. gamma, beta, moving_mean and moving_var are
// (channels,). Recorded for autograd (data, gamma, beta). mx::ShapeError for parameters of
// another shape or a bad axis, mx::ValueError for eps <= 0 or momentum outside [0, 1], naming
// BatchNorm.
NDArray BatchNorm(const NDArray& data, const NDArray& gamma, const NDArray& beta, NDArray moving_mean,
                  NDArray moving_var, const BatchNormOptions& options = {});

}  // namespace mx::nd

namespace mx::nd::contrib {

struct SyncBatchNormOptions {
  double eps = 1e-3;
  double momentum = 0.9;
  bool fix_gamma = true;
  bool use_global_stats = false;
  int ndev = 1;         // the GPUs that run the op with this key at each step
  std::string key = ""; // names the group: one per layer (gluon's SyncBatchNorm gives its name)
};

// BatchNorm on axis 1 whose batch statistics are those of the whole batch spread over ndev GPUs,
// as mx.nd.contrib.SyncBatchNorm: each of the ndev GPUs calls it with the same key once per step
// (in training, forward and backward), in the same order as the other layers with keys; their
// streams wait for each other, the host does not. On cpu(0), or with ndev = 1, it is
// BatchNorm(axis=1). mx::ValueError for ndev < 1, ndev > 1 in training on a CPU, a key longer than
// 79 characters, and BatchNorm's errors; mx::DeviceError when a GPU of the group waited more
// than NDG_EXCHANGE_TIMEOUT seconds (60) for the others at an earlier step.
NDArray SyncBatchNorm(const NDArray& data, const NDArray& gamma, const NDArray& beta, NDArray moving_mean,
                      NDArray moving_var, const SyncBatchNormOptions& options = {});

}  // namespace mx::nd::contrib
