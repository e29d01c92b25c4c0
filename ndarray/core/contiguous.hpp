#pragma once
// Internal: how kernels, which read and write contiguous memory, meet strided views. Inputs are
// copied into contiguous memory on demand; a strided output is computed into a contiguous
// stand-in whose values are then written into the view's elements of the base.
#include "ndarray/core/array.hpp"
#include "ndarray/core/strided_index.hpp"

namespace mx::nd::detail {

// The gather index that reads x's elements in row-major order from x.data(); mx::ShapeError
// naming op when x's axes cannot be merged into kMaxDims.
GatherIndex view_index(const char* op, const NDArray& x);

// x when contiguous, else a contiguous copy on x's context. Not recorded by autograd: a kernel's
// operand, not a value of the graph.
NDArray dense(const NDArray& x);

// Writes the contiguous src into the elements of dst (same shape, dtype and context; dst may be
// a strided view).
void write_into(const NDArray& src, const NDArray& dst);

// mx::ValueError naming op when dst repeats elements (a stride 0 axis of extent > 1, as a
// broadcast_to view has): such a view is read-only, as in NumPy.
void check_writable(const char* op, const NDArray& dst);

}  // namespace mx::nd::detail
