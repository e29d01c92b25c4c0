#include "ndarray/nn.hpp"

#include <optional>

#include "ndarray/autograd.hpp"
#include "ndarray/backend.hpp"
#include "ndarray/checks.hpp"
#include "ndarray/contiguous.hpp"
#include "ndarray/elementwise.hpp"
#include "ndarray/linalg.hpp"
#include "ndarray/ops/elementwise_kernels.hpp"
#include "ndarray/reduce.hpp"

namespace mx::nd {
namespace {

std::optional<UnaryOp> activation_of(const std::string& act_type) {
  if (act_type.empty()) return std::nullopt;
  if (act_type == "relu") return UnaryOp::relu;
  if (act_type == "sigmoid") return UnaryOp::sigmoid;
  if (act_type == "tanh") return UnaryOp::tanh;
  if (act_type == "softrelu") return UnaryOp::softrelu;
  throw ValueError("FullyConnected: unknown act_type \"" + act_type +
                   "\"; valid: \"\", \"relu\", \"sigmoid\", \"tanh\", \"softrelu\"");
}

}  // namespace

NDArray FullyConnected(const NDArray& x, const NDArray& weight, const NDArray& bias, std::int64_t num_hidden,
                       bool no_bias, bool flatten, const std::string& act_type) {
  const char* op = "FullyConnected";
  const std::optional<UnaryOp> act = activation_of(act_type);
  if (num_hidden <= 0) throw ValueError("FullyConnected: num_hidden must be positive, got " + std::to_string(num_hidden));
  detail::check_same_context(op, x, weight);
  if (!no_bias) detail::check_same_context(op, x, bias);
  detail::check_same_dtype(op, x, weight);
  if (!no_bias) detail::check_same_dtype(op, x, bias);
  detail::check_floating(op, x);
  if (x.ndim() < (flatten ? 2 : 1)) {
    throw ShapeError(std::string(op) + ": data must be " + (flatten ? "(batch, in...)" : "(..., in)") + ", got " +
                     detail::describe(x));
  }
  // x as (rows, in).
  std::int64_t rows = 1;
  for (int axis = 0; axis < (flatten ? 1 : x.ndim() - 1); ++axis) rows *= x.shape()[axis];
  const NDArray x2 = flatten ? x.flatten() : x.reshape({rows, x.shape()[x.ndim() - 1]});
  const std::int64_t in_units = x2.shape()[1];
  if (weight.shape() != Shape{num_hidden, in_units}) {
    throw ShapeError(std::string(op) + ": weight " + detail::describe(weight) + " does not fit data " +
                     detail::describe(x) + " and num_hidden " + std::to_string(num_hidden) + "; expected " +
                     Shape{num_hidden, in_units}.tuple_str());
  }
  if (!no_bias && bias.shape() != Shape{num_hidden}) {
    throw ShapeError(std::string(op) + ": bias " + detail::describe(bias) + " does not fit num_hidden " +
                     std::to_string(num_hidden) + "; expected " + Shape{num_hidden}.tuple_str());
  }
  // Output shape when not flattening: x's leading axes, then num_hidden.
  auto shaped = [&](const NDArray& out2) {
    if (flatten) return out2;
    std::vector<std::int64_t> dims(x.shape().begin(), x.shape().end());
    dims.back() = num_hidden;
    return out2.reshape(Shape(dims));
  };
  const NDArray product = dot(x2, weight, false, true);  // (rows, num_hidden), recorded
  if (no_bias && !act) return shaped(product);
  // The bias and activation in one pass over the product, in place (the dot saved no output).
  NDArray out = product.detach();
  if (out.size() > 0) {
    backend(out.context()).bias_activation(out.context(), out.dtype(), out.data(), no_bias ? nullptr : detail::dense(bias).data(),
                                           out.shape()[0], num_hidden, act);
  }
  if (autograd::needs_record({&product, no_bias ? nullptr : &bias})) {
    autograd::record_op(op, out, {&product, no_bias ? nullptr : &bias},
                        [act, y = out.detach(), no_bias](const NDArray& g) {
                          // The activation's own gradient kernel, fed y for x: activations write
                          // their derivative from the output (ndarray/ops/elementwise_list.hpp).
                          const NDArray g_in = act ? op::invoke1(op::unary_backward_op(*act), {g, y, y}) : g;
                          return std::vector<NDArray>{g_in, no_bias ? NDArray() : sum(g_in, 0)};
                        });
  }
  return shaped(out);
}

}  // namespace mx::nd
