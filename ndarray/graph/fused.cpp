// _FusedElementwise: the op, its CPU loop and the pass that makes it from a graph's steps
// (ndarray/graph/fused.hpp says what and why; cuda/ops/fused.cu has the kernel).
#include "ndarray/graph/fused.hpp"

#include <algorithm>
#include <type_traits>
#include <unordered_map>

#include "ndarray/ops/elementwise_functors.hpp"
#include "ndarray/ops/elementwise_kernels.hpp"
#include "ndarray/ops/parallel.hpp"

namespace mx::op {
namespace {

using nd::NDArray;

const FusedProgram& program_of(const Invocation& inv) { return *inv.params.as<FusedParams>().program; }

// Every output has the shape of the first input, in the program's dtype.
void fused_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const FusedProgram& p = program_of(inv);
  out.assign(p.outputs, OutputSpec{inv.inputs.at(0).shape(), p.dtype});
}

// The CPU loop interprets a block of kFusedBlock elements at a time: one dispatch per instruction
// and block, then a loop over the block that the compiler vectorises, each element through the
// same functor as the op's own kernel (an interpreter per element spent more on dispatch than the
// separate kernels spent on memory: 2-3x their time for a chain of 10 ops).
constexpr int kFusedBlock = 256;
template <class T>
using Slots = T[kFusedMaxInputs + kFusedMaxInstrs][kFusedBlock];

template <class T, class F>
void each(T* r, int n, F f) {
#pragma omp simd
  for (int i = 0; i < n; ++i) r[i] = f(i);
}

// fn(std::integral_constant<Op, op>{}) for the op given at run time: one dispatch.
template <class Fn>
void with_unary(UnaryOp op, Fn&& fn) {
  switch (op) {
#define NDG_FUSED_CASE(NAME, ...) \
  case UnaryOp::NAME: return fn(std::integral_constant<UnaryOp, UnaryOp::NAME>{});
    NDG_UNARY_OPS(NDG_FUSED_CASE)
#undef NDG_FUSED_CASE
    default: return;
  }
}
template <class Fn>
void with_binary(BinaryOp op, Fn&& fn) {
  switch (op) {
#define NDG_FUSED_CASE(NAME, ...) \
  case BinaryOp::NAME: return fn(std::integral_constant<BinaryOp, BinaryOp::NAME>{});
    NDG_BINARY_OPS(NDG_FUSED_CASE)
#undef NDG_FUSED_CASE
    default: return;
  }
}

template <class T>
void fused_block(const FusedProgram& p, Slots<T>& v, int n) {
  for (int j = 0; j < p.instrs; ++j) {
    const FusedInstr& in = p.code[j];
    T* r = v[p.inputs + j];
    const T *a = v[in.a], *b = v[in.b], *c = v[in.c];
    const auto unary = static_cast<UnaryOp>(in.op);
    const auto binary = static_cast<BinaryOp>(in.op);
    switch (in.kind) {
      case FusedInstr::unary:
        with_unary(unary, [&](auto op) {
          each(r, n, [&](int i) { return UnaryForward<decltype(op)::value>{}(a[i]); });
        });
        break;
      case FusedInstr::unary_backward:
        with_unary(unary, [&](auto op) {
          each(r, n, [&](int i) { return UnaryBackward<decltype(op)::value>{}(a[i], b[i], c[i]); });
        });
        break;
      case FusedInstr::binary:
        with_binary(binary, [&](auto op) {
          each(r, n, [&](int i) { return BinaryForward<decltype(op)::value>{}(a[i], b[i]); });
        });
        break;
      case FusedInstr::scalar:
        with_binary(binary, [&](auto op) {
          const ScalarForward<decltype(op)::value, T> f{T(in.constant), in.reverse};
          each(r, n, [&](int i) { return f(a[i]); });
        });
        break;
      case FusedInstr::scalar_backward:
        with_binary(binary, [&](auto op) {
          const ScalarBackward<decltype(op)::value, T> f{T(in.constant), in.reverse};
          each(r, n, [&](int i) { return f(a[i], b[i], c[i]); });
        });
        break;
    }
  }
}

template <class T>
void fused_loop(const FusedProgram& p, const Invocation& inv) {
  const T* in[kFusedMaxInputs] = {};
  T* out[kFusedMaxOutputs] = {};
  for (int k = 0; k < p.inputs; ++k) in[k] = static_cast<const T*>(inv.inputs[k].data());
  for (int o = 0; o < p.outputs; ++o) out[o] = static_cast<T*>(inv.outputs[o].data());
  const std::int64_t n = inv.inputs[0].size(), blocks = (n + kFusedBlock - 1) / kFusedBlock;
  parallel_for(blocks, [&](std::int64_t block) {
    Slots<T> v;
    const std::int64_t first = block * kFusedBlock;
    const int m = static_cast<int>(std::min<std::int64_t>(kFusedBlock, n - first));
    for (int k = 0; k < p.inputs; ++k) std::copy_n(in[k] + first, m, v[k]);
    fused_block(p, v, m);
    for (int o = 0; o < p.outputs; ++o) std::copy_n(v[p.out_slot[o]], m, out[o] + first);
  }, n * (p.instrs + 1));
}

void fused_cpu(const ExecContext&, const Invocation& inv) {
  const FusedProgram& p = program_of(inv);
  switch (p.dtype) {
    case DType::float16: return fused_loop<float16>(p, inv);
    case DType::bfloat16: return fused_loop<bfloat16>(p, inv);
    default: return fused_loop<float>(p, inv);
  }
}

struct Fusable {
  FusedInstr::Kind kind;
  std::uint8_t op;
};

// The instruction kind of each elementwise op.
const std::unordered_map<const OpDef*, Fusable>& fusable_ops() {
  static const auto table = [] {
    std::unordered_map<const OpDef*, Fusable> t;
    for (std::uint8_t i = 0; i < static_cast<std::uint8_t>(UnaryOp::count); ++i) {
      t.emplace(&unary_op(static_cast<UnaryOp>(i)), Fusable{FusedInstr::unary, i});
      t.emplace(&unary_backward_op(static_cast<UnaryOp>(i)), Fusable{FusedInstr::unary_backward, i});
    }
    for (std::uint8_t i = 0; i < static_cast<std::uint8_t>(BinaryOp::count); ++i) {
      t.emplace(&binary_op(static_cast<BinaryOp>(i)), Fusable{FusedInstr::binary, i});
      t.emplace(&scalar_op(static_cast<BinaryOp>(i)), Fusable{FusedInstr::scalar, i});
      t.emplace(&scalar_backward_op(static_cast<BinaryOp>(i)), Fusable{FusedInstr::scalar_backward, i});
    }
    return t;
  }();
  return table;
}

bool fusable_dtype(DType dt) { return dt == DType::float32 || dt == DType::float16 || dt == DType::bfloat16; }

// A step can join a run when it is an elementwise op on contiguous arrays of one shape (no
// broadcasting) and one fusable dtype, with one output.
const Fusable* fusable(const Invocation& step) {
  const auto it = fusable_ops().find(step.op);
  if (it == fusable_ops().end() || step.outputs.size() != 1) return nullptr;
  const NDArray& y = step.outputs[0];
  if (!fusable_dtype(y.dtype()) || !y.is_contiguous() || y.size() == 0) return nullptr;
  for (const NDArray& x : step.inputs) {
    if (x.is_none() || x.dtype() != y.dtype() || !x.is_contiguous() || x.shape() != y.shape()) return nullptr;
  }
  return &it->second;
}

// The fused step of steps [begin, end), or false where its inputs or outputs exceed the limits.
bool build(const std::vector<Invocation>& steps, const std::vector<StepUse>& uses, std::size_t begin,
           std::size_t end, FusedProgram& p, Invocation& fused) {
  p = FusedProgram{};
  p.dtype = steps[begin].outputs[0].dtype();
  fused = Invocation{&fused_elementwise_op(), {}, {}, {}};
  // An operand is step j's result when j is the latest step before k that wrote its buffer (a
  // buffer serves several values in turn, by liveness); otherwise an input of the run.
  const auto producer = [&](std::size_t k, const NDArray& x) -> long {
    for (std::size_t j = k; j-- > begin;) {
      if (steps[j].outputs[0].is(x)) return static_cast<long>(j);
    }
    return -1;
  };
  for (std::size_t k = begin; k < end; ++k) {
    for (const NDArray& x : steps[k].inputs) {
      if (producer(k, x) >= 0) continue;
      bool known = false;
      for (const NDArray& have : fused.inputs) known = known || have.is(x);
      if (known) continue;
      if (fused.inputs.size() == kFusedMaxInputs) return false;
      fused.inputs.push_back(x);
    }
  }
  p.inputs = static_cast<std::uint8_t>(fused.inputs.size());
  const auto slot = [&](std::size_t k, const NDArray& x) -> std::uint8_t {
    const long j = producer(k, x);
    if (j >= 0) return static_cast<std::uint8_t>(p.inputs + (static_cast<std::size_t>(j) - begin));
    for (std::size_t i = 0; i < fused.inputs.size(); ++i) {
      if (fused.inputs[i].is(x)) return static_cast<std::uint8_t>(i);
    }
    return 0;  // not reached: every input was collected above
  };
  const int last_node = uses[end - 1].node;
  for (std::size_t k = begin; k < end; ++k) {
    const Invocation& s = steps[k];
    const Fusable& f = *fusable(s);
    FusedInstr& in = p.code[k - begin];
    in.kind = f.kind;
    in.op = f.op;
    in.a = slot(k, s.inputs[0]);
    if (s.inputs.size() > 1) in.b = slot(k, s.inputs[1]);
    if (s.inputs.size() > 2) in.c = slot(k, s.inputs[2]);
    if (f.kind == FusedInstr::scalar || f.kind == FusedInstr::scalar_backward) {
      const auto& sp = s.params.as<ScalarParams>();
      in.constant = static_cast<float>(sp.scalar);  // FusedInstr::constant
      in.reverse = sp.reverse;
    }
    // Written out where read after the run (or by the caller).
    if (uses[k].last_use > last_node) {
      if (p.outputs == kFusedMaxOutputs) return false;
      p.out_slot[p.outputs++] = static_cast<std::uint8_t>(p.inputs + (k - begin));
      fused.outputs.push_back(s.outputs[0]);
    }
  }
  p.instrs = static_cast<std::uint8_t>(end - begin);
  return true;
}

}  // namespace

