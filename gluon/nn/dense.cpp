#include "gluon/nn/dense.hpp"

#include "gluon/nn/activation.hpp"
#include "ndarray/autograd.hpp"
#include "ndarray/backend.hpp"
#include "ndarray/checks.hpp"
#include "ndarray/elementwise.hpp"
#include "ndarray/linalg.hpp"
#include "ndarray/reduce.hpp"

namespace mx::gluon::nn {

namespace {

// d activation / d input, from the activation's output y.
nd::NDArray activation_slope(UnaryOp act, const nd::NDArray& y) {
  switch (act) {
    case UnaryOp::relu: return y > 0.0;
    case UnaryOp::sigmoid: return y * (1.0 - y);
    case UnaryOp::tanh: return 1.0 - nd::square(y);
    case UnaryOp::softrelu: return 1.0 - nd::exp(-y);  // sigmoid(x), as y = log(1 + e^x)
    default: throw ValueError(std::string("Dense: no derivative for activation ") + op_name(act));
  }
}

}  // namespace

Dense::Dense(std::int64_t units, const std::string& activation, bool use_bias, std::int64_t in_units,
             init::InitializerRef weight_initializer, init::InitializerRef bias_initializer, const std::string& prefix)
    : Block("dense", prefix), units_(units), use_bias_(use_bias), activation_(activation_op(activation)) {
  if (units <= 0) throw ValueError("Dense: units must be positive, got " + std::to_string(units));
  if (in_units < 0) throw ValueError("Dense: in_units must be >= 0 (0 = infer at the first forward), got " + std::to_string(in_units));
  register_parameter("weight", Shape{units, in_units}, std::move(weight_initializer));
  if (use_bias) register_parameter("bias", Shape{units}, std::move(bias_initializer));
}

Parameter Dense::weight() const { return parameter("weight"); }

Parameter Dense::bias() const {
  if (!use_bias_) throw ValueError("Dense '" + name() + "' was created with use_bias=false and has no bias");
  return parameter("bias");
}

nd::NDArray Dense::forward(const nd::NDArray& x) {
  nd::detail::check_not_none("Dense", x);
  if (x.ndim() < 2) {
    throw ShapeError("Dense '" + name() + "': input must be (batch, features...), got " + nd::detail::describe(x));
  }
  const nd::NDArray flat = x.flatten();  // (batch, in_units)
  Parameter w = weight();
  w.check_initialized();  // before the shapes: a weight never initialised has no in_units to compare
  const std::int64_t in_units = flat.shape()[1];
  if (w.is_deferred()) {
    w.infer_shape(Shape{units_, in_units});
  } else if (w.shape()[1] != in_units) {
    throw ShapeError("Dense '" + name() + "': input " + nd::detail::describe(x) + " has " + std::to_string(in_units) +
                     " features per sample but the weight " + w.shape().tuple_str() + " expects " +
                     std::to_string(w.shape()[1]));
  }
  const nd::NDArray wd = w.data(x.context());
  const nd::NDArray product = nd::dot(flat, wd, false, true);  // (batch, units), recorded
  if (!use_bias_ && !activation_) return product;
  const nd::NDArray b = use_bias_ ? bias().data(x.context()) : nd::NDArray();
  // The bias and activation in one pass over the product, in place (the dot saved no output).
  nd::NDArray out = product.detach();
  backend(out.context()).bias_activation(out.context(), out.dtype(), out.data(), use_bias_ ? b.data() : nullptr,
                                         out.shape()[0], units_, activation_);
  if (autograd::needs_record({&product, &b})) {
    autograd::record_op("dense", out, {&product, use_bias_ ? &b : nullptr},
                        [act = activation_, y = out.detach(), use_bias = use_bias_](const nd::NDArray& g) {
                          const nd::NDArray g_in = act ? g * activation_slope(*act, y) : g;
                          return std::vector<nd::NDArray>{g_in, use_bias ? nd::sum(g_in, 0) : nd::NDArray()};
                        });
  }
  return out;
}

}  // namespace mx::gluon::nn
