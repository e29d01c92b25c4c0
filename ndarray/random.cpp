#include "ndarray/random.hpp"

#include <atomic>

#include "ndarray/backend.hpp"
#include "ndarray/checks.hpp"

namespace mx::random {
namespace {
std::atomic<std::uint64_t> seed_value{0};
std::atomic<std::uint64_t> generation{0};
}  // namespace

void seed(std::uint64_t s) {
  seed_value = s;
  ++generation;
}

std::uint64_t current_seed() { return seed_value; }
std::uint64_t seed_generation() { return generation; }

}  // namespace mx::random

namespace mx::nd::random {
namespace {

// cuRAND draws normal values in pairs: an odd count is drawn into one more element, and the
// result is a view of the first n. Uniform draws use the same layout for symmetry of call order.
NDArray draw(const char* op, const Shape& shape, Context ctx, DType dtype,
             void (Backend::*generate)(Context, DType, void*, std::int64_t, double, double), double p0,
             double p1) {
  if (!is_floating(dtype)) {
    throw DTypeError(std::string(op) + " draws float32 or float64, not " + dtype_name(dtype));
  }
  const std::int64_t n = Shape(shape).size();
  if (n < 0) throw ShapeError(std::string(op) + ": bad shape " + shape.tuple_str());
  const std::int64_t padded = n + (n % 2);
  NDArray buffer(Shape{padded}, ctx, dtype);
  if (padded > 0) (backend(ctx).*generate)(ctx, dtype, buffer.data(), padded, p0, p1);
  return buffer.slice(0, n).reshape(shape);
}

}  // namespace

NDArray uniform(double low, double high, const Shape& shape, Context ctx, DType dtype) {
  return draw("random.uniform", shape, ctx, dtype, &Backend::random_uniform, low, high);
}

NDArray normal(double loc, double scale, const Shape& shape, Context ctx, DType dtype) {
  return draw("random.normal", shape, ctx, dtype, &Backend::random_normal, loc, scale);
}

}  // namespace mx::nd::random
