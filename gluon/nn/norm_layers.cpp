#include "gluon/nn/norm_layers.hpp"

#include "ndarray/core/describe.hpp"
#include "ndarray/ops/norm.hpp"

namespace mx::gluon::nn {

NormLayer::NormLayer(const char* title, const std::string& kind, double epsilon, bool center, bool scale,
                     const init::InitializerRef& beta_initializer, const init::InitializerRef& gamma_initializer,
                     std::int64_t channels, const std::string& prefix)
    : Block(kind, prefix), title_(title), epsilon_(epsilon) {
  if (!(epsilon > 0)) throw ValueError(std::string(title) + ": epsilon must be positive, got " + std::to_string(epsilon));
  if (channels < 0) {
    throw ValueError(std::string(title) + ": in_channels must be >= 0 (0 = infer at the first forward), got " +
                     std::to_string(channels));
  }
  // MXNet registers gamma first, then beta.
  register_parameter("gamma", Shape{channels}, gamma_initializer).set_grad_req(scale ? "write" : "null");
  register_parameter("beta", Shape{channels}, beta_initializer).set_grad_req(center ? "write" : "null");
}

Parameter NormLayer::gamma() const { return parameter("gamma"); }
Parameter NormLayer::beta() const { return parameter("beta"); }
void NormLayer::cast(DType dtype) { Block::cast(is_half(dtype) ? DType::float32 : dtype); }
std::string NormLayer::title() const { return std::string(title_) + " '" + name() + "'"; }

std::pair<nd::NDArray, nd::NDArray> NormLayer::parameters_for(const nd::NDArray& x, std::int64_t channels) {
  Parameter params[] = {gamma(), beta()};
  for (Parameter& p : params) {
    p.check_initialized();
    if (p.is_deferred()) {
      p.infer_shape(Shape{channels});
    } else if (p.shape()[0] != channels) {
      throw ShapeError(title() + ": input " + nd::describe(x) + " has " + std::to_string(channels) + " channels but " +
                       p.name() + " is " + p.shape().tuple_str());
    }
  }
  return {params[0].data(x.context()), params[1].data(x.context())};
}

namespace {

// axis normalised against x, or mx::ShapeError naming the layer.
int axis_of(const std::string& layer, int axis, const nd::NDArray& x) {
  const int a = axis < 0 ? axis + x.ndim() : axis;
  if (a < 0 || a >= x.ndim()) {
    throw ShapeError(layer + ": axis " + std::to_string(axis) + " is out of range for input " + nd::describe(x));
  }
  return a;
}

}  // namespace

LayerNorm::LayerNorm(const LayerNormOptions& o) : NormLayer("LayerNorm", "layernorm", o), axis_(o.axis) {}

nd::NDArray LayerNorm::forward(const nd::NDArray& x) {
  nd::check_not_none(title().c_str(), x);
  const auto [gamma, beta] = parameters_for(x, x.shape()[axis_of(title(), axis_, x)]);
  return nd::LayerNorm(x, gamma, beta, {.axis = axis_, .eps = epsilon()});
}

namespace {

std::int64_t checked_groups(std::int64_t num_groups) {
  if (num_groups < 1) throw ValueError("GroupNorm: num_groups must be >= 1, got " + std::to_string(num_groups));
  return num_groups;
}

}  // namespace

GroupNorm::GroupNorm(const GroupNormOptions& o)
    : NormLayer("GroupNorm", "groupnorm", o.epsilon, o.center, o.scale, o.beta_initializer, o.gamma_initializer,
                checked_groups(o.num_groups), o.prefix),
      num_groups_(o.num_groups) {}

nd::NDArray GroupNorm::forward(const nd::NDArray& x) {
  nd::check_not_none(title().c_str(), x);
  if (x.ndim() < 2) throw ShapeError(title() + ": input " + nd::describe(x) + " must be (N, C, ...)");
  const auto [gamma, beta] = parameters_for(x, num_groups_);
  return nd::GroupNorm(x, gamma, beta, {.num_groups = num_groups_, .eps = epsilon()});
}

InstanceNorm::InstanceNorm(const InstanceNormOptions& o) : NormLayer("InstanceNorm", "instancenorm", o), axis_(o.axis) {}

nd::NDArray InstanceNorm::forward(const nd::NDArray& x) {
  nd::check_not_none(title().c_str(), x);
  const int axis = axis_of(title(), axis_, x);
  const auto [gamma, beta] = parameters_for(x, x.shape()[axis]);
  if (axis == 1) return nd::InstanceNorm(x, gamma, beta, {.eps = epsilon()});
  return nd::InstanceNorm(x.swapaxes(1, axis), gamma, beta, {.eps = epsilon()}).swapaxes(1, axis);
}

}  // namespace mx::gluon::nn
