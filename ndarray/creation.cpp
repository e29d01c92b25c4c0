#include "ndarray/creation.hpp"

#include <cmath>

#include "ndarray/backend.hpp"
#include "ndarray/checks.hpp"

namespace mx::nd {

namespace {

NDArray filled(const char* op, const Shape& shape, double value, Context ctx, DType dtype) {
  detail::check_shape(op, shape, dtype);
  NDArray out(shape, ctx, dtype);
  out.fill(value);
  return out;
}

}  // namespace

NDArray empty(const Shape& shape, Context ctx, DType dtype) {
  detail::check_shape("empty", shape, dtype);
  return NDArray(shape, ctx, dtype);
}

NDArray full(const Shape& shape, double value, Context ctx, DType dtype) { return filled("full", shape, value, ctx, dtype); }
NDArray zeros(const Shape& shape, Context ctx, DType dtype) { return filled("zeros", shape, 0.0, ctx, dtype); }
NDArray ones(const Shape& shape, Context ctx, DType dtype) { return filled("ones", shape, 1.0, ctx, dtype); }
NDArray zeros_like(const NDArray& x) { return zeros(x.shape(), x.context(), x.dtype()); }
NDArray ones_like(const NDArray& x) { return ones(x.shape(), x.context(), x.dtype()); }

NDArray array(const void* data, DType data_dtype, const Shape& shape, Context ctx, DType dtype) {
  NDArray staged(shape, cpu(0), data_dtype);
  copy_across(cpu(0), staged.data(), cpu(0), data,
              static_cast<std::size_t>(shape.numel()) * dtype_size(data_dtype));
  if (data_dtype != dtype) staged = staged.astype(dtype);
  return staged.as_in_context(ctx);
}

NDArray arange(double start, double stop, double step, Context ctx, DType dtype) {
  if (step == 0.0) throw ValueError("arange: step must not be 0");
  const double count = std::ceil((stop - start) / step);
  const std::int64_t n = count > 0 ? static_cast<std::int64_t>(count) : 0;
  // Made where it lives: no host copy, so ops that need one (one_hot) never wait for the device.
  NDArray out({n}, ctx, dtype);
  backend(ctx).arange(ctx, dtype, out.data(), n, start, step);
  return out;
}

NDArray arange(double stop, Context ctx, DType dtype) { return arange(0.0, stop, 1.0, ctx, dtype); }

NDArray array(std::initializer_list<Scalar> values, Context ctx, DType dtype) {
  std::vector<double> data;
  for (Scalar v : values) data.push_back(v.value);
  return array(data, {static_cast<std::int64_t>(data.size())}, ctx, dtype);
}

NDArray array(std::initializer_list<std::initializer_list<double>> rows, Context ctx, DType dtype) {
  const std::size_t cols = rows.size() ? rows.begin()->size() : 0;
  std::vector<double> values;
  for (const auto& row : rows) {
    if (row.size() != cols) {
      throw ShapeError("array: ragged nested list: row " + std::to_string(values.size() / std::max<std::size_t>(cols, 1)) +
                       " has " + std::to_string(row.size()) + " values, the first row has " +
                       std::to_string(cols));
    }
    values.insert(values.end(), row.begin(), row.end());
  }
  return array(values, {static_cast<std::int64_t>(rows.size()), static_cast<std::int64_t>(cols)}, ctx, dtype);
}

}  // namespace mx::nd
