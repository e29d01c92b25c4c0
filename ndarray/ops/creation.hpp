#pragma once
// Array creation, as in mx.nd: array, empty, zeros, ones, full, arange. Without a context the
// array goes to mx::current_context(); without a dtype it is float32.
#include <initializer_list>
#include <vector>

#include "ndarray/core/array.hpp"

namespace mx::nd {

NDArray empty(const Shape& shape, Context ctx = current_context(), DType dtype = DType::float32);
NDArray zeros(const Shape& shape, Context ctx = current_context(), DType dtype = DType::float32);
NDArray ones(const Shape& shape, Context ctx = current_context(), DType dtype = DType::float32);
NDArray full(const Shape& shape, double value, Context ctx = current_context(),
             DType dtype = DType::float32);
NDArray zeros_like(const NDArray& x);
NDArray ones_like(const NDArray& x);

// [start, stop) in steps of step; arange(stop) starts at 0.
NDArray arange(double start, double stop, double step = 1.0, Context ctx = current_context(),
               DType dtype = DType::float32);
NDArray arange(double stop, Context ctx = current_context(), DType dtype = DType::float32);

// One value of a 1-D initializer list. Being a class, it makes array({{1}, {2}}) pick the 2-D
// overload (a column), where a plain double would make the call ambiguous.
struct Scalar {
  Scalar(double v) : value(v) {}  // implicit: array({1, 2.5, 3})
  double value;
};

// From values: array({1, 2, 3}) is (3,), array({{1, 2}, {3, 4}}) is (2, 2), array({{1}, {2}}) (2, 1).
NDArray array(std::initializer_list<Scalar> values, Context ctx = current_context(),
              DType dtype = DType::float32);
NDArray array(std::initializer_list<std::initializer_list<double>> rows,
              Context ctx = current_context(), DType dtype = DType::float32);

// From host data of any element type, reshaped to `shape` and converted to `dtype`.
// (From an xt::xarray: ndarray/xtensor.hpp.)
NDArray array(const void* data, DType data_dtype, const Shape& shape, Context ctx, DType dtype);

template <class T>
NDArray array(const std::vector<T>& values, const Shape& shape, Context ctx = current_context(),
              DType dtype = dtype_of<T>) {
  if (static_cast<std::int64_t>(values.size()) != shape.numel()) {
    throw ShapeError("array: " + std::to_string(values.size()) +
                     " values do not fill shape " + shape.tuple_str() + " (" +
                     std::to_string(shape.numel()) + " elements)");
  }
  return array(values.data(), dtype_of<T>, shape, ctx, dtype);
}

}  // namespace mx::nd
