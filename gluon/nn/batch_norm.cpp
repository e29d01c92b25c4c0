#include "gluon/nn/batch_norm.hpp"

#include "ndarray/core/describe.hpp"
#include "ndarray/ops/nn.hpp"

namespace mx::gluon::nn {

BatchNorm::BatchNorm(const BatchNormOptions& o) : BatchNorm("BatchNorm", "batchnorm", o) {}

BatchNorm::BatchNorm(const char* title, const std::string& kind, const BatchNormOptions& o)
    : Block(kind, o.prefix), options_(o), title_(title) {
  const std::string layer = title;
  if (!(o.epsilon > 0)) throw ValueError(layer + ": epsilon must be positive, got " + std::to_string(o.epsilon));
  if (!(o.momentum >= 0 && o.momentum <= 1)) {
    throw ValueError(layer + ": momentum must be in [0, 1], got " + std::to_string(o.momentum));
  }
  if (o.in_channels < 0) {
    throw ValueError(layer + ": in_channels must be >= 0 (0 = infer at the first forward), got " +
                     std::to_string(o.in_channels));
  }
  const Shape shape{o.in_channels};
  // gamma and beta are trained unless scale / center is off; the running statistics never are.
  register_parameter("gamma", shape, o.gamma_initializer).set_grad_req(o.scale ? "write" : "null");
  register_parameter("beta", shape, o.beta_initializer).set_grad_req(o.center ? "write" : "null");
  register_parameter("running_mean", shape, o.running_mean_initializer).set_grad_req("null");
  register_parameter("running_var", shape, o.running_variance_initializer).set_grad_req("null");
  options_.beta_initializer = options_.gamma_initializer = options_.running_mean_initializer =
      options_.running_variance_initializer = {};  // held by the parameters
}

Parameter BatchNorm::gamma() const { return parameter("gamma"); }
Parameter BatchNorm::beta() const { return parameter("beta"); }
void BatchNorm::cast(DType dtype) { Block::cast(is_half(dtype) ? DType::float32 : dtype); }

Parameter BatchNorm::running_mean() const { return parameter("running_mean"); }
Parameter BatchNorm::running_var() const { return parameter("running_var"); }

std::array<nd::NDArray, 4> BatchNorm::parameters_for(const nd::NDArray& x) {
  const std::string layer = std::string(title_) + " '" + name() + "'";
  nd::check_not_none(layer.c_str(), x);
  const int axis = options_.axis < 0 ? options_.axis + x.ndim() : options_.axis;
  if (axis < 0 || axis >= x.ndim()) {
    throw ShapeError(layer + ": axis " + std::to_string(options_.axis) + " is out of range for input " + nd::describe(x));
  }
  const std::int64_t channels = x.shape()[axis];
  Parameter params[] = {gamma(), beta(), running_mean(), running_var()};
  for (Parameter& p : params) {
    p.check_initialized();
    if (p.is_deferred()) {
      p.infer_shape(Shape{channels});
    } else if (p.shape()[0] != channels) {
      throw ShapeError(layer + ": input " + nd::describe(x) + " has " + std::to_string(channels) + " channels on axis " +
                       std::to_string(options_.axis) + " but " + p.name() + " is " + p.shape().tuple_str());
    }
  }
  const Context ctx = x.context();
  return {params[0].data(ctx), params[1].data(ctx), params[2].data(ctx), params[3].data(ctx)};
}

nd::NDArray BatchNorm::forward(const nd::NDArray& x) {
  const auto [gamma, beta, mean, var] = parameters_for(x);
  return nd::BatchNorm(x, gamma, beta, mean, var,
                       {.eps = options_.epsilon, .momentum = options_.momentum, .fix_gamma = !options_.scale,
                        .use_global_stats = options_.use_global_stats, .axis = options_.axis});
}

}  // namespace mx::gluon::nn
