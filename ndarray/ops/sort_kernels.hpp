#pragma once
// The sort family's attributes, shared pieces and GPU launches (ndarray/ops/sort.cpp defines
// topk, sort, argsort and _backward_topk and their CPU loops; cuda/ops/sort.cu the launches, which
// sort with CUB's segmented sort). Internal.
#include <cstdint>

#include "ndarray/core/host_device.hpp"
#include "ndarray/ops/op.hpp"
#include "ndarray/ops/op_kinds.hpp"

namespace mx::op {

enum class SortKind : std::uint8_t { topk, sort, argsort };
enum class TopkReturn : std::uint8_t { indices, value, mask, both };

// topk, sort and argsort, as MXNet's TopKParam, SortParam and ArgSortParam. sort and argsort
// select every element (k = 0). The outputs, by op:
//   topk indices: (indices in dtype)          topk value: (values, indices in int64, hidden)
//   topk both:    (values, indices in dtype)  topk mask:  (mask in data's dtype)
//   sort:         (values, indices in int64, hidden)      argsort: (indices in dtype)
// The hidden indices are what the values' gradient scatters by, as MXNet's hidden outputs.
struct SortParams {
  SortKind kind = SortKind::topk;
  int axis = -1;
  bool has_axis = true;  // false: the flattened data (MXNet's axis=None)
  std::int64_t k = 1;    // < 1: every element
  TopkReturn ret = TopkReturn::indices;
  bool is_ascend = false;
  DType dtype = DType::float32;  // the visible indices'
};

// _backward_topk: the data's shape, which the values' gradient is scattered into.
struct SortBackwardParams {
  static constexpr int kMaxDims = 8;
  SortParams sort;
  std::int32_t ndim = 0;
  std::int64_t shape[kMaxDims] = {};
};

// The rows sorted: `rows` = outer * inner lines of `length` elements with stride `inner`, of which
// the first k are kept.
struct SortShape {
  std::int64_t outer = 1, length = 1, inner = 1, k = 1;
};

// NaN above every number, and ties by position: the order of the CPU loops and of the GPU's
// stable segmented sort (whose NaN keys are made positive first).
template <class C>
NDG_HD bool sorts_before(C a, C b) {
  const bool a_nan = !(a == a), b_nan = !(b == b);
  if (a_nan || b_nan) return !a_nan && b_nan;
  return a < b;
}

SortShape sort_shape(const Invocation& inv);
// Which outputs hold values, visible or hidden indices, and the mask (-1: none).
struct SortOutputs {
  int values = -1, indices = -1, mask = -1;
};
SortOutputs sort_outputs(const SortParams& p);

namespace gpu {
void sort(const ExecContext& ec, const Invocation& inv);
void sort_backward(const ExecContext& ec, const Invocation& inv);
}  // namespace gpu

}  // namespace mx::op
