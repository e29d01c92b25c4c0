#pragma once
// Neural-network ops, as MXNet's mx.nd.FullyConnected and mx.nd.Dropout.
#include <cstdint>
#include <optional>
#include <string>

#include "ndarray/array.hpp"
#include "ndarray/op_kinds.hpp"

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

}  // namespace mx::nd
