#pragma once
// Element types. float32 is the default, as in MXNet.
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <utility>

#include "context/error.hpp"

namespace mx {

enum class DType : std::uint8_t { float32, float64, int32, int64, uint8 };

constexpr std::size_t dtype_size(DType dt) {
  switch (dt) {
    case DType::float32: case DType::int32: return 4;
    case DType::float64: case DType::int64: return 8;
    case DType::uint8: return 1;
  }
  return 0;
}

constexpr bool is_floating(DType dt) { return dt == DType::float32 || dt == DType::float64; }

const char* dtype_name(DType dt);  // "float32"
std::ostream& operator<<(std::ostream& os, DType dt);

template <class T> struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::float32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::float64; };
template <> struct DTypeOf<std::int32_t> { static constexpr DType value = DType::int32; };
template <> struct DTypeOf<std::int64_t> { static constexpr DType value = DType::int64; };
template <> struct DTypeOf<std::uint8_t> { static constexpr DType value = DType::uint8; };
template <class T> inline constexpr DType dtype_of = DTypeOf<T>::value;

// Calls fn(T{}) with T the C++ type of dt: the one place that turns a runtime dtype into a type.
template <class Fn>
decltype(auto) dispatch_dtype(DType dt, Fn&& fn) {
  switch (dt) {
    case DType::float32: return std::forward<Fn>(fn)(float{});
    case DType::float64: return std::forward<Fn>(fn)(double{});
    case DType::int32: return std::forward<Fn>(fn)(std::int32_t{});
    case DType::int64: return std::forward<Fn>(fn)(std::int64_t{});
    case DType::uint8: return std::forward<Fn>(fn)(std::uint8_t{});
  }
  throw DTypeError("unknown dtype code " + std::to_string(static_cast<int>(dt)));
}

// dispatch_dtype for float32 and float64 only; other dtypes throw mx::DTypeError naming op.
template <class Fn>
void dispatch_floating(DType dt, const char* op, Fn&& fn) {
  if (dt == DType::float32) return fn(float{});
  if (dt == DType::float64) return fn(double{});
  throw DTypeError(std::string(op) + " supports float32 and float64, not " + dtype_name(dt));
}

}  // namespace mx
