#pragma once
// StridedIndex<N>: maps a linear index over a contiguous output to element offsets in N operands
// that may broadcast (stride 0) or be permuted (transpose). Shared by CPU loops and CUDA kernels.
#include <cstdint>

#include "ndarray/host_device.hpp"
#include "ndarray/shape.hpp"

namespace mx {

inline constexpr int kMaxDims = 8;

template <int N>
struct StridedIndex {
  int ndim = 0;
  std::int64_t shape[kMaxDims] = {};        // output extents, outermost first
  std::int64_t strides[N][kMaxDims] = {};   // element strides of each operand per output axis

  // Offsets of output element `linear` in each operand.
  NDG_HD void offsets(std::int64_t linear, std::int64_t (&off)[N]) const {
    for (int k = 0; k < N; ++k) off[k] = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const std::int64_t extent = shape[d];
      const std::int64_t i = linear % extent;
      linear /= extent;
      for (int k = 0; k < N; ++k) off[k] += i * strides[k][d];
    }
  }

  // True when every operand is read contiguously in output order (the fast path).
  bool contiguous() const {
    if (ndim > 1) return false;
    for (int k = 0; k < N; ++k)
      if (ndim == 1 && strides[k][0] != 1) return false;
    return true;
  }
};

using BroadcastIndex = StridedIndex<2>;  // binary ops: a, b
using GatherIndex = StridedIndex<1>;     // transpose, broadcast_to

// Contiguous element strides of a shape.
std::vector<std::int64_t> contiguous_strides(const Shape& shape);

// NumPy broadcasting of two shapes; throws mx::ShapeError naming op and both shapes.
Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b);

// Index for reading a (shape a) and b (shape b) broadcast to out. Adjacent axes are merged where
// possible, so that same-shape operands give one contiguous axis. Each maker throws
// mx::ShapeError naming op when more than kMaxDims axes remain after merging.
BroadcastIndex make_broadcast_index(const char* op, const Shape& out, const Shape& a, const Shape& b);

// Index for out[i_0..i_n] = in[i_axes[0]..]: out axis d reads input axis axes[d].
GatherIndex make_transpose_index(const char* op, const Shape& in, const std::vector<int>& axes);

// Index for reading `in` broadcast to `out`.
GatherIndex make_broadcast_to_index(const char* op, const Shape& out, const Shape& in);

}  // namespace mx
