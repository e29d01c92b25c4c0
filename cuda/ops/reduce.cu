// GPU launch of the reduction family (ndarray/ops/reduce.cpp has the ops and the CPU loops), over
// (outer, length, inner).
// - inner == 1 (rows, and full reductions): blocks reduce chunks of a row with warp shuffles;
//   long rows are split across blocks and a second pass combines the per-chunk partials.
// - inner > 1 (columns): one thread per output, reading coalesced across neighbouring outputs.
//   When there are too few outputs to fill the GPU (a bias gradient: 4096 columns of 4096 rows),
//   the rows are split into chunks too, one thread per (chunk, output), and a second pass combines
//   the chunks.
// Accumulators carry the position too, so that argmax/argmin share the code of max/min.
#include <type_traits>

#include "cuda/launch.hpp"
#include "ndarray/ops/functors.hpp"
#include "ndarray/ops/op_table.hpp"
#include "ndarray/ops/reduce_kernels.hpp"
#include "cuda/module_preload.hpp"

NDG_CUDA_MODULE_ANCHOR()

namespace mx::op::gpu {
namespace {

using cuda::global_thread;
using cuda::grid_stride;
using cuda::kThreads;

template <ReduceOp op, class T>
struct Acc {
  // Sums accumulate in SumType<T> (float for the 16-bit floats, int64 for integers); comparisons
  // in T, with the 1- and 2-byte types widened for warp shuffles (16-bit floats to float, exactly).
  using Wide = std::conditional_t<mx::is_half_v<T>, float, std::conditional_t<(sizeof(T) < 4), int, T>>;
  using Value = std::conditional_t<op == ReduceOp::sum, functors::SumType<T>, Wide>;
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

// Thread (o, c, i) reduces in[o, chunk c of the length, i]. With one chunk it writes the result
// out[o, i]; otherwise the partial partials[o, c, i] for finish_columns.
template <ReduceOp op, class T, class Out>
__global__ void reduce_columns(const T* in, ReduceShape s, int chunks, Out* out, Acc<op, T>* partials) {
  const std::int64_t per_chunk = (s.length + chunks - 1) / chunks;
  const std::int64_t work = s.outer * chunks * s.inner;
  for (std::int64_t j = global_thread(); j < work; j += grid_stride()) {
    const std::int64_t o = j / (chunks * s.inner), c = j / s.inner % chunks, i = j % s.inner;
    const std::int64_t begin = c * per_chunk, end = begin + per_chunk < s.length ? begin + per_chunk : s.length;
    const T* base = in + o * s.length * s.inner + i;
    Acc<op, T> acc = empty_acc<op, T>();
    for (std::int64_t k = begin; k < end; ++k) {
      acc = combine<op, T>(acc, Acc<op, T>{static_cast<typename Acc<op, T>::Value>(base[k * s.inner]), k});
    }
    if (chunks == 1) out[o * s.inner + i] = result<op, T, Out>(acc);
    else partials[j] = acc;
  }
}

template <ReduceOp op, class T, class Out>
__global__ void finish_columns(const Acc<op, T>* partials, ReduceShape s, int chunks, Out* out) {
  for (std::int64_t j = global_thread(); j < s.outer * s.inner; j += grid_stride()) {
    const std::int64_t o = j / s.inner, i = j % s.inner;
    Acc<op, T> acc = empty_acc<op, T>();
    for (int c = 0; c < chunks; ++c) acc = combine<op, T>(acc, partials[(o * chunks + c) * s.inner + i]);
    out[j] = result<op, T, Out>(acc);
  }
}

// Rows (inner == 1) go one block per row unless there are more than the grid's y limit; the
// others (columns, and very many rows) one thread per output.
bool by_rows(ReduceShape s) { return s.inner == 1 && s.outer <= 65535; }

// Chunks each reduced line is split into. Rows: enough blocks to fill the GPU about four times
// over, each chunk at least 4096 elements long. Columns: enough threads to fill the GPU (2048 per
// multiprocessor), each chunk at least 32 elements long.
int chunks_for(int multiprocessors, ReduceShape s) {
  const std::int64_t outputs = s.outer * s.inner;
  if (outputs == 0) return 1;
  const std::int64_t wanted = by_rows(s) ? (std::int64_t{4} * multiprocessors + outputs - 1) / outputs
                                         : (std::int64_t{2048} * multiprocessors + outputs - 1) / outputs;
  const std::int64_t min_chunk = by_rows(s) ? 4096 : 32;
  const std::int64_t max_useful = (s.length + min_chunk - 1) / min_chunk;
  return static_cast<int>(std::clamp<std::int64_t>(std::min(wanted, max_useful), 1, 1024));
}

// Bytes of the per-chunk partials when lines are split into chunks.
std::size_t scratch_bytes(int multiprocessors, ReduceShape s) {
  const int chunks = chunks_for(multiprocessors, s);
  return chunks > 1 ? static_cast<std::size_t>(s.outer * chunks * s.inner) * 16 : 0;  // 16 >= sizeof(Acc)
}

template <ReduceOp op, class T>
struct ReduceLaunch {
  using Out = std::conditional_t<functors::is_arg_reduce(op), float, T>;
  static void run(const ExecContext& ec, const void* in_raw, void* out_raw, ReduceShape s) {
    const T* in = static_cast<const T*>(in_raw);
    Out* out = static_cast<Out*>(out_raw);
    if (s.outer * s.inner == 0) return;
    const int chunks = chunks_for(ec.multiprocessors, s);
    const Workspace scratch(ec, scratch_bytes(ec.multiprocessors, s));  // freed stream-ordered after the kernels
    auto* partials = scratch.as<Acc<op, T>>();
    const char* name = op_name(op);
    const cudaStream_t stream = cuda::stream_of(ec);
    if (!by_rows(s)) {
      cuda::launch(stream, name, s.outer * chunks * s.inner, &reduce_columns<op, T, Out>, in, s, chunks, out, partials);
      if (chunks > 1) cuda::launch(stream, name, s.outer * s.inner, &finish_columns<op, T, Out>, partials, s, chunks, out);
    } else {
      const unsigned rows = static_cast<unsigned>(s.outer);
      cuda::launch(stream, name, dim3(chunks, rows), &reduce_rows<op, T, Out>, in, s.length, chunks, out, partials);
      if (chunks > 1) cuda::launch(stream, name, dim3(rows), &finish_rows<op, T, Out>, partials, chunks, out);
    }
  }
};

using ReduceFn = void (*)(const ExecContext&, const void*, void*, ReduceShape);

}  // namespace

void reduce(const ExecContext& ec, const Invocation& inv) {
  OpTable<ReduceOp, ReduceLaunch, ReduceFn>::get(inv.params.as<ReduceParams>().op, inv.inputs[0].dtype())(
      ec, inv.inputs[0].data(), inv.outputs[0].data(), reduce_shape(inv));
}

}  // namespace mx::op::gpu
