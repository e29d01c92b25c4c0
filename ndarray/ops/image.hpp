#pragma once
// Image ops: mx.nd.contrib.BilinearResize2D, and the ops of mx.nd.image that data augmentation
// runs (gluon::data::vision::transforms calls them on an image or a batch, on any context).
#include <cstdint>
#include <vector>

#include "ndarray/core/array.hpp"

namespace mx::nd::contrib {

struct BilinearResizeOptions {
  std::int64_t height = 1, width = 1;  // the output's extents
  double scale_height = 0, scale_width = 0;  // when > 0, the input's extents times these instead
  // True (MXNet's default): the corner pixels of input and output align; false: their pixel
  // centres do (OpenCV's INTER_LINEAR, MXNet's image.resize and transforms.Resize).
  bool align_corners = true;
};

// data (batch, channels, height, width), any floating dtype, resized by bilinear interpolation
// to (batch, channels, out_height, out_width), as mx.nd.contrib.BilinearResize2D in mode "size".
// Differentiable in data. Data of another rank or dtype, or an output extent < 1, is a typed
// error naming _contrib_BilinearResize2D.
NDArray BilinearResize2D(const NDArray& data, const BilinearResizeOptions& options);

}  // namespace mx::nd::contrib

namespace mx::nd::image {

// An image (height, width, channels) or a batch (n, height, width, channels) of any dtype with
// values in [0, 255] as float32 (channels, height, width) / (n, channels, height, width) with values
// in [0, 1] (x / 255.0f), as mx.nd.image.to_tensor. Another rank is an mx::ShapeError.
NDArray to_tensor(const NDArray& data);

// A tensor (channels, height, width) or a batch (n, channels, height, width) of a floating dtype,
// normalized per channel: (x - mean[c]) / std[c], as mx.nd.image.normalize. mean and std each hold
// one value (every channel) or one per channel, at most 4; std > 0. Differentiable in data.
NDArray normalize(const NDArray& data, const std::vector<float>& mean, const std::vector<float>& std);

// From each image of data (n, h, w, c) (uint8 or floating), the box boxes[i] = (x0, y0, width,
// height) (int32 (n, 4), in pixels; it may reach outside the image, whose missing pixels read
// fill) resized to (height, width) by interp 0 (nearest) or 1 (bilinear, pixel centres aligned,
// as OpenCV's INTER_LINEAR), then mirrored where flips[i] (int32 (n,)) has bit 0 (left-right) or
// bit 1 (top-bottom): (n, height, width, c) of data's dtype, uint8 values rounded. A box of the
// output's size copies its pixels exactly. Crops, pads, resizes and flips of the transforms are
// this op; it has no gradient.
NDArray crop_resize(const NDArray& data, const NDArray& boxes, const NDArray& flips, std::int64_t height,
                    std::int64_t width, int interp = 1, double fill = 0);

// Each image of data (n, h, w, c), c 1 or 3 (uint8 or floating, values on the 0-255 scale), through
// MXNet's colour steps with the factors of its row of factors (n, 12) float32: columns 0-3 the
// alphas of brightness, contrast, saturation and hue, 4-6 the lighting offsets of r, g, b, 7-11 the
// steps in order (0 brightness, 1 contrast, 2 saturation, 3 hue, 4 lighting; -1 ends the list).
// ndarray/ops/image_kernels.hpp (_image_adjust_colors) gives each step's formula. No gradient.
NDArray adjust_colors(const NDArray& data, const NDArray& factors);

}  // namespace mx::nd::image
