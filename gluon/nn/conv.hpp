#pragma once
// Convolution and pooling layers, as mx.gluon.nn: Conv1D/2D/3D, Conv1DTranspose/2D/3D,
// MaxPool1D/2D/3D, AvgPool1D/2D/3D,
// GlobalMaxPool2D and GlobalAvgPool2D, on NCW / NCHW / NCDHW data. MXNet's keyword arguments are
// an options struct, for designated initialisers:
//
//   nn::Conv2D(6, 5, {.padding = 2, .activation = "sigmoid"})     // 6 channels, 5×5 kernel
//   nn::AvgPool2D(2, {.strides = 2})
//
// in_channels = 0 defers the weight's shape until the first forward pass.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "gluon/block.hpp"
#include "ndarray/ops/op_kinds.hpp"

namespace mx::gluon::nn {

// A size per spatial axis: one number for every axis (5 is (5, 5) for a 2-D layer) or one each.
struct Extents {
  Extents(std::int64_t v) : values{v} {}  // NOLINT: implicit, as MXNet takes an int or a tuple
  Extents(std::initializer_list<std::int64_t> v) : values(v) {}
  // The extents for `axes` axes; mx::ValueError naming layer and what for a count other than 1 or
  // axes, or an extent below least.
  std::vector<std::int64_t> expand(int axes, const std::string& layer, const char* what, std::int64_t least) const;
  std::vector<std::int64_t> values;
};

struct ConvOptions {
  Extents strides = 1;
  Extents padding = 0;
  Extents dilation = 1;
  Extents output_padding = 0;  // transposed layers only: added at the end of each output axis
  std::int64_t groups = 1;
  std::string activation = "";  // "", "relu", "sigmoid", "tanh", "softrelu"
  bool use_bias = true;
  init::InitializerRef weight_initializer = {};
  init::InitializerRef bias_initializer = init::Zero();
  std::int64_t in_channels = 0;  // 0: inferred at the first forward pass
  std::string prefix = "";
  // MXNet's layout: "" (channels first: NCW, NCHW, NCDHW) or channels last ("NWC", "NHWC",
  // "NDHWC"; not for the transposed layers): data (batch, spatial..., channels), weight (channels,
  // kernel..., in_channels / groups).
  std::string layout = "";
};

// An N-d convolution: out = activation(Convolution(x, weight, bias)), with weight (channels,
// in_channels / groups, kernel...) and bias (channels,); transposed (Conv2DTranspose):
// activation(Deconvolution(x, weight, bias)) with weight (in_channels, channels / groups, kernel...). Bad arguments (channels < 1, groups not
// dividing channels, a kernel, stride or dilation < 1, negative padding, tuples of the wrong length)
// throw mx::ValueError naming the layer; an input of the wrong rank or channel count mx::ShapeError
// naming the layer and the shapes.
class Conv : public Block {
 public:
  Conv(int axes, std::int64_t channels, const Extents& kernel_size, const ConvOptions& options, const char* kind,
       bool transpose = false);
  nd::NDArray forward(const nd::NDArray& x) override;

  Parameter weight() const;
  Parameter bias() const;  // throws when use_bias is false
  std::int64_t channels() const { return channels_; }

 private:
  std::string layer_;  // "Conv2D"
  std::int64_t channels_, groups_;
  std::vector<std::int64_t> kernel_, strides_, padding_, dilation_, output_padding_;
  bool transpose_;
  bool use_bias_;
  std::string layout_;
  bool channels_last_;
  Shape weight_shape(std::int64_t in_channels) const;
  std::optional<UnaryOp> activation_;
};

struct Conv1D : Conv {
  Conv1D(std::int64_t channels, const Extents& kernel_size, const ConvOptions& options = {})
      : Conv(1, channels, kernel_size, options, "Conv1D") {}
};
struct Conv2D : Conv {
  Conv2D(std::int64_t channels, const Extents& kernel_size, const ConvOptions& options = {})
      : Conv(2, channels, kernel_size, options, "Conv2D") {}
};
struct Conv3D : Conv {
  Conv3D(std::int64_t channels, const Extents& kernel_size, const ConvOptions& options = {})
      : Conv(3, channels, kernel_size, options, "Conv3D") {}
};

struct Conv1DTranspose : Conv {
  Conv1DTranspose(std::int64_t channels, const Extents& kernel_size, const ConvOptions& options = {})
      : Conv(1, channels, kernel_size, options, "Conv1DTranspose", true) {}
};
struct Conv2DTranspose : Conv {
  Conv2DTranspose(std::int64_t channels, const Extents& kernel_size, const ConvOptions& options = {})
      : Conv(2, channels, kernel_size, options, "Conv2DTranspose", true) {}
};
struct Conv3DTranspose : Conv {
  Conv3DTranspose(std::int64_t channels, const Extents& kernel_size, const ConvOptions& options = {})
      : Conv(3, channels, kernel_size, options, "Conv3DTranspose", true) {}
};

struct PoolOptions {
  std::optional<Extents> strides = std::nullopt;  // default: pool_size
  Extents padding = 0;
  bool ceil_mode = false;          // round the output size up (MXNet's pooling_convention "full")
  bool count_include_pad = true;   // average pooling: padding counts in the divisor
  std::string prefix = "";
};

// Max or average pooling over pool_size windows (global: one window over each channel). Bad
// arguments throw mx::ValueError naming the layer; an input of the wrong rank mx::ShapeError.
class Pool : public Block {
 public:
  Pool(int axes, bool max, const Extents& pool_size, const PoolOptions& options, const char* kind);
  Pool(int axes, bool max, const char* kind, const std::string& prefix);  // global pooling
  nd::NDArray forward(const nd::NDArray& x) override;

 private:
  std::string layer_;
  int axes_;
  bool max_, global_;
  std::vector<std::int64_t> pool_size_, strides_, padding_;
  bool ceil_mode_, count_include_pad_;
};

#define NDG_POOL_LAYER(NAME, AXES, MAX)                                              \
  struct NAME : Pool {                                                               \
    explicit NAME(const Extents& pool_size = 2, const PoolOptions& options = {})     \
        : Pool(AXES, MAX, pool_size, options, #NAME) {}                              \
  };
NDG_POOL_LAYER(MaxPool1D, 1, true)
NDG_POOL_LAYER(MaxPool2D, 2, true)
NDG_POOL_LAYER(MaxPool3D, 3, true)
NDG_POOL_LAYER(AvgPool1D, 1, false)
NDG_POOL_LAYER(AvgPool2D, 2, false)
NDG_POOL_LAYER(AvgPool3D, 3, false)
#undef NDG_POOL_LAYER

struct GlobalMaxPool2D : Pool {
  explicit GlobalMaxPool2D(const std::string& prefix = "") : Pool(2, true, "GlobalMaxPool2D", prefix) {}
};
struct GlobalAvgPool2D : Pool {
  explicit GlobalAvgPool2D(const std::string& prefix = "") : Pool(2, false, "GlobalAvgPool2D", prefix) {}
};

}  // namespace mx::gluon::nn
