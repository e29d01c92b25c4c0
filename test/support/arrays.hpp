#pragma once
// Reading arrays back in tests: their values as doubles, their float32 bit patterns, and the
// element-wise closeness check the numeric suites share.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <ndarray/ndarray.hpp>

namespace ndg_test {

using Values = std::vector<double>;

inline constexpr mx::DType kAllDTypes[] = {mx::DType::float32, mx::DType::float64, mx::DType::int32,
                                           mx::DType::int64,   mx::DType::uint8,   mx::DType::float16,
                                           mx::DType::bfloat16};
// The IEEE types the exact-tolerance suites run in; the 16-bit ones have their own suite
// (test/ndarray/core/half_test.cpp) with tolerances their precision justifies.
inline constexpr mx::DType kFloatDTypes[] = {mx::DType::float32, mx::DType::float64};
inline constexpr mx::DType kHalfDTypes[] = {mx::DType::float16, mx::DType::bfloat16};

// The dtype's name, for messages and comparisons ("float32").
std::string dtype_of(const mx::nd::NDArray& x);

// The values of x read back as doubles (exact for every dtype).
Values values(const mx::nd::NDArray& x);

// The bit patterns of a float32 array: "identical" means these compare equal.
std::vector<std::uint32_t> bits_of(const mx::nd::NDArray& x);

// n values uniform in [-1, 1), the same on every run for one seed.
Values uniform_values(std::size_t n, unsigned seed);

// A float32 array of `shape` on ctx holding uniform_values(numel, seed).
mx::nd::NDArray random_array(const mx::Shape& shape, mx::Context ctx, unsigned seed);

// An array of `shape` on ctx holding v, converted to dtype.
mx::nd::NDArray array_of(const Values& v, const mx::Shape& shape, mx::Context ctx, mx::DType dtype = mx::DType::float32);

// The gradient of f at x by central differences of step h, one coordinate at a time.
Values numeric_gradient(const std::function<double(const Values&)>& f, const Values& x, double h = 1e-6);

// Every element finite and |got - want| <= atol + rtol * |want|, naming the first elements that
// are not.
void check_close(const mx::nd::NDArray& got, const Values& want, double rtol = 1e-5, double atol = 1e-6);

}  // namespace ndg_test
