#include "ndarray/core/strided_index.hpp"

#include <algorithm>

#include "context/error.hpp"

namespace mx {

std::vector<std::int64_t> contiguous_strides(const Shape& shape) {
  std::vector<std::int64_t> strides(static_cast<std::size_t>(shape.ndim()));
  std::int64_t s = 1;
  for (int d = shape.ndim() - 1; d >= 0; --d) {
    strides[static_cast<std::size_t>(d)] = s;
    s *= shape[d];
  }
  return strides;
}

Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b) {
  if (a == b) return a;  // the common case, without the per-axis work
  const int ndim = std::max(a.ndim(), b.ndim());
  std::vector<std::int64_t> out(static_cast<std::size_t>(ndim));
  for (int d = 0; d < ndim; ++d) {
    const int da = d - (ndim - a.ndim()), db = d - (ndim - b.ndim());
    const std::int64_t ea = da >= 0 ? a[da] : 1, eb = db >= 0 ? b[db] : 1;
    if (ea != eb && ea != 1 && eb != 1) {
      throw ShapeError(std::string(op) + ": shapes " + a.tuple_str() + " and " + b.tuple_str() +
                       " cannot be broadcast together (axis " + std::to_string(d) + ": " +
                       std::to_string(ea) + " vs " + std::to_string(eb) + ")");
    }
    out[static_cast<std::size_t>(d)] = ea == 1 ? eb : ea;
  }
  return Shape(std::move(out));
}

namespace {

// Strides of `in` (right-aligned against out) with 0 on broadcast axes.
std::vector<std::int64_t> broadcast_strides(const Shape& out, const Shape& in) {
  const auto in_strides = contiguous_strides(in);
  std::vector<std::int64_t> strides(static_cast<std::size_t>(out.ndim()), 0);
  for (int d = 0; d < in.ndim(); ++d) {
    const int od = d + out.ndim() - in.ndim();
    if (in[d] != 1) strides[static_cast<std::size_t>(od)] = in_strides[static_cast<std::size_t>(d)];
  }
  return strides;
}

// Builds the index, dropping extent-1 axes and merging axis d into d+1 when every operand steps
// through both as through one axis.
template <int N>
StridedIndex<N> collapse(const char* op, const Shape& out, const std::vector<std::int64_t> (&strides)[N]) {
  StridedIndex<N> index;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> merged[N];
  for (int d = 0; d < out.ndim(); ++d) {
    if (out[d] == 1) continue;
    bool mergeable = !shape.empty();
    for (int k = 0; k < N && mergeable; ++k)
      mergeable = merged[k].back() == strides[k][static_cast<std::size_t>(d)] * out[d];
    if (mergeable) {
      shape.back() *= out[d];
      for (int k = 0; k < N; ++k) merged[k].back() = strides[k][static_cast<std::size_t>(d)];
    } else {
      shape.push_back(out[d]);
      for (int k = 0; k < N; ++k) merged[k].push_back(strides[k][static_cast<std::size_t>(d)]);
    }
  }
  if (shape.size() > static_cast<std::size_t>(kMaxDims)) {
    throw ShapeError(std::string(op) + ": the result " + out.tuple_str() + " has " + std::to_string(shape.size()) +
                     " axes that cannot be merged into fewer; at most " + std::to_string(kMaxDims) +
                     " are supported");
  }
  index.ndim = static_cast<int>(shape.size());
  for (int d = 0; d < index.ndim; ++d) {
    index.shape[d] = shape[static_cast<std::size_t>(d)];
    for (int k = 0; k < N; ++k) index.strides[k][d] = merged[k][static_cast<std::size_t>(d)];
  }
  return index;
}

}  // namespace

BroadcastIndex make_broadcast_index(const char* op, const Shape& out, const Shape& a, const Shape& b) {
  if (a == out && b == out) {  // same shapes: one contiguous axis, without building vectors
    BroadcastIndex index;
    index.ndim = 1;
    index.shape[0] = out.numel();
    index.strides[0][0] = index.strides[1][0] = 1;
    return index;
  }
  const std::vector<std::int64_t> strides[2] = {broadcast_strides(out, a), broadcast_strides(out, b)};
  return collapse<2>(op, out, strides);
}

GatherIndex make_view_index(const char* op, const Shape& shape, const std::vector<std::int64_t>& strides) {
  const std::vector<std::int64_t> all[1] = {strides};
  return collapse<1>(op, shape, all);
}

}  // namespace mx
