#pragma once
// float16 (IEEE 754 binary16) and bfloat16 (the upper half of a float32): 16-bit storage types
// that compute through float. A value converts to float implicitly, so `a + b` or `std::exp(x)`
// on them is float arithmetic; converting back is explicit (`float16(f)`) and rounds to nearest
// even, overflow giving inf, as IEEE says. The same code runs on the host (bit arithmetic) and in
// CUDA kernels (one cvt instruction each way).
//
// A double converts through float: double -> float -> half can round twice, which differs from a
// direct rounding only for doubles within 2^-29 ulp of a tie.
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "ndarray/core/host_device.hpp"

namespace mx {

namespace half_bits {

NDG_HD std::uint32_t from_float(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}
NDG_HD float to_float(std::uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

// float -> binary16, round to nearest even (F. Giesen's float_to_half_fast3_rtne).
NDG_HD std::uint16_t float_to_half(float f) {
#ifdef __CUDA_ARCH__
  std::uint16_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
#else
  std::uint32_t x = from_float(f);
  const std::uint32_t sign = x & 0x80000000u;
  x ^= sign;
  std::uint32_t h;
  if (x >= 0x47800000u) {  // beyond the half range before rounding: inf, or nan (kept quiet)
    h = x > 0x7f800000u ? 0x7e00u : 0x7c00u;
  } else if (x < 0x38800000u) {  // a half subnormal or zero: let float addition round the bits
    const float magic = to_float(((127 - 15) + (23 - 10) + 1) << 23);
    h = from_float(to_float(x) + magic) - from_float(magic);
  } else {  // normal; a carry out of the mantissa moves to the exponent (65520 and above: inf)
    const std::uint32_t mantissa_odd = (x >> 13) & 1u;
    x += (static_cast<std::uint32_t>(15 - 127) << 23) + 0xfffu + mantissa_odd;
    h = x >> 13;
  }
  return static_cast<std::uint16_t>(h | (sign >> 16));
#endif
}

// binary16 -> float, exact.
NDG_HD float half_to_float(std::uint16_t h) {
#ifdef __CUDA_ARCH__
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
#else
  constexpr std::uint32_t shifted_exponent = 0x7c00u << 13;
  std::uint32_t u = (h & 0x7fffu) << 13;
  const std::uint32_t exponent = shifted_exponent & u;
  u += static_cast<std::uint32_t>(127 - 15) << 23;
  float f;
  if (exponent == shifted_exponent) {  // inf or nan
    u += static_cast<std::uint32_t>(128 - 16) << 23;
    f = to_float(u);
  } else if (exponent == 0) {  // zero or subnormal: renormalise through float arithmetic
    f = to_float(u + (1u << 23)) - to_float(113u << 23);
  } else {
    f = to_float(u);
  }
  return to_float(from_float(f) | (static_cast<std::uint32_t>(h & 0x8000u) << 16));
#endif
}

// float -> bfloat16, round to nearest even; nan stays a quiet nan.
NDG_HD std::uint16_t float_to_bfloat16(float f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  std::uint16_t h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
#else
  const std::uint32_t x = from_float(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  return static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
#endif
}

NDG_HD float bfloat16_to_float(std::uint16_t b) { return to_float(static_cast<std::uint32_t>(b) << 16); }

}  // namespace half_bits

struct Float16Format {
  NDG_HD static std::uint16_t from_float(float f) { return half_bits::float_to_half(f); }
  NDG_HD static float to_float(std::uint16_t h) { return half_bits::half_to_float(h); }
};
struct BFloat16Format {
  NDG_HD static std::uint16_t from_float(float f) { return half_bits::float_to_bfloat16(f); }
  NDG_HD static float to_float(std::uint16_t b) { return half_bits::bfloat16_to_float(b); }
};

// The two types share everything but the conversion, so that neither is written twice.
template <class Format>
struct HalfType {
  std::uint16_t bits;

  HalfType() = default;  // trivial, like float: arrays of it are raw storage
  NDG_HD explicit HalfType(float f) : bits(Format::from_float(f)) {}
  template <class U, std::enable_if_t<std::is_arithmetic_v<U> && !std::is_same_v<U, float>, int> = 0>
  NDG_HD explicit HalfType(U u) : HalfType(static_cast<float>(u)) {}
  NDG_HD operator float() const { return Format::to_float(bits); }

  NDG_HD static HalfType from_bits(std::uint16_t b) {
    HalfType h;
    h.bits = b;
    return h;
  }
  NDG_HD HalfType& operator+=(float v) { return *this = HalfType(float(*this) + v); }
  NDG_HD HalfType& operator-=(float v) { return *this = HalfType(float(*this) - v); }
  NDG_HD HalfType& operator*=(float v) { return *this = HalfType(float(*this) * v); }
  NDG_HD HalfType& operator/=(float v) { return *this = HalfType(float(*this) / v); }
};

using float16 = HalfType<Float16Format>;
using bfloat16 = HalfType<BFloat16Format>;
static_assert(sizeof(float16) == 2 && std::is_trivial_v<float16> && sizeof(bfloat16) == 2);

template <class T> inline constexpr bool is_half_v = std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;
// Floating-point element types: the IEEE ones and the two 16-bit ones.
template <class T> inline constexpr bool is_float_v = std::is_floating_point_v<T> || is_half_v<T>;
// The type a kernel computes an element of T in: float for the 16-bit types, T otherwise.
template <class T> using ComputeType = std::conditional_t<is_half_v<T>, float, T>;

}  // namespace mx
