#include "gluon/nn/conv.hpp"

#include <algorithm>

#include "gluon/nn/activation.hpp"
#include "ndarray/core/describe.hpp"
#include "ndarray/ops/attrs.hpp"  // channels_last_layout: the op's own reading of layout
#include "ndarray/ops/nn.hpp"

namespace mx::gluon::nn {

namespace {

std::string tuple_of(const std::vector<std::int64_t>& v) { return Shape(v).tuple_str(); }

// The op's shape and value errors, prefixed with the layer that ran it.
template <class F>
nd::NDArray as_layer(const std::string& layer, F&& run) {
  try {
    return run();
  } catch (const ShapeError& e) {
    throw ShapeError(layer + ": " + e.what());
  } catch (const ValueError& e) {
    throw ValueError(layer + ": " + e.what());
  }
}

// x must be (batch, channels, `axes` spatial axes).
void check_rank(const std::string& layer, const nd::NDArray& x, int axes) {
  nd::check_not_none(layer.c_str(), x);
  if (x.ndim() != axes + 2) {
    throw ShapeError(layer + ": input must be (batch, channels, " + std::to_string(axes) + " spatial axes), got " +
                     nd::describe(x));
  }
}

}  // namespace

std::vector<std::int64_t> Extents::expand(int axes, const std::string& layer, const char* what,
                                          std::int64_t least) const {
  if (values.size() != 1 && values.size() != static_cast<std::size_t>(axes)) {
    throw ValueError(layer + ": " + what + " " + tuple_of(values) + " must have 1 or " + std::to_string(axes) +
                     " extents");
  }
  for (std::int64_t v : values) {
    if (v < least) {
      throw ValueError(layer + ": " + what + " " + tuple_of(values) + " must be " +
                       (least == 0 ? "non-negative" : "positive"));
    }
  }
  return values.size() == 1 ? std::vector<std::int64_t>(static_cast<std::size_t>(axes), values[0]) : values;
}

// --- Conv -----------------------------------------------------------------------------------------

Conv::Conv(int axes, std::int64_t channels, const Extents& kernel_size, const ConvOptions& o, const char* kind,
           bool transpose)
    : Block(transpose ? "conv_transpose" : "conv", o.prefix),
      layer_(kind),
      channels_(channels),
      groups_(o.groups),
      kernel_(kernel_size.expand(axes, kind, "kernel_size", 1)),
      strides_(o.strides.expand(axes, kind, "strides", 1)),
      padding_(o.padding.expand(axes, kind, "padding", 0)),
      dilation_(o.dilation.expand(axes, kind, "dilation", 1)),
      output_padding_(o.output_padding.expand(axes, kind, "output_padding", 0)),
      transpose_(transpose),
      use_bias_(o.use_bias),
      layout_(o.layout),
      channels_last_(op::channels_last_layout(kind, o.layout, axes)),
      activation_(activation_op(o.activation)) {
  if (channels < 1) throw ValueError(layer_ + ": channels must be positive, got " + std::to_string(channels));
  if (transpose && channels_last_) {
    throw ValueError(layer_ + ": layout \"" + o.layout + "\" is not supported by the transposed convolutions");
  }
  if (o.groups < 1 || channels % o.groups != 0 || o.in_channels % o.groups != 0) {
    throw ValueError(layer_ + ": groups " + std::to_string(o.groups) + " must divide channels " +
                     std::to_string(channels) + " and in_channels " + std::to_string(o.in_channels));
  }
  if (o.in_channels < 0) {
    throw ValueError(layer_ + ": in_channels must be >= 0 (0 = infer at the first forward), got " +
                     std::to_string(o.in_channels));
  }
  if (!transpose && std::any_of(output_padding_.begin(), output_padding_.end(), [](std::int64_t v) { return v != 0; })) {
    throw ValueError(layer_ + ": output_padding is for transposed convolutions (Conv2DTranspose), got " +
                     tuple_of(output_padding_));
  }
  for (std::size_t d = 0; d < output_padding_.size(); ++d) {
    if (transpose && output_padding_[d] >= strides_[d]) {
      throw ValueError(layer_ + ": output_padding " + tuple_of(output_padding_) + " must be smaller than strides " +
                       tuple_of(strides_) + " along every axis");
    }
  }
  register_parameter("weight", weight_shape(o.in_channels), o.weight_initializer);
  if (use_bias_) register_parameter("bias", Shape{channels}, o.bias_initializer);
  layer_ += " '" + name() + "'";
}

// (channels, in_channels / groups, kernel...), or transposed (in_channels, channels / groups,
// kernel...), or channels last (channels, kernel..., in_channels / groups).
Shape Conv::weight_shape(std::int64_t in_channels) const {
  if (channels_last_) {
    std::vector<std::int64_t> shape{channels_};
    shape.insert(shape.end(), kernel_.begin(), kernel_.end());
    shape.push_back(in_channels / groups_);
    return Shape(shape);
  }
  std::vector<std::int64_t> shape =
      transpose_ ? std::vector<std::int64_t>{in_channels, channels_ / groups_} : std::vector<std::int64_t>{channels_, in_channels / groups_};
  shape.insert(shape.end(), kernel_.begin(), kernel_.end());
  return Shape(shape);
}

Parameter Conv::weight() const { return parameter("weight"); }

Parameter Conv::bias() const {
  if (!use_bias_) throw ValueError(layer_ + " was created with use_bias=false and has no bias");
  return parameter("bias");
}

nd::NDArray Conv::forward(const nd::NDArray& x) {
  check_rank(layer_, x, static_cast<int>(kernel_.size()));
  Parameter w = weight();
  w.check_initialized();
  const std::int64_t in_channels = x.shape()[channels_last_ ? x.ndim() - 1 : 1];
  if (in_channels % groups_ != 0) {
    throw ShapeError(layer_ + ": input " + nd::describe(x) + " has " + std::to_string(in_channels) +
                     " channels, which groups " + std::to_string(groups_) + " does not divide");
  }
  if (w.is_deferred()) {
    w.infer_shape(weight_shape(in_channels));
  } else if (const std::int64_t expects = transpose_       ? w.shape()[0]
                                         : channels_last_ ? w.shape()[w.shape().ndim() - 1] * groups_
                                                          : w.shape()[1] * groups_;
             expects != in_channels) {
    throw ShapeError(layer_ + ": input " + nd::describe(x) + " has " + std::to_string(in_channels) +
                     " channels but the weight " + w.shape().tuple_str() + " expects " + std::to_string(expects));
  }
  const nd::NDArray wx = w.data(x.context());
  const nd::NDArray b = use_bias_ ? bias().data(x.context()) : nd::NDArray();
  // The activation is fused into the op's bias pass.
  const std::string act = activation_ ? op_name(*activation_) : "";
  return as_layer(layer_, [&] {
    if (transpose_) {
      return nd::Deconvolution(
          x, wx, b, {kernel_, strides_, dilation_, padding_, output_padding_, {}, channels_, groups_, !use_bias_, act});
    }
    return nd::Convolution(x, wx, b, {kernel_, strides_, dilation_, padding_, channels_, groups_, !use_bias_, act, layout_});
  });
}

// --- Pool -----------------------------------------------------------------------------------------

Pool::Pool(int axes, bool max, const Extents& pool_size, const PoolOptions& o, const char* kind)
    : Block("pool", o.prefix),
      layer_(kind),
      axes_(axes),
      max_(max),
      global_(false),
      pool_size_(pool_size.expand(axes, kind, "pool_size", 1)),
      strides_(o.strides ? o.strides->expand(axes, kind, "strides", 1) : pool_size_),
      padding_(o.padding.expand(axes, kind, "padding", 0)),
      ceil_mode_(o.ceil_mode),
      count_include_pad_(o.count_include_pad) {
  for (std::size_t d = 0; d < padding_.size(); ++d) {
    if (padding_[d] >= pool_size_[d]) {
      throw ValueError(layer_ + ": padding " + tuple_of(padding_) + " must be smaller than pool_size " +
                       tuple_of(pool_size_));
    }
  }
  layer_ += " '" + name() + "'";
}

Pool::Pool(int axes, bool max, const char* kind, const std::string& prefix)
    : Block("pool", prefix), layer_(kind), axes_(axes), max_(max), global_(true), ceil_mode_(false),
      count_include_pad_(true) {
  layer_ += " '" + name() + "'";
}

nd::NDArray Pool::forward(const nd::NDArray& x) {
  check_rank(layer_, x, axes_);
  nd::PoolingOptions o{pool_size_, max_ ? "max" : "avg", global_, ceil_mode_ ? "full" : "valid", strides_,
                       padding_, count_include_pad_};
  return as_layer(layer_, [&] { return nd::Pooling(x, o); });
}

}  // namespace mx::gluon::nn
