#include "gluon/nn/dense.hpp"

#include "gluon/nn/activation.hpp"
#include "ndarray/core/describe.hpp"
#include "ndarray/ops/nn.hpp"

namespace mx::gluon::nn {

Dense::Dense(std::int64_t units, const std::string& activation, bool use_bias, std::int64_t in_units,
             init::InitializerRef weight_initializer, init::InitializerRef bias_initializer, const std::string& prefix)
    : Dense(units, {activation, use_bias, true, in_units, std::move(weight_initializer), std::move(bias_initializer),
                    prefix}) {}

Dense::Dense(std::int64_t units, const DenseOptions& o)
    : Block("dense", o.prefix), units_(units), use_bias_(o.use_bias), flatten_(o.flatten),
      activation_(activation_op(o.activation)) {
  if (units <= 0) throw ValueError("Dense: units must be positive, got " + std::to_string(units));
  if (o.in_units < 0) {
    throw ValueError("Dense: in_units must be >= 0 (0 = infer at the first forward), got " + std::to_string(o.in_units));
  }
  register_parameter("weight", Shape{units, o.in_units}, o.weight_initializer);
  if (o.use_bias) register_parameter("bias", Shape{units}, o.bias_initializer);
}

Parameter Dense::weight() const { return parameter("weight"); }

Parameter Dense::bias() const {
  if (!use_bias_) throw ValueError("Dense '" + name() + "' was created with use_bias=false and has no bias");
  return parameter("bias");
}

nd::NDArray Dense::forward(const nd::NDArray& x) {
  nd::check_not_none("Dense", x);
  if (x.ndim() < 2) {
    throw ShapeError("Dense '" + name() + "': input must be (batch, features...), got " + nd::describe(x));
  }
  Parameter w = weight();
  w.check_initialized();  // before the shapes: a weight never initialised has no in_units to compare
  std::int64_t in_units = 1;  // x flattened to (batch, in_units), or its last axis
  for (int axis = flatten_ ? 1 : x.ndim() - 1; axis < x.ndim(); ++axis) in_units *= x.shape()[axis];
  if (w.is_deferred()) {
    w.infer_shape(Shape{units_, in_units});
  } else if (w.shape()[1] != in_units) {
    throw ShapeError("Dense '" + name() + "': input " + nd::describe(x) + " has " + std::to_string(in_units) +
                     (flatten_ ? " features per sample" : " features on its last axis") + " but the weight " +
                     w.shape().tuple_str() + " expects " +
                     std::to_string(w.shape()[1]));
  }
  // The weight first, so that an input on a context without parameters is reported for the weight.
  const nd::NDArray wx = w.data(x.context());
  const nd::NDArray b = use_bias_ ? bias().data(x.context()) : nd::NDArray();
  // One matrix product, then the bias and activation in one fused pass.
  return nd::FullyConnected(x, wx, b, units_, !use_bias_, flatten_,
                            activation_ ? op_name(*activation_) : "");
}

}  // namespace mx::gluon::nn
