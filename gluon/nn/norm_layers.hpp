#pragma once
// nn::LayerNorm, nn::GroupNorm and nn::InstanceNorm, as mx.gluon.nn's (MXNet 1.9): normalisation by
// each sample's own statistics, in training and prediction alike (no running statistics), then a
// learned scale gamma and shift beta per channel (per group for GroupNorm, as MXNet 1.x's).
// Parameters gamma (ones) and beta (zeros), shape (in_channels,), inferred at the first forward
// pass when in_channels is 0 ((num_groups,) for GroupNorm); center = false keeps beta at 0,
// scale = false keeps gamma at 1 (grad_req "null"), as MXNet's.
//
//   nn::LayerNorm()                            // over the last axis: a Transformer's
//   nn::GroupNorm({.num_groups = 32})          // (N, C, ...) with C channels in 32 groups
//   nn::InstanceNorm()                         // (N, C, ...) each channel of each sample alone
//
// For float16 and bfloat16 inputs the parameters may stay float32 (cast keeps them so, as
// BatchNorm's): the ops take float32 gamma and beta with 16-bit data.
#include <cstdint>
#include <string>
#include <utility>

#include "gluon/block.hpp"

namespace mx::gluon::nn {

// The options of each layer, as MXNet's arguments: epsilon; center = false keeps beta at 0,
// scale = false keeps gamma at 1; in_channels 0 infers them at the first forward pass.
struct LayerNormOptions {
  int axis = -1;
  double epsilon = 1e-5;
  bool center = true, scale = true;
  init::InitializerRef beta_initializer = init::Zero(), gamma_initializer = init::One();
  std::int64_t in_channels = 0;
  std::string prefix = "";
};

// gamma and beta (num_groups,): MXNet 1.x's GroupNorm has no in_channels.
struct GroupNormOptions {
  std::int64_t num_groups = 1;
  double epsilon = 1e-5;
  bool center = true, scale = true;
  init::InitializerRef beta_initializer = init::Zero(), gamma_initializer = init::One();
  std::string prefix = "";
};

// MXNet's defaults: scale = false (gamma stays 1); axis 1, the channels (another axis is moved to 1
// and back, as MXNet's swapaxes).
struct InstanceNormOptions {
  int axis = 1;
  double epsilon = 1e-5;
  bool center = true, scale = false;
  init::InitializerRef beta_initializer = init::Zero(), gamma_initializer = init::One();
  std::int64_t in_channels = 0;
  std::string prefix = "";
};

// What the three layers share: the parameters, checked against the input's channels.
class NormLayer : public Block {
 public:
  Parameter gamma() const;
  Parameter beta() const;
  // float16 and bfloat16 keep float32 parameters.
  void cast(DType dtype) override;

 protected:
  // title names the layer in errors ("LayerNorm"), kind its parameters ("layernorm0_").
  template <class Options>
  NormLayer(const char* title, const std::string& kind, const Options& o)
      : NormLayer(title, kind, o.epsilon, o.center, o.scale, o.beta_initializer, o.gamma_initializer, o.in_channels,
                  o.prefix) {}
  // gamma and beta on x's context for `channels` channels, completed if deferred; mx::ShapeError
  // naming the layer when they were made for another number.
  std::pair<nd::NDArray, nd::NDArray> parameters_for(const nd::NDArray& x, std::int64_t channels);
  // The layer's name for errors: "LayerNorm 'layernorm0'".
  std::string title() const;
  double epsilon() const { return epsilon_; }
  // parameters of `channels` values each (0: inferred at the first forward pass).
  NormLayer(const char* title, const std::string& kind, double epsilon, bool center, bool scale,
            const init::InitializerRef& beta_initializer, const init::InitializerRef& gamma_initializer,
            std::int64_t channels, const std::string& prefix);

 private:

  const char* title_;
  double epsilon_;
};

class LayerNorm : public NormLayer {
 public:
  explicit LayerNorm(const LayerNormOptions& options = {});
  // x (..., C, ...), C = shape[axis] -> the same shape.
  nd::NDArray forward(const nd::NDArray& x) override;

 private:
  int axis_;
};

class GroupNorm : public NormLayer {
 public:
  explicit GroupNorm(const GroupNormOptions& options = {});
  // x (N, C, ...), C divisible by num_groups -> the same shape; a group's gamma and beta for all
  // of its channels.
  nd::NDArray forward(const nd::NDArray& x) override;

 private:
  std::int64_t num_groups_;
};

class InstanceNorm : public NormLayer {
 public:
  explicit InstanceNorm(const InstanceNormOptions& options = {});
  // x (N, C, spatial...) with the channels on `axis` -> the same shape.
  nd::NDArray forward(const nd::NDArray& x) override;

 private:
  int axis_;
};

}  // namespace mx::gluon::nn
