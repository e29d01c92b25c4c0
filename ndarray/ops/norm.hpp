#pragma once
// Normalisation ops with a learned scale and shift, as mx.nd.LayerNorm, GroupNorm and InstanceNorm
// (MXNet 1.9): each normalises groups of elements by their own mean and standard deviation (never
// running statistics), then applies gamma and beta per channel (per group for GroupNorm). Forward and backward are
// one fused pass each per group; statistics are float32 for float16 and bfloat16 data (float64
// for float64). gamma and beta have the data's dtype, or float32 for 16-bit data (parameters kept
// in float32 under amp); their gradients have theirs.
//
// Where ndgluon differs from MXNet: the mean and std outputs (output_mean_var) are float32 for
// 16-bit data, where MXNet gives them the data's dtype.
#include <cstdint>

#include "ndarray/core/array.hpp"

namespace mx::nd {

struct LayerNormOptions {
  int axis = -1;
  double eps = 1e-5;
};

// data (..., C, ...) with C = shape[axis], gamma and beta (C,) -> (data - mean) / std · gamma +
// beta, mean and std over `axis` alone (std = sqrt(var + eps), var the biased variance).
// mx::ShapeError for gamma or beta of another shape or an axis out of range, mx::DTypeError for
// non-floating data or parameters of another dtype.
NDArray LayerNorm(const NDArray& data, const NDArray& gamma, const NDArray& beta, const LayerNormOptions& options = {});

// The same and its statistics, {out, mean, std}, mean and std of data's shape with extent 1 at
// `axis` (MXNet's output_mean_var=True).
std::vector<NDArray> LayerNorm_mean_std(const NDArray& data, const NDArray& gamma, const NDArray& beta,
                                        const LayerNormOptions& options = {});

struct GroupNormOptions {
  std::int64_t num_groups = 1;
  double eps = 1e-5;
};

// data (N, C, ...) whose C channels fall into num_groups groups of C / num_groups; gamma and beta
// (num_groups,), as MXNet 1.x's -> each sample's group normalised over its channels and spatial
// positions, then scaled and shifted by its group's gamma and beta. mx::ShapeError for data of
// fewer than 2 axes or C that num_groups does not divide; mx::ValueError for num_groups < 1.
NDArray GroupNorm(const NDArray& data, const NDArray& gamma, const NDArray& beta, const GroupNormOptions& options = {});

struct InstanceNormOptions {
  double eps = 1e-3;  // MXNet's default
};

// data (N, C, ...) with at least one spatial axis, gamma and beta (C,) -> each (sample, channel)
// normalised over its spatial positions, then scaled and shifted per channel.
NDArray InstanceNorm(const NDArray& data, const NDArray& gamma, const NDArray& beta,
                     const InstanceNormOptions& options = {});

}  // namespace mx::nd
