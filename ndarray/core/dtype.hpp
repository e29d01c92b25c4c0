#pragma once
// Element types. float32 is the default, as in MXNet.
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <utility>

#include "context/error.hpp"
#include "ndarray/core/half.hpp"

namespace mx {

// The one list of element types: X(name, C++ type). The enum, names, sizes and the runtime ->
// compile-time dispatch below are all generated from it. New types go at the end: the enum's
// values are stable.
#define NDG_DTYPES(X)            \
  X(float32, float)              \
  X(float64, double)             \
  X(int32, std::int32_t)         \
  X(int64, std::int64_t)         \
  X(uint8, std::uint8_t)         \
  X(float16, mx::float16)        \
  X(bfloat16, mx::bfloat16)

#define NDG_DTYPE_ENUM(NAME, TYPE) NAME,
enum class DType : std::uint8_t { NDG_DTYPES(NDG_DTYPE_ENUM) };
#undef NDG_DTYPE_ENUM

#define NDG_DTYPE_COUNT(NAME, TYPE) +1
inline constexpr std::size_t kNumDTypes = 0 NDG_DTYPES(NDG_DTYPE_COUNT);
#undef NDG_DTYPE_COUNT

constexpr std::size_t dtype_size(DType dt) {
#define NDG_DTYPE_SIZE(NAME, TYPE) \
  case DType::NAME: return sizeof(TYPE);
  switch (dt) { NDG_DTYPES(NDG_DTYPE_SIZE) }
#undef NDG_DTYPE_SIZE
  return 0;
}

constexpr bool is_floating(DType dt) {
  return dt == DType::float32 || dt == DType::float64 || dt == DType::float16 || dt == DType::bfloat16;
}
// float16 and bfloat16: stored in 16 bits, computed in float32.
constexpr bool is_half(DType dt) { return dt == DType::float16 || dt == DType::bfloat16; }

const char* dtype_name(DType dt);  // "float32"
std::ostream& operator<<(std::ostream& os, DType dt);

template <class T> struct DTypeOf;
#define NDG_DTYPE_OF(NAME, TYPE) \
  template <> struct DTypeOf<TYPE> { static constexpr DType value = DType::NAME; };
NDG_DTYPES(NDG_DTYPE_OF)
#undef NDG_DTYPE_OF
template <class T> inline constexpr DType dtype_of = DTypeOf<T>::value;

// Calls fn(T{}) with T the C++ type of dt: the one place that turns a runtime dtype into a type.
template <class Fn>
decltype(auto) dispatch_dtype(DType dt, Fn&& fn) {
#define NDG_DTYPE_CASE(NAME, TYPE) \
  case DType::NAME: return std::forward<Fn>(fn)(TYPE{});
  switch (dt) { NDG_DTYPES(NDG_DTYPE_CASE) }
#undef NDG_DTYPE_CASE
  throw DTypeError("unknown dtype code " + std::to_string(static_cast<int>(dt)));
}

// dispatch_dtype for the floating types (float32, float64, float16, bfloat16); other dtypes throw
// mx::DTypeError naming op.
template <class Fn>
void dispatch_floating(DType dt, const char* op, Fn&& fn) {
  switch (dt) {
    case DType::float32: return fn(float{});
    case DType::float64: return fn(double{});
    case DType::float16: return fn(float16{});
    case DType::bfloat16: return fn(bfloat16{});
    default: break;
  }
  throw DTypeError(std::string(op) + " supports float32, float64, float16 and bfloat16, not " + dtype_name(dt));
}

}  // namespace mx
