// GPU launch of _multi_update (ndarray/ops/multi_update.cpp): every weight of the list in one
// grid-stride kernel over their virtual concatenation, the rule's arithmetic from
// ndarray/ops/update_rules.hpp. The pointers travel in the kernel's parameter (CUDA 12.1's limit of
// 32 KiB on Volta and newer): up to kMaxTensors weights per launch, so a ResNet-50 (161 tensors)
// or a BERT-base (about 200) updates in one launch; longer lists take several.
#include "cuda/launch.hpp"
#include "ndarray/ops/multi_update.hpp"
#include "cuda/module_preload.hpp"

NDG_CUDA_MODULE_ANCHOR()

namespace mx::op::gpu {
namespace {

using cuda::global_thread;
using cuda::grid_stride;

constexpr int kMaxTensors = 256;

template <class T, class S>
struct Entry {
  T* weight;
  const T* grad;
  S* states[3];
  S* master;       // null without multi_precision
  std::int64_t end;  // weight t holds elements [end[t - 1], end[t]) of the concatenation
};

template <class T, class S>
struct List {
  Entry<T, S> entry[kMaxTensors];
  int count = 0;
  int first = 0;  // the list's first weight among the op's, for the scalars
};

template <class T, class S>
__global__ void multi_update_elements(const __grid_constant__ List<T, S> list, RuleParams p,
                                      const TensorScalars* scalars, const float* norms) {
  using A = ComputeType<S>;
  const std::int64_t total = list.entry[list.count - 1].end;
  int t = 0;  // elements of one thread come in increasing order: the search goes on from the last
  for (std::int64_t i = global_thread(); i < total; i += grid_stride()) {
    if (list.entry[t].end <= i) {
      int lo = t + 1, hi = list.count - 1;
      while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (list.entry[mid].end > i) hi = mid;
        else lo = mid + 1;
      }
      t = lo;
    }
    const Entry<T, S>& e = list.entry[t];
    const std::int64_t j = i - (t ? list.entry[t - 1].end : 0);
    const A updated = apply_rule<A, S>(p, scalars[list.first + t], e.master ? A(e.master[j]) : A(e.weight[j]),
                                       A(e.grad[j]), e.states, j, norms ? norms + 2 * (list.first + t) : nullptr);
    if (e.master) e.master[j] = static_cast<S>(updated);
    e.weight[j] = static_cast<T>(updated);
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
      List<T, S> list;
      const auto flush = [&](int next) {
        if (list.count > 0) {
          cuda::launch(ec, inv.op->name, list.entry[list.count - 1].end, &multi_update_elements<T, S>, list, p, scalars,
                       norms);
        }
        list.count = 0;
        list.first = next;
      };
      for (std::size_t i = 0; i < n; ++i) {
        const std::int64_t size = inv.inputs[i * each].size();
        if (list.count == 0) list.first = static_cast<int>(i);
        if (size == 0) {  // keeps its place in the list, with no elements
          if (list.count == 0) continue;
        }
        Entry<T, S>& e = list.entry[list.count];
        e.weight = static_cast<T*>(inv.outputs[i * outs].data());
        e.grad = static_cast<const T*>(inv.inputs[i * each + 1].data());
        for (int k = 0; k < 3; ++k) e.states[k] = k < p.num_states ? static_cast<S*>(inv.outputs[i * outs + 1 + k].data()) : nullptr;
        e.master = p.master ? static_cast<S*>(inv.outputs[i * outs + outs - 1].data()) : nullptr;
        e.end = (list.count ? list.entry[list.count - 1].end : 0) + size;
        if (++list.count == kMaxTensors) flush(static_cast<int>(i + 1));
      }
      flush(static_cast<int>(n));
    };
    if (p.master) run(float{});
    else run(T{});
  });
}

}  // namespace mx::op::gpu
