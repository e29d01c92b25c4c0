// GPU launch of _multi_update (ndarray/ops/multi_update.cpp): every weight of the list in one
// launch, the arithmetic of ndarray/ops/update_rules.hpp compiled once per rule (the rule is a
// template parameter, so its switch folds away).
//
// Work: each block takes kChunk elements of one weight, found once per block by a binary search of
// the weights' first blocks. In a block, a thread takes kUnroll elements kThreads apart (each
// access coalesced), loads every operand of them (weight or master, gradient, the states the rule
// reads) before it computes, then stores: kUnroll elements' loads are in flight together, which
// a memory-bound update needs. The weights' pointers travel in the kernel's parameter (32 KiB on
// Volta and newer): up to kMaxTensors weights per launch, so a ResNet-50 (161 trained tensors, or
// 193 with BatchNorm's) or a BERT-base updates in one launch; longer lists take several.
#include <limits>
#include <string>

#include "cuda/launch.hpp"
#include "ndarray/ops/multi_update.hpp"
#include "cuda/module_preload.hpp"

NDG_CUDA_MODULE_ANCHOR()

namespace mx::op::gpu {
namespace {

constexpr int kMaxTensors = 256;
constexpr int kUnroll = 4;
constexpr std::int64_t kChunk = std::int64_t{cuda::kThreads} * kUnroll * 4;

template <class T, class S>
struct Entry {
  T* weight;
  const T* grad;
  S* states[3];
  S* master;               // null without multi_precision
  std::int64_t size;
  std::int32_t first_block;  // the weight's first block in the launch
  std::int32_t index;        // the weight's place in the op's list (its scalars and norms)
};

template <class T, class S>
struct List {
  Entry<T, S> entry[kMaxTensors];
  int count = 0;
};

template <UpdateRule R, class T, class S>
__global__ void __launch_bounds__(cuda::kThreads)
    multi_update_chunks(const __grid_constant__ List<T, S> list, RuleParams p, const TensorScalars* scalars,
                        const float* norms) {
  using A = ComputeType<S>;
  constexpr unsigned kRead = states_read(R), kWritten = states_written(R);
  // The block's weight: the last one whose first block is at most this one.
  const std::int32_t block = static_cast<std::int32_t>(blockIdx.x);
  int lo = 0, hi = list.count - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (list.entry[mid].first_block <= block) lo = mid;
    else hi = mid - 1;
  }
  const Entry<T, S>& e = list.entry[lo];
  const std::int64_t begin = static_cast<std::int64_t>(block - e.first_block) * kChunk;
  const std::int64_t end = e.size < begin + kChunk ? e.size : begin + kChunk;
  const TensorScalars t = scalars[e.index];
  const float* n = norms ? norms + 2 * e.index : nullptr;
  p.rule = R;
  for (std::int64_t base = begin + threadIdx.x; base < end; base += std::int64_t{cuda::kThreads} * kUnroll) {
    A w[kUnroll], g[kUnroll];
    S s[3][kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const std::int64_t i = base + k * cuda::kThreads;
      if (i < end) {
        w[k] = e.master ? A(e.master[i]) : A(e.weight[i]);
        g[k] = A(e.grad[i]);
#pragma unroll
        for (int j = 0; j < 3; ++j) {
          if ((kRead >> j & 1u) && j < p.num_states) s[j][k] = e.states[j][i];
        }
      }
    }
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      S* const local[3] = {&s[0][k], &s[1][k], &s[2][k]};
      if (base + k * cuda::kThreads < end) w[k] = apply_rule<A, S>(p, t, w[k], g[k], local, 0, n);
    }
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const std::int64_t i = base + k * cuda::kThreads;
      if (i < end) {
        if (e.master) e.master[i] = static_cast<S>(w[k]);
        e.weight[i] = static_cast<T>(w[k]);
#pragma unroll
        for (int j = 0; j < 3; ++j) {
          if ((kWritten >> j & 1u) && j < p.num_states) e.states[j][i] = s[j][k];
        }
      }
    }
  }
}

template <class T, class S>
using Kernel = void (*)(List<T, S>, RuleParams, const TensorScalars*, const float*);

// The kernel of `rule`: the first of rules R, R + 1, ... that it is.
template <class T, class S, int R = 0>
Kernel<T, S> kernel_for(UpdateRule rule) {
  if constexpr (R == kRuleCount) {
    throw ValueError("_multi_update: unknown rule " + std::to_string(static_cast<int>(rule)));
  } else {
    if (static_cast<int>(rule) == R) return &multi_update_chunks<static_cast<UpdateRule>(R), T, S>;
    return kernel_for<T, S, R + 1>(rule);
  }
}

}  // namespace

