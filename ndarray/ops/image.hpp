#pragma once
// Image ops, as mx.nd.contrib: BilinearResize2D.
#include <cstdint>

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
