#pragma once
// The manipulation family's attributes, shared element functions and GPU launches
// (ndarray/ops/manipulation.cpp defines the ops and the CPU loops; cuda/ops/manipulation.cu the
// launches of Cast, pick and _backward_pick). The pick element functions are written once for the
// CPU loops and the CUDA kernels. Internal.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "ndarray/core/host_device.hpp"
#include "ndarray/ops/op.hpp"
#include "ndarray/ops/op_kinds.hpp"

namespace mx::op {

struct CastParams {
  DType dtype = DType::float32;  // the result's
};

// pick and _backward_pick, as MXNet's PickParam. ndim and length, the data's number of axes and
// extent along the axis, are set for _backward_pick only (which sees the output gradient and the
// index, not the data).
struct PickParams {
  int axis = -1;
  bool keepdims = false;
  bool wrap = false;  // mode "wrap" (indices modulo the extent); false: "clip" (to [0, extent - 1])
  int ndim = 0;
  std::int64_t length = 0;
};

// The position along an axis of `length` elements that an index selects: truncated toward zero,
// then clipped to [0, length - 1] or wrapped modulo length. A NaN index selects 0 in either mode,
// an infinite one the nearest end when clipping and 0 when wrapping.
template <class I>
NDG_HD std::int64_t pick_position(I index, std::int64_t length, bool wrap) {
  if constexpr (mx::is_float_v<I>) {
    const double x = static_cast<double>(index);
    if (!wrap) {
      if (!(x > 0)) return 0;  // also NaN
      return x >= static_cast<double>(length - 1) ? length - 1 : static_cast<std::int64_t>(x);
    }
    // fmod keeps the sign and the integer part of x's remainder, so that truncating it afterwards
    // is truncating x first; it is exact, and NaN for NaN or infinite x.
    const double r = std::fmod(x, static_cast<double>(length));
    if (!(r == r)) return 0;
    const std::int64_t j = static_cast<std::int64_t>(r);
    return j < 0 ? j + length : j;
  } else {
    const std::int64_t j = static_cast<std::int64_t>(index);
    if (!wrap) return j < 0 ? 0 : j >= length ? length - 1 : j;
    const std::int64_t r = j % length;
    return r < 0 ? r + length : r;
  }
}

// Output element i of pick: data is (outer, length, inner) around the axis, index and output
// (outer, inner).
template <class T, class I>
NDG_HD T pick_element(const T* data, const I* index, ReduceShape s, bool wrap, std::int64_t i) {
  const std::int64_t o = i / s.inner, in = i % s.inner;
  return data[(o * s.length + pick_position(index[i], s.length, wrap)) * s.inner + in];
}

// Element i of _backward_pick's dense gradient (outer, length, inner): the output gradient where
// the index picked this position, else 0.
template <class T, class I>
NDG_HD T pick_backward_element(const T* grad, const I* index, ReduceShape s, bool wrap, std::int64_t i) {
  const std::int64_t in = i % s.inner, k = (i / s.inner) % s.length, o = i / (s.inner * s.length);
  const std::int64_t at = o * s.inner + in;
  return pick_position(index[at], s.length, wrap) == k ? grad[at] : T(0);
}

// Concat's and slice_axis's copies of rows, which stack and split share (ndarray/ops/shape_ops.cpp):
// the bytes of one element times the product of x's extents from `axis` on; the product of the
// extents before `axis`; and a 2-D copy of `height` rows of `width` bytes within ec's context
// (nothing for an empty one).
std::size_t row_bytes(const nd::NDArray& x, int axis);
std::size_t outer_count(const Shape& shape, int axis);
void copy_rows(const ExecContext& ec, void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch,
               std::size_t width, std::size_t height);

// The data as (outer, length, inner) lines along pick's axis, from either op's invocation.
ReduceShape pick_shape(const Invocation& inv);

namespace gpu {
void cast(const ExecContext& ec, const Invocation& inv);
void pick(const ExecContext& ec, const Invocation& inv);
void pick_backward(const ExecContext& ec, const Invocation& inv);
}  // namespace gpu

}  // namespace mx::op
