#pragma once
// Transforms of whole batches, for DataLoader's transform argument.
#include "ndarray/core/array.hpp"

namespace mx::gluon::data {

// MXNet's transforms.ToTensor on a batch: images with values in [0, 255] (uint8 or any dtype), laid
// out (B, H, W, C), or (B, H, W) for one channel, become float32 (B, C, H, W) with values x / 255 in
// [0, 1], on the batch's context. A Fashion-MNIST batch (B, 28, 28) uint8 becomes (B, 1, 28, 28).
// Another number of axes is an mx::ShapeError. (MXNet's ToTensor takes a 3-D array as one (H, W, C)
// image; here the first axis is always the batch.)
nd::NDArray to_tensor(const nd::NDArray& batch);

}  // namespace mx::gluon::data
