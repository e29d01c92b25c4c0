#pragma once
// Ops that join, split, repeat and reorder whole arrays, as MXNet's: stack, split (MXNet's
// SliceChannel), squeeze, expand_dims, tile, repeat and reverse (alias flip). Each returns a new
// array, as mx.nd's do (x.reshape is the view); each is a registered op, so that autograd records
// it, hybridize traces it and export writes MXNet's node for it.
#include <optional>
#include <vector>

#include "ndarray/core/array.hpp"

namespace mx::nd {

// Arrays of one shape and dtype joined along a new axis: n arrays of shape (d_0, ..., d_k) give
// (d_0, ..., n, ..., d_k) with n at `axis` (in [-(k + 2), k + 1]), as mx.nd.stack.
NDArray stack(const std::vector<NDArray>& arrays, int axis = 0);

// x cut into num_outputs equal parts along axis (MXNet's default axis is 1), as mx.nd.split
// (SliceChannel): x.shape[axis] must be a multiple of num_outputs. squeeze_axis drops the axis
// from the parts, which needs parts of extent 1 there. Always a vector, also for one part.
std::vector<NDArray> split(const NDArray& x, int num_outputs, int axis = 1, bool squeeze_axis = false);

// x without its axes of extent 1 (all of them, or those listed, each of extent 1), as
// mx.nd.squeeze; squeezing every axis gives shape (1,) as in MXNet 1.x.
NDArray squeeze(const NDArray& x, const std::vector<int>& axis = {});
// x with a new axis of extent 1 at `axis` (in [-ndim - 1, ndim]), as mx.nd.expand_dims.
NDArray expand_dims(const NDArray& x, int axis);

// x repeated reps[i] times along axis i, as mx.nd.tile: the shorter of x.shape and reps is padded
// with leading 1s. reps[i] >= 0.
NDArray tile(const NDArray& x, const std::vector<std::int64_t>& reps);
// Each element repeated `repeats` times along axis, or in the flattened x when axis is absent
// (result 1-D), as mx.nd.repeat. repeats >= 0.
NDArray repeat(const NDArray& x, std::int64_t repeats, std::optional<int> axis = std::nullopt);

// x with the order of its elements reversed along each of `axis`, as mx.nd.reverse (= mx.nd.flip).
NDArray reverse(const NDArray& x, const std::vector<int>& axis);
inline NDArray flip(const NDArray& x, const std::vector<int>& axis) { return reverse(x, axis); }

}  // namespace mx::nd
