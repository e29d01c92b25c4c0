#pragma once
// xtensor interop: NDArray::asxtensor<T>() and nd::array from an xt::xarray. The only public
// header that includes xtensor, so that the rest of ndarray compiles without it;
// ndarray/ndarray.hpp includes it.
#include <cstddef>
#include <cstdint>
#include <vector>

#include <xtensor/xarray.hpp>

#include "ndarray/core/array.hpp"
#include "ndarray/ops/creation.hpp"

namespace mx::nd {

// Waits for queued work, then copies the elements to the host as T, in an xarray of this shape.
template <class T>
auto NDArray::asxtensor() const {
  std::vector<std::size_t> dims(shape_.begin(), shape_.end());
  xt::xarray<T> out(dims);
  copy_to_host(out.data(), dtype_of<T>);
  return out;
}

// From an xarray of any layout, converted to `dtype` (default: T's dtype).
template <class T>
NDArray array(const xt::xarray<T>& values, Context ctx = current_context(), DType dtype = dtype_of<T>) {
  std::vector<std::int64_t> dims(values.shape().begin(), values.shape().end());
  const xt::xarray<T> contiguous = values;  // row-major copy
  return array(contiguous.data(), dtype_of<T>, Shape(dims), ctx, dtype);
}

}  // namespace mx::nd