const OpDef& fused_elementwise_op() {
  // Made by the graph executor only: not in the registry (a JSON cannot name it), no gradient.
  static const OpDef def{"_FusedElementwise", &fused_infer, &fused_cpu, NDG_GPU_KERNEL(gpu::fused_elementwise),
                         nullptr};
  return def;
}

void fuse_elementwise(std::vector<Invocation>& steps, const std::vector<StepUse>& uses,
                      std::vector<std::unique_ptr<FusedProgram>>& programs) {
  std::vector<Invocation> out;
  out.reserve(steps.size());
  std::size_t s = 0;
  while (s < steps.size()) {
    std::size_t end = s;
    while (end < steps.size() && end - s < static_cast<std::size_t>(kFusedMaxInstrs) && fusable(steps[end]) &&
           (end == s || (!uses[end].after_view && steps[end].outputs[0].size() == steps[s].outputs[0].size() &&
                         steps[end].outputs[0].dtype() == steps[s].outputs[0].dtype()))) {
      ++end;
    }
    auto program = std::make_unique<FusedProgram>();
    Invocation fused;
    while (end - s >= 2 && !build(steps, uses, s, end, *program, fused)) --end;
    if (end - s >= 2) {
      fused.params = FusedParams{program.get()};
      programs.push_back(std::move(program));
      out.push_back(std::move(fused));
      s = end;
    } else {
      out.push_back(std::move(steps[s++]));
    }
  }
  steps = std::move(out);
}

}  // namespace mx::op
