#pragma once
// StridedIndex<N>: maps a linear index in row-major order to element offsets in N operands that
// may broadcast (stride 0), be permuted (transpose) or step (slices). Shared by CPU loops and CUDA
// kernels.
#include <cstdint>

#include "ndarray/core/host_device.hpp"
#include "ndarray/core/shape.hpp"

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
using GatherIndex = StridedIndex<1>;     // strided views: gather (read) and scatter (write)

// Contiguous element strides of a shape.
std::vector<std::int64_t> contiguous_strides(const Shape& shape);

// NumPy broadcasting of two shapes; throws mx::ShapeError naming op and both shapes.
Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b);

// Index for reading a (shape a) and b (shape b) broadcast to out. Adjacent axes are merged where
// possible, so that same-shape operands give one contiguous axis. Each maker throws
// mx::ShapeError naming op when more than kMaxDims axes remain after merging.
BroadcastIndex make_broadcast_index(const char* op, const Shape& out, const Shape& a, const Shape& b);

// Index that steps through the elements of a view of `shape` with element `strides`, in row-major
// order.
GatherIndex make_view_index(const char* op, const Shape& shape, const std::vector<std::int64_t>& strides);

}  // namespace mx
