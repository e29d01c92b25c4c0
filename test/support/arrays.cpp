#include "test/support/arrays.hpp"

#include <cmath>
#include <cstring>
#include <random>

#include <boost/test/unit_test.hpp>

namespace ndg_test {

std::string dtype_of(const mx::nd::NDArray& x) { return mx::dtype_name(x.dtype()); }

Values values(const mx::nd::NDArray& x) { return x.asvector<double>(); }

std::vector<std::uint32_t> bits_of(const mx::nd::NDArray& x) {
  const std::vector<float> floats = x.asvector<float>();
  std::vector<std::uint32_t> bits(floats.size());
  std::memcpy(bits.data(), floats.data(), floats.size() * sizeof(float));
  return bits;
}

void check_close(const mx::nd::NDArray& got, const Values& want, double rtol, double atol) {
  const Values have = values(got);
  BOOST_TEST_REQUIRE(have.size() == want.size());
  for (std::size_t i = 0; i < have.size(); ++i) {
    BOOST_TEST(std::isfinite(have[i]), "element " << i << " is " << have[i]);
    BOOST_TEST(std::abs(have[i] - want[i]) <= atol + rtol * std::abs(want[i]),
               "element " << i << ": " << have[i] << " vs " << want[i]);
  }
}

mx::nd::NDArray random_array(const mx::Shape& shape, mx::Context ctx, unsigned seed) {
  const Values v = uniform_values(static_cast<std::size_t>(shape.numel()), seed);
  return mx::nd::array(v.data(), mx::DType::float64, shape, ctx, mx::DType::float32);
}

mx::nd::NDArray array_of(const Values& v, const mx::Shape& shape, mx::Context ctx, mx::DType dtype) {
  return mx::nd::array(v.data(), mx::DType::float64, shape, ctx, dtype);
}

Values numeric_gradient(const std::function<double(const Values&)>& f, const Values& x, double h) {
  Values grad(x.size()), probe = x;
  for (std::size_t i = 0; i < x.size(); ++i) {
    probe[i] = x[i] + h;
    const double up = f(probe);
    probe[i] = x[i] - h;
    grad[i] = (up - f(probe)) / (2 * h);
    probe[i] = x[i];
  }
  return grad;
}

Values uniform_values(std::size_t n, unsigned seed) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  Values v(n);
  for (double& x : v) x = uniform(engine);
  return v;
}

}  // namespace ndg_test
