// GPU reductions over (outer, length, inner).
// - inner == 1 (rows, and full reductions): blocks reduce chunks of a row with warp shuffles;
//   long rows are split across blocks and a second pass combines the per-chunk partials.
// - inner > 1 (columns): one thread per output, reading coalesced across neighbouring outputs.
// Accumulators carry the position too, so that argmax/argmin share the code of max/min.
#include <type_traits>

#include "cuda/check.hpp"
#include "cuda/kernels.hpp"
#include "cuda/launch.hpp"
#include "ndarray/functors.hpp"
#include "ndarray/op_table.hpp"

namespace mx::cuda {
namespace {

template <ReduceOp op, class T>
struct Acc {
  // Sums accumulate in T for floats, int64 for integers; comparisons in T (uint8 widened to int
  // for warp shuffles).
  using Value = std::conditional_t<op == ReduceOp::sum, functors::SumType<T>,
                                   std::conditional_t<(sizeof(T) < 4), int, T>>;
  Value value;
  std::int64_t index;
};

template <ReduceOp op, class T>
__device__ __forceinline__ Acc<op, T> combine(Acc<op, T> a, Acc<op, T> b) {
  if constexpr (op == ReduceOp::sum) {
    return {a.value + b.value, 0};
  } else {
    using C = functors::Compare<op>;
    const bool take_b = b.index >= 0 && (a.index < 0 || C::better(b.value, a.value) ||
                                         (!C::better(a.value, b.value) && b.index < a.index));
    return take_b ? b : a;
  }
}

// The empty accumulator: index -1 marks "no element yet" for comparisons.
template <ReduceOp op, class T>
__device__ __forceinline__ Acc<op, T> empty_acc() {
  return {typename Acc<op, T>::Value(0), op == ReduceOp::sum ? 0 : -1};
}

template <ReduceOp op, class T>
__device__ Acc<op, T> block_reduce(Acc<op, T> acc) {
  __shared__ Acc<op, T> warp_results[kThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) {
    Acc<op, T> other{__shfl_down_sync(0xffffffffu, acc.value, offset),
                     __shfl_down_sync(0xffffffffu, acc.index, offset)};
    acc = combine<op, T>(acc, other);
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_results[warp] = acc;
  __syncthreads();
  if (warp == 0) {
    acc = lane < kThreads / 32 ? warp_results[lane] : empty_acc<op, T>();
    for (int offset = 16; offset > 0; offset /= 2) {
      Acc<op, T> other{__shfl_down_sync(0xffffffffu, acc.value, offset),
                       __shfl_down_sync(0xffffffffu, acc.index, offset)};
      acc = combine<op, T>(acc, other);
    }
  }
  return acc;  // valid in thread 0
}

template <ReduceOp op, class T, class Out>
__device__ __forceinline__ Out result(Acc<op, T> acc) {
  if constexpr (functors::is_arg_reduce(op)) return static_cast<Out>(acc.index);
  else return static_cast<Out>(acc.value);
}

// Block (chunk, row) reduces in[row, chunk's range]. With one chunk per row it writes the result;
// otherwise it writes a partial for finish_rows.
template <ReduceOp op, class T, class Out>
__global__ void reduce_rows(const T* in, std::int64_t length, int chunks, Out* out, Acc<op, T>* partials) {
  const std::int64_t row = blockIdx.y;
  const std::int64_t per_chunk = (length + chunks - 1) / chunks;
  const std::int64_t begin = blockIdx.x * per_chunk;
  const std::int64_t end = begin + per_chunk < length ? begin + per_chunk : length;
  const T* base = in + row * length;
  Acc<op, T> acc = empty_acc<op, T>();
  for (std::int64_t k = begin + threadIdx.x; k < end; k += blockDim.x) {
    acc = combine<op, T>(acc, Acc<op, T>{static_cast<typename Acc<op, T>::Value>(base[k]), k});
  }
  acc = block_reduce<op, T>(acc);
  if (threadIdx.x != 0) return;
  if (chunks == 1) out[row] = result<op, T, Out>(acc);
  else partials[row * chunks + blockIdx.x] = acc;
}

template <ReduceOp op, class T, class Out>
__global__ void finish_rows(const Acc<op, T>* partials, int chunks, Out* out) {
  const std::int64_t row = blockIdx.x;
  Acc<op, T> acc = empty_acc<op, T>();
  for (int c = threadIdx.x; c < chunks; c += blockDim.x) acc = combine<op, T>(acc, partials[row * chunks + c]);
  acc = block_reduce<op, T>(acc);
  if (threadIdx.x == 0) out[row] = result<op, T, Out>(acc);
}

template <ReduceOp op, class T, class Out>
__global__ void reduce_columns(const T* in, ReduceShape s, Out* out) {
  const std::int64_t outputs = s.outer * s.inner;
  for (std::int64_t j = global_thread(); j < outputs; j += grid_stride()) {
    const std::int64_t o = j / s.inner, i = j % s.inner;
    const T* base = in + o * s.length * s.inner + i;
    Acc<op, T> acc = empty_acc<op, T>();
    for (std::int64_t k = 0; k < s.length; ++k) {
      acc = combine<op, T>(acc, Acc<op, T>{static_cast<typename Acc<op, T>::Value>(base[k * s.inner]), k});
    }
    out[j] = result<op, T, Out>(acc);
  }
}

// Chunks per row: enough blocks to fill the GPU about four times over, each chunk at least
// 4096 elements long.
int chunks_for(int multiprocessors, ReduceShape s) {
  if (s.inner != 1 || s.outer == 0 || s.outer > 65535) return 1;
  const std::int64_t wanted = (std::int64_t{4} * multiprocessors + s.outer - 1) / s.outer;
  const std::int64_t max_useful = (s.length + 4095) / 4096;
  return static_cast<int>(std::clamp<std::int64_t>(std::min(wanted, max_useful), 1, 1024));
}

template <ReduceOp op, class T>
struct ReduceLaunch {
  using Out = std::conditional_t<functors::is_arg_reduce(op), float, T>;
  static void run(cudaStream_t stream, int multiprocessors, const void* in_raw, void* out_raw, ReduceShape s,
                  void* scratch) {
    const T* in = static_cast<const T*>(in_raw);
    Out* out = static_cast<Out*>(out_raw);
    if (s.outer * s.inner == 0) return;
    if (s.inner != 1 || s.outer > 65535) {  // y-grid limit: many short rows go one per thread
      reduce_columns<op, T, Out><<<blocks_for(s.outer * s.inner), kThreads, 0, stream>>>(in, s, out);
    } else {
      const int chunks = chunks_for(multiprocessors, s);
      auto* partials = static_cast<Acc<op, T>*>(scratch);
      reduce_rows<op, T, Out><<<dim3(chunks, static_cast<unsigned>(s.outer)), kThreads, 0, stream>>>(
          in, s.length, chunks, out, partials);
      if (chunks > 1) {
        check_launch(op_name(op));
        finish_rows<op, T, Out><<<static_cast<unsigned>(s.outer), kThreads, 0, stream>>>(partials, chunks, out);
      }
    }
    check_launch(op_name(op));
  }
};

using ReduceFn = void (*)(cudaStream_t, int, const void*, void*, ReduceShape, void*);

}  // namespace

std::size_t reduce_scratch_bytes(int multiprocessors, ReduceShape shape) {
  const int chunks = chunks_for(multiprocessors, shape);
  return chunks > 1 ? static_cast<std::size_t>(shape.outer * chunks) * 16 : 0;  // 16 >= sizeof(Acc)
}

void reduce(cudaStream_t stream, int multiprocessors, ReduceOp op, DType dt, const void* in, void* out,
            ReduceShape shape, void* scratch) {
  OpTable<ReduceOp, ReduceLaunch, ReduceFn>::get(op, dt)(stream, multiprocessors, in, out, shape, scratch);
}

}  // namespace mx::cuda
