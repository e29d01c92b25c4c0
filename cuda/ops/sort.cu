// GPU launches of topk, sort, argsort and _backward_topk (ndarray/ops/sort.cpp has the ops and the
// CPU loops). Each row along the axis is one segment of CUB's stable segmented sort, keyed by the
// row's values (in float32 for 16-bit data, which holds them exactly) with their positions as
// values; the outputs are then read through the sorted positions. The scratch (keys, positions,
// segment offsets, CUB's temporary storage) comes from the pool, so the whole op is capturable.
// topk with k <= kSelectMax takes one block per row instead (select_rows): a sort of 10,000 scores
// for the best 5 costs CUB's segmented sort about 180 µs on an H200, the selection a few.
#include <cub/device/device_segmented_sort.cuh>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "cuda/launch.hpp"
#include "cuda/module_preload.hpp"
#include "ndarray/core/describe.hpp"
#include "ndarray/ops/sort_kernels.hpp"

NDG_CUDA_MODULE_ANCHOR()

namespace mx::op::gpu {
namespace {

// The key of a value: NaN of either sign as the positive quiet NaN, which the ordered bits below
// put above +inf, and -0 as +0, so that the order is the CPU loops' (sorts_before, ties by position).
template <class K>
__device__ K sort_key(K v) {
  if constexpr (std::is_floating_point_v<K>) {
    if (!(v == v)) return std::numeric_limits<K>::quiet_NaN();
    if (v == K(0)) return K(0);
  }
  return v;
}

// Every key is sorted as an unsigned integer of the same order, so that CUB sorts only two key
// types, ascending, whatever the data's dtype and the direction (its segmented sort compiles for
// minutes per key type and direction):
//   floating   the radix sort's bit twiddle, negative values' bits inverted, positive ones' sign bit
//              set (CUB sorts short segments by comparisons, under which NaN would compare equal to
//              everything and leave a row unsorted);
//   signed     the sign bit flipped;  unsigned  widened;
// and a descending sort is the ascending sort of the keys' complements (~u reverses the order and
// keeps ties tied, so that the stable sort still takes them in order of position).
template <class K>
struct OrderedKey {
  using type = std::conditional_t<sizeof(K) == 8, std::uint64_t, std::uint32_t>;
};

template <class K>
__device__ typename OrderedKey<K>::type ordered_key(K v, bool descending) {
  using U = typename OrderedKey<K>::type;
  constexpr U sign = U(1) << (sizeof(U) * 8 - 1);
  U u;
  if constexpr (std::is_floating_point_v<K>) {
    v = sort_key(v);
    memcpy(&u, &v, sizeof u);
    u = (u & sign) ? ~u : (u | sign);
  } else if constexpr (std::is_signed_v<K>) {
    u = static_cast<U>(v) ^ sign;
  } else {
    u = static_cast<U>(v);
  }
  return descending ? ~u : u;
}

// Row r = (outer, inner) of the data as segment r: keys, positions 0..length-1, and the segments'
// begin offsets (offsets[rows] = n closes the last).
template <class T, class K>
__global__ void gather_rows(typename OrderedKey<K>::type* keys, std::int32_t* positions, std::int64_t* offsets,
                            const T* data, SortShape s, std::int64_t n, bool descending) {
  for (std::int64_t i = cuda::global_thread(); i < n; i += cuda::grid_stride()) {
    const std::int64_t row = i / s.length, j = i % s.length, o = row / s.inner, in = row % s.inner;
    keys[i] = ordered_key(static_cast<K>(data[(o * s.length + j) * s.inner + in]), descending);
    positions[i] = static_cast<std::int32_t>(j);
    if (j == 0) offsets[row] = i;
    if (i == 0) offsets[n / s.length] = n;
  }
}

// For sorted element p of row r: the first k give the values and indices, and every one its
// mask element (1 for the first k, 0 for the rest: each element of the mask is written once).
template <class T, class I>
__global__ void write_sorted(T* values, I* indices, T* mask, const T* data, const std::int32_t* order, SortShape s,
                             std::int64_t n) {
  for (std::int64_t p = cuda::global_thread(); p < n; p += cuda::grid_stride()) {
    const std::int64_t row = p / s.length, j = p % s.length, o = row / s.inner, in = row % s.inner;
    const std::int64_t from = (o * s.length + order[p]) * s.inner + in;
    if (j < s.k) {
      const std::int64_t at = (o * s.k + j) * s.inner + in;
      if (values) values[at] = data[from];
      if (indices) indices[at] = static_cast<I>(order[p]);
    }
    if (mask) mask[from] = j < s.k ? T(1) : T(0);
  }
}

// dx[o, index[o, j, in], in] = g[o, j, in]: the selected positions are distinct within a row.
template <class T, class I>
__global__ void scatter_sorted(T* dx, const T* g, const I* index, SortShape s, std::int64_t n) {
  for (std::int64_t i = cuda::global_thread(); i < n; i += cuda::grid_stride()) {
    const std::int64_t in = i % s.inner, o = i / (s.inner * s.k);
    dx[(o * s.length + static_cast<std::int64_t>(index[i])) * s.inner + in] = g[i];
  }
}

// --- topk of few: a block per row ------------------------------------------------------------------
// The order is the sort's: ascending (key, position) pairs, the key ordered_key's. Each thread
// keeps the k first pairs of its strided share of the row, sorted; then k rounds take the first
// of the threads' heads (a block-wide minimum), whose thread moves on to its next.
constexpr int kSelectMax = 32;
constexpr int kSelectThreads = 1024;  // at most; a short row's block has a warp per 32 elements

template <class U>
struct Pair {
  U key;
  std::int32_t position;
};

template <class U>
__device__ __forceinline__ bool before(const Pair<U>& a, const Pair<U>& b) {
  return a.key < b.key || (a.key == b.key && a.position < b.position);
}

template <class U>
__device__ __forceinline__ Pair<U> first_of_warp(Pair<U> v) {
  for (int offset = 16; offset > 0; offset /= 2) {
    Pair<U> o{__shfl_down_sync(0xffffffffu, v.key, offset), __shfl_down_sync(0xffffffffu, v.position, offset)};
    if (before(o, v)) v = o;
  }
  return v;
}

template <class T, class K, class I>
__global__ void select_rows(T* values, I* indices, T* mask, const T* data, SortShape s, bool descending) {
  using U = typename OrderedKey<K>::type;
  constexpr U kLast = ~U(0);
  const std::int64_t row = blockIdx.x, o = row / s.inner, in = row % s.inner;
  const auto at = [&](std::int64_t j) { return (o * s.length + j) * s.inner + in; };
  const int k = static_cast<int>(s.k);
  Pair<U> mine[kSelectMax];
  int count = 0;
  for (std::int64_t j = threadIdx.x; j < s.length; j += blockDim.x) {
    const Pair<U> p{ordered_key(static_cast<K>(data[at(j)]), descending), static_cast<std::int32_t>(j)};
    if (mask) mask[at(j)] = T(0);
    if (count == k && !before(p, mine[k - 1])) continue;
    int slot = count < k ? count++ : k - 1;
    for (; slot > 0 && before(p, mine[slot - 1]); --slot) mine[slot] = mine[slot - 1];
    mine[slot] = p;
  }
  __shared__ Pair<U> heads[kSelectThreads / 32];
  __shared__ std::int32_t chosen;
  int next = 0;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
  __syncthreads();  // the mask's zeros written before its ones
  for (int r = 0; r < k && r < s.length; ++r) {
    Pair<U> head = next < count ? mine[next] : Pair<U>{kLast, INT32_MAX};
    Pair<U> best = first_of_warp(head);
    if (lane == 0) heads[warp] = best;
    __syncthreads();
    if (warp == 0) {
      best = lane < warps ? heads[lane] : Pair<U>{kLast, INT32_MAX};
      best = first_of_warp(best);
      if (lane == 0) chosen = best.position;
    }
    __syncthreads();
    const std::int32_t j = chosen;
    if (next < count && mine[next].position == j) ++next;
    if (threadIdx.x == 0) {
      const std::int64_t out = (o * s.k + r) * s.inner + in;
      if (values) values[out] = data[at(j)];
      if (indices) indices[out] = static_cast<I>(j);
      if (mask) mask[at(j)] = T(1);
    }
    __syncthreads();  // `chosen` read by every thread before the next round writes it
  }
}

std::size_t aligned(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

// The stable ascending segmented sort of `rows` segments of `length` keys with their positions;
// the sorted positions land in `order_out`.
template <class K>
void sort_segments(const ExecContext& ec, const char* op, const K* keys, K* keys_out, const std::int32_t* positions,
                   std::int32_t* order_out, std::int64_t n, std::int64_t rows, const std::int64_t* offsets, void* temp,
                   std::size_t& temp_bytes) {
  cuda::check(cub::DeviceSegmentedSort::StableSortPairs(temp, temp_bytes, keys, keys_out, positions, order_out, n, rows,
                                                        offsets, offsets + 1, cuda::stream_of(ec)),
              op);
}

}  // namespace

namespace {

// The sort of inv's rows with keys K (float for 16-bit data T) and indices I: keys, positions and
// offsets gathered, the segments sorted, the outputs written. The scratch: keys in and out,
// positions in and out, offsets, then CUB's storage.
template <class T, class K, class I>
void sort_rows(const ExecContext& ec, const Invocation& inv, SortShape s, std::int64_t rows, std::int64_t n) {
  using U = typename OrderedKey<K>::type;
  const auto& p = inv.params.as<SortParams>();
  const SortOutputs o = sort_outputs(p);
  const auto output = [&](int i) { return i < 0 ? nullptr : inv.outputs[static_cast<std::size_t>(i)].data(); };
  const T* data = static_cast<const T*>(inv.inputs[0].data());
  if (p.kind == SortKind::topk && s.k >= 1 && s.k <= kSelectMax) {
    const int threads = static_cast<int>(std::min<std::int64_t>(kSelectThreads, (s.length + 31) / 32 * 32));
    select_rows<T, K, I><<<static_cast<unsigned>(rows), threads, 0, cuda::stream_of(ec)>>>(
        static_cast<T*>(output(o.values)), static_cast<I*>(output(o.indices)), static_cast<T*>(output(o.mask)), data, s,
        !p.is_ascend);
    cuda::check_launch(inv.op->name);
    return;
  }
  const std::size_t key_bytes = aligned(static_cast<std::size_t>(n) * sizeof(U));
  const std::size_t position_bytes = aligned(static_cast<std::size_t>(n) * sizeof(std::int32_t));
  const std::size_t offset_bytes = aligned(static_cast<std::size_t>(rows + 1) * sizeof(std::int64_t));
  std::size_t temp_bytes = 0;
  sort_segments<U>(ec, inv.op->name, nullptr, nullptr, nullptr, nullptr, n, rows, nullptr, nullptr, temp_bytes);
  const Workspace ws(ec, 2 * key_bytes + 2 * position_bytes + offset_bytes + temp_bytes);
  char* at = ws.as<char>();
  U* keys = reinterpret_cast<U*>(at);
  U* keys_out = reinterpret_cast<U*>(at + key_bytes);
  auto* positions = reinterpret_cast<std::int32_t*>(at + 2 * key_bytes);
  auto* order = reinterpret_cast<std::int32_t*>(at + 2 * key_bytes + position_bytes);
  auto* offsets = reinterpret_cast<std::int64_t*>(at + 2 * key_bytes + 2 * position_bytes);
  void* temp = at + 2 * key_bytes + 2 * position_bytes + offset_bytes;
  cuda::launch(ec, inv.op->name, n, &gather_rows<T, K>, keys, positions, offsets, data, s, n, !p.is_ascend);
  sort_segments<U>(ec, inv.op->name, keys, keys_out, positions, order, n, rows, offsets, temp, temp_bytes);
  cuda::launch(ec, inv.op->name, n, &write_sorted<T, I>, static_cast<T*>(output(o.values)),
               static_cast<I*>(output(o.indices)), static_cast<T*>(output(o.mask)), data, order, s, n);
}

}  // namespace

void sort(const ExecContext& ec, const Invocation& inv) {
  const SortShape s = sort_shape(inv);
  const SortOutputs o = sort_outputs(inv.params.as<SortParams>());
  const std::int64_t rows = s.outer * s.inner, n = rows * s.length;
  if (n == 0) return;
  if (n > std::numeric_limits<std::int32_t>::max()) {
    throw ValueError(std::string(inv.op->name) + ": sorting " + std::to_string(n) +
                     " elements on a GPU needs fewer than 2^31 (data " + nd::describe(inv.inputs[0]) + ")");
  }
  dispatch_dtype(inv.inputs[0].dtype(), [&](auto data_tag) {
    dispatch_dtype(o.indices >= 0 ? inv.outputs[static_cast<std::size_t>(o.indices)].dtype() : DType::int64, [&](auto index_tag) {
      using T = decltype(data_tag);
      using I = decltype(index_tag);
      if constexpr (is_half_v<T>) sort_rows<T, float, I>(ec, inv, s, rows, n);
      else sort_rows<T, T, I>(ec, inv, s, rows, n);
    });
  });
}

// Zero, then the values' gradient at the positions their indices give.
void sort_backward(const ExecContext& ec, const Invocation& inv) {
  const SortShape s = sort_shape(inv);
  const nd::NDArray& dx = inv.outputs[0];
  const std::int64_t n = inv.inputs[0].size();
  dispatch_floating(inv.inputs[0].dtype(), "_backward_topk", [&](auto grad_tag) {
    dispatch_dtype(inv.inputs[1].dtype(), [&](auto index_tag) {
      using T = decltype(grad_tag);
      using I = decltype(index_tag);
      if (dx.size() > 0) {
        NDG_CUDA_CHECK(cudaMemsetAsync(dx.data(), 0, static_cast<std::size_t>(dx.size()) * sizeof(T), cuda::stream_of(ec)));
      }
      cuda::launch(ec, inv.op->name, n, &scatter_sorted<T, I>, static_cast<T*>(dx.data()),
                   static_cast<const T*>(inv.inputs[0].data()), static_cast<const I*>(inv.inputs[1].data()), s, n);
    });
  });
}

}  // namespace mx::op::gpu
