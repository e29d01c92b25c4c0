#pragma once
// CurandStream: a cuRAND generator (host or device) that follows mx::random::seed and knows its
// position (values drawn since the seed), so that several contexts can draw at one position and
// get identical values. Not thread-safe: callers hold a lock.
#include <curand.h>

#include <cstdint>

#include "ndarray/core/dtype.hpp"

namespace mx::cuda {

// The generator type of every context (cpu(0) included, through cuRAND's host API).
inline constexpr curandRngType_t kGenerator = CURAND_RNG_PSEUDO_PHILOX4_32_10;

// n float32 or float64 values from gen: uniform (0, 1], or normal (n even).
void generate_uniform(curandGenerator_t gen, DType dt, void* out, std::int64_t n);
void generate_normal(curandGenerator_t gen, DType dt, void* out, std::int64_t n, double loc, double scale);

class CurandStream {
 public:
  explicit CurandStream(bool host) : host_(host) {}
  CurandStream(const CurandStream&) = delete;
  CurandStream& operator=(const CurandStream&) = delete;

  // The generator, ready to draw n values: reseeded if mx::random::seed was called, and moved to
  // `offset` when offset >= 0 (else it continues). Call with the generator's device current.
  curandGenerator_t prepare(std::int64_t offset, std::int64_t n);
  std::uint64_t position();  // values drawn since the last seed
  // Destroys the generator and its device state; the next draw makes it again at the same position.
  void release() noexcept;
  // The stream device draws are queued on; set before the first prepare() or position().
  void set_stream(cudaStream_t stream) { stream_ = stream; }

 private:
  bool host_;
  cudaStream_t stream_ = nullptr;
  curandGenerator_t generator_ = nullptr;  // made on first use, kept until release()
  std::uint64_t generation_ = ~std::uint64_t{0};
  std::uint64_t position_ = 0;
  void follow_seed();
};

}  // namespace mx::cuda