void multi_update(const ExecContext& ec, const Invocation& inv) {
  const RuleParams& p = inv.params.as<RuleParams>();
  const std::size_t n = static_cast<std::size_t>(p.num_weights);
  const std::size_t each = 2 + static_cast<std::size_t>(p.num_states + p.master), outs = each - 1;
  const auto* scalars = static_cast<const TensorScalars*>(inv.inputs[n * each].data());
  const auto* norms = p.norms ? static_cast<const float*>(inv.inputs.back().data()) : nullptr;
  dispatch_floating(inv.inputs[0].dtype(), inv.op->name, [&](auto tag) {
    using T = decltype(tag);
    const auto run = [&](auto state_tag) {
      using S = decltype(state_tag);
      const Kernel<T, S> kernel = kernel_for<T, S>(p.rule);
      List<T, S> list;
      std::int64_t blocks = 0;
      const auto flush = [&] {
        if (list.count > 0) cuda::launch(cuda::stream_of(ec), inv.op->name, dim3(static_cast<unsigned>(blocks)), kernel,
                                         list, p, scalars, norms);
        list.count = 0;
        blocks = 0;
      };
      for (std::size_t i = 0; i < n; ++i) {
        const std::int64_t size = inv.inputs[i * each].size();
        const std::int64_t chunks = (size + kChunk - 1) / kChunk;
        if (chunks == 0) continue;  // nothing to update
        if (list.count == kMaxTensors || blocks + chunks > std::numeric_limits<std::int32_t>::max()) flush();
        Entry<T, S>& e = list.entry[list.count++];
        e.weight = static_cast<T*>(inv.outputs[i * outs].data());
        e.grad = static_cast<const T*>(inv.inputs[i * each + 1].data());
        for (int k = 0; k < 3; ++k) e.states[k] = k < p.num_states ? static_cast<S*>(inv.outputs[i * outs + 1 + k].data()) : nullptr;
        e.master = p.master ? static_cast<S*>(inv.outputs[i * outs + outs - 1].data()) : nullptr;
        e.size = size;
        e.first_block = static_cast<std::int32_t>(blocks);
        e.index = static_cast<std::int32_t>(i);
        blocks += chunks;
      }
      flush();
    };
    // multi_precision: float32 states and master copy (16-bit weights only: the op's shape check).
    if constexpr (is_half_v<T>) {
      if (p.master) run(float{});
      else run(T{});
    } else {
      run(T{});
    }
  });
}

}  // namespace mx::op::gpu

// --- multi_sum_sq -------------------------------------------------------------------------------
// Two launches: a block per kSumChunk elements of an array writes that chunk's float64 sum of
// squares; then a block per array adds its chunks' sums. Both reduce in a fixed order.
namespace mx::op::gpu {
namespace {

struct SumList {
  const void* data[kMaxTensors];
  std::int64_t size[kMaxTensors];
  std::int32_t first_block[kMaxTensors + 1];  // the array's first chunk; [count]: the chunks of the launch
  int count = 0;
};

template <class T>
__global__ void __launch_bounds__(cuda::kThreads) chunk_sums(const __grid_constant__ SumList list, double* partial) {
  const std::int32_t block = static_cast<std::int32_t>(blockIdx.x);
  int lo = 0, hi = list.count - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (list.first_block[mid] <= block) lo = mid;
    else hi = mid - 1;
  }
  const T* x = static_cast<const T*>(list.data[lo]);
  const std::int64_t begin = static_cast<std::int64_t>(block - list.first_block[lo]) * kSumChunk;
  const std::int64_t end = list.size[lo] < begin + kSumChunk ? list.size[lo] : begin + kSumChunk;
  double sum = 0;
  for (std::int64_t i = begin + threadIdx.x; i < end; i += cuda::kThreads) {
    const double v = static_cast<double>(static_cast<ComputeType<T>>(x[i]));
    sum += v * v;
  }
  sum = cuda::block_sum(sum);
  if (threadIdx.x == 0) partial[block] = sum;
}

__global__ void __launch_bounds__(cuda::kThreads) array_sums(const __grid_constant__ SumList list,
                                                             const double* partial, float* out) {
  const int a = static_cast<int>(blockIdx.x);
  double sum = 0;
  for (std::int32_t c = list.first_block[a] + static_cast<std::int32_t>(threadIdx.x); c < list.first_block[a + 1];
       c += cuda::kThreads) {
    sum += partial[c];
  }
  sum = cuda::block_sum(sum);
  if (threadIdx.x == 0) out[a] = static_cast<float>(sum);
}

}  // namespace

void multi_sum_sq(const ExecContext& ec, const Invocation& inv) {
  float* out = static_cast<float*>(inv.outputs[0].data());
  const std::size_t n = inv.inputs.size();
  dispatch_floating(inv.inputs[0].dtype(), inv.op->name, [&](auto tag) {
    using T = decltype(tag);
    for (std::size_t first = 0; first < n; first += kMaxTensors) {
      SumList list;
      std::int64_t blocks = 0;
      for (std::size_t i = first; i < n && list.count < kMaxTensors; ++i) {
        list.data[list.count] = inv.inputs[i].data();
        list.size[list.count] = inv.inputs[i].size();
        list.first_block[list.count] = static_cast<std::int32_t>(blocks);
        blocks += (inv.inputs[i].size() + kSumChunk - 1) / kSumChunk;
        ++list.count;
      }
      list.first_block[list.count] = static_cast<std::int32_t>(blocks);
      const Workspace partial(ec, static_cast<std::size_t>(blocks > 0 ? blocks : 1) * sizeof(double));
      if (blocks > 0) {
        cuda::launch(cuda::stream_of(ec), inv.op->name, dim3(static_cast<unsigned>(blocks)), &chunk_sums<T>, list,
                     partial.as<double>());
      }
      cuda::launch(cuda::stream_of(ec), inv.op->name, dim3(static_cast<unsigned>(list.count)), &array_sums, list,
                   partial.as<const double>(), out + first);
    }
  });
}

}  // namespace mx::op::gpu
