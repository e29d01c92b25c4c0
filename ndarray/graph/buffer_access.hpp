#pragma once
// Typed arrays over raw buffers: the graph executor (ndarray/graph/executor.hpp) plans its memory as
// untyped blocks and hands each op a contiguous array of the shape and dtype it needs inside one.
// Internal.
#include <cstddef>
#include <memory>
#include <utility>

#include "ndarray/core/array.hpp"

namespace mx::nd::detail {

struct BufferAccess {
  // A contiguous array of `shape` and `dtype` over the bytes of `storage` (which must hold them).
  static NDArray view(std::shared_ptr<Storage> storage, const Shape& shape, DType dtype) {
    NDArray x;
    x.storage_ = std::move(storage);
    x.shape_ = shape;
    x.dtype_ = dtype;
    return x;
  }
  // Handles to x's storage (x's own included).
  static long storage_users(const NDArray& x) { return x.storage_.use_count(); }
};

}  // namespace mx::nd::detail
