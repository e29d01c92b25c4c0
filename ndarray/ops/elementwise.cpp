// The elementwise family: unary ops, binary ops with NumPy broadcasting, and binary ops with a
// scalar, one registered op per line of ndarray/ops/elementwise_list.hpp. Here: the front ends,
// inference, gradients and the CPU loops; the CUDA launches are in cuda/ops/elementwise.cu.
#include "ndarray/ops/elementwise.hpp"

#include "ndarray/core/checks.hpp"
#include "ndarray/core/strided_index.hpp"
#include "ndarray/ops/attrs.hpp"
#include "ndarray/ops/elementwise_functors.hpp"
#include "ndarray/ops/elementwise_kernels.hpp"
#include "ndarray/ops/nn.hpp"
#include "ndarray/ops/op_table.hpp"
#include "ndarray/ops/parallel.hpp"

namespace mx::op {
namespace {

using nd::NDArray;
using Grads = std::vector<NDArray>;

// --- CPU loops: the reference of each CUDA kernel ------------------------------------------------

// out[i] = f(in[i])
template <class T, class F>
void map_cpu(const T* in, T* out, std::int64_t n, F f) {
  parallel_for_simd(n, [&](std::int64_t i) { out[i] = f(in[i]); });
}

// out[i] = f(g[i], x[i], y[i])
template <class T, class F>
void map3_cpu(const T* g, const T* x, const T* y, T* out, std::int64_t n, F f) {
  parallel_for_simd(n, [&](std::int64_t i) { out[i] = f(g[i], x[i], y[i]); });
}

template <UnaryOp op, class T>
struct UnaryCpu {
  static void run(const Invocation& inv) {
    if constexpr (Unary<op>::floating_only && !mx::is_float_v<T>) {
      throw DTypeError(std::string(op_name(op)) + ": not defined for " + dtype_name(dtype_of<T>));
    } else {
      map_cpu(static_cast<const T*>(inv.inputs[0].data()), static_cast<T*>(inv.outputs[0].data()),
              inv.outputs[0].size(), UnaryForward<op>{});
    }
  }
};

template <UnaryOp op, class T>
struct UnaryBackwardCpu {
  static void run(const Invocation& inv) {
    if constexpr (mx::is_float_v<T>) {
      map3_cpu(static_cast<const T*>(inv.inputs[0].data()), static_cast<const T*>(inv.inputs[1].data()),
               static_cast<const T*>(inv.inputs[2].data()), static_cast<T*>(inv.outputs[0].data()),
               inv.outputs[0].size(), UnaryBackward<op>{});
    }
  }
};

template <BinaryOp op, class T>
struct BinaryCpu {
  static void run(const Invocation& inv) {
    const T* a = static_cast<const T*>(inv.inputs[0].data());
    const T* b = static_cast<const T*>(inv.inputs[1].data());
    T* out = static_cast<T*>(inv.outputs[0].data());
    const std::int64_t n = inv.outputs[0].size();
    // Operands of the output's shape (the common case) need no broadcast index.
    const Shape& shape = inv.outputs[0].shape();
    const bool same_shapes = inv.inputs[0].shape() == shape && inv.inputs[1].shape() == shape;
    const BroadcastIndex index = same_shapes ? BroadcastIndex{} : binary_index(inv);
    if (same_shapes || index.contiguous()) {
      parallel_for_simd(n, [&](std::int64_t i) { out[i] = Binary<op>::forward(a[i], b[i]); });
      return;
    }
    parallel_for(n, [&](std::int64_t i) {
      std::int64_t off[2];
      index.offsets(i, off);
      out[i] = Binary<op>::forward(a[off[0]], b[off[1]]);
    });
  }
};

// inputs g, a, b, y -> ga = g * dy/da, gb = g * dy/db, both of y's shape.
template <BinaryOp op, class T>
struct BinaryBackwardCpu {
  static void run(const Invocation& inv) {
    if constexpr (mx::is_float_v<T>) {
      const T* g = static_cast<const T*>(inv.inputs[0].data());
      const T* a = static_cast<const T*>(inv.inputs[1].data());
      const T* b = static_cast<const T*>(inv.inputs[2].data());
      const T* y = static_cast<const T*>(inv.inputs[3].data());
      T* ga = static_cast<T*>(inv.outputs[0].data());
      T* gb = static_cast<T*>(inv.outputs[1].data());
      const BroadcastIndex index = binary_backward_index(inv);
      const std::int64_t n = inv.outputs[0].size();
      parallel_for(n, [&](std::int64_t i) {
        std::int64_t off[2];
        index.offsets(i, off);
        ga[i] = static_cast<T>(g[i] * Binary<op>::da(a[off[0]], b[off[1]], y[i]));
        gb[i] = static_cast<T>(g[i] * Binary<op>::db(a[off[0]], b[off[1]], y[i]));
      });
    }
  }
};

template <BinaryOp op, class T>
struct ScalarCpu {
  static void run(const Invocation& inv) {
    const auto& p = inv.params.as<ScalarParams>();
    map_cpu(static_cast<const T*>(inv.inputs[0].data()), static_cast<T*>(inv.outputs[0].data()),
            inv.outputs[0].size(), ScalarForward<op, T>{static_cast<T>(p.scalar), p.reverse});
  }
};

template <BinaryOp op, class T>
struct ScalarBackwardCpu {
  static void run(const Invocation& inv) {
    if constexpr (mx::is_float_v<T>) {
      const auto& p = inv.params.as<ScalarParams>();
      map3_cpu(static_cast<const T*>(inv.inputs[0].data()), static_cast<const T*>(inv.inputs[1].data()),
               static_cast<const T*>(inv.inputs[2].data()), static_cast<T*>(inv.outputs[0].data()),
               inv.outputs[0].size(), ScalarBackward<op, T>{static_cast<T>(p.scalar), p.reverse});
    }
  }
};

using CpuFn = void (*)(const Invocation&);

template <UnaryOp op> void unary_cpu(const ExecContext&, const Invocation& inv) {
  OpTable<UnaryOp, UnaryCpu, CpuFn>::get(op, inv.outputs[0].dtype())(inv);
}
template <UnaryOp op> void unary_backward_cpu(const ExecContext&, const Invocation& inv) {
  OpTable<UnaryOp, UnaryBackwardCpu, CpuFn>::get(op, inv.outputs[0].dtype())(inv);
}
template <BinaryOp op> void binary_cpu(const ExecContext&, const Invocation& inv) {
  OpTable<BinaryOp, BinaryCpu, CpuFn>::get(op, inv.outputs[0].dtype())(inv);
}
template <BinaryOp op> void binary_backward_cpu(const ExecContext&, const Invocation& inv) {
  OpTable<BinaryOp, BinaryBackwardCpu, CpuFn>::get(op, inv.outputs[0].dtype())(inv);
}
template <BinaryOp op> void scalar_cpu(const ExecContext&, const Invocation& inv) {
  OpTable<BinaryOp, ScalarCpu, CpuFn>::get(op, inv.outputs[0].dtype())(inv);
}
template <BinaryOp op> void scalar_backward_cpu(const ExecContext&, const Invocation& inv) {
  OpTable<BinaryOp, ScalarBackwardCpu, CpuFn>::get(op, inv.outputs[0].dtype())(inv);
}

// --- inference ------------------------------------------------------------------------------------

template <UnaryOp op>
void unary_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray& x = inv.inputs[0];
  if (needs_floating(op)) nd::check_floating(op_name(op), x);
  out = {{x.shape(), x.dtype()}};
}

// inputs g, x, y: the gradient has y's shape and dtype.
void backward_like_last(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray& y = inv.inputs.back();
  out = {{y.shape(), y.dtype()}};
}

template <BinaryOp op>
void binary_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray &a = inv.inputs[0], &b = inv.inputs[1];
  if (a.dtype() != b.dtype()) nd::check_same_dtype(op_name(op), a, b);
  out.clear();
  out.push_back({a.shape() == b.shape() ? a.shape() : broadcast_shapes(op_name(op), a.shape(), b.shape()), a.dtype()});
}

void binary_backward_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray& y = inv.inputs[3];
  out = {{y.shape(), y.dtype()}, {y.shape(), y.dtype()}};
}

void scalar_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  out = {{inv.inputs[0].shape(), inv.inputs[0].dtype()}};
}

// --- gradients ------------------------------------------------------------------------------------

const OpDef& binary_backward_op(BinaryOp op);

template <UnaryOp op>
Grads unary_gradient(const Invocation& inv, const Grads& g) {
  return {invoke1(unary_backward_op(op), {g[0], inv.inputs[0], inv.outputs[0]})};
}

template <BinaryOp op>
Grads binary_gradient(const Invocation& inv, const Grads& g) {
  const NDArray &a = inv.inputs[0], &b = inv.inputs[1];
  Grads grads;
  if constexpr (op == BinaryOp::add || op == BinaryOp::subtract) {  // constant derivatives: no pass over g
    grads = {g[0], op == BinaryOp::add ? g[0] : nd::negative(g[0])};
  } else {
    grads = invoke(binary_backward_op(op), {g[0], a, b, inv.outputs[0]});
  }
  // Undo broadcasting: sum over the axes along which an operand was broadcast.
  grads[0] = nd::detail::sum_to(grads[0], a.shape());
  grads[1] = nd::detail::sum_to(grads[1], b.shape());
  return grads;
}

template <BinaryOp op>
Grads scalar_gradient(const Invocation& inv, const Grads& g) {
  return {invoke1(scalar_backward_op(op), {g[0], inv.inputs[0], inv.outputs[0]}, inv.params)};
}

// --- the registered ops ----------------------------------------------------------------------------

constexpr std::size_t kUnary = static_cast<std::size_t>(UnaryOp::count);
constexpr std::size_t kBinary = static_cast<std::size_t>(BinaryOp::count);

#define NDG_UNARY_DEF(NAME, FLOATING, DIFFERENTIABLE, ...)                                              \
  OpDef{#NAME, &unary_infer<UnaryOp::NAME>, &unary_cpu<UnaryOp::NAME>, NDG_GPU_KERNEL(gpu::unary<UnaryOp::NAME>), \
        DIFFERENTIABLE ? &unary_gradient<UnaryOp::NAME> : nullptr},
#define NDG_UNARY_BACKWARD_DEF(NAME, ...)                                                               \
  OpDef{"_backward_" #NAME, &backward_like_last, &unary_backward_cpu<UnaryOp::NAME>,                    \
        NDG_GPU_KERNEL(gpu::unary_backward<UnaryOp::NAME>), nullptr},
#define NDG_BINARY_DEF(NAME, DIFFERENTIABLE, ...)                                                       \
  OpDef{#NAME, &binary_infer<BinaryOp::NAME>, &binary_cpu<BinaryOp::NAME>,                              \
        NDG_GPU_KERNEL(gpu::binary<BinaryOp::NAME>), DIFFERENTIABLE ? &binary_gradient<BinaryOp::NAME> : nullptr},
#define NDG_BINARY_BACKWARD_DEF(NAME, ...)                                                              \
  OpDef{"_backward_" #NAME, &binary_backward_infer, &binary_backward_cpu<BinaryOp::NAME>,               \
        NDG_GPU_KERNEL(gpu::binary_backward<BinaryOp::NAME>), nullptr},
#define NDG_SCALAR_DEF(NAME, DIFFERENTIABLE, ...)                                                       \
  OpDef{"_" #NAME "_scalar", &scalar_infer, &scalar_cpu<BinaryOp::NAME>,                                \
        NDG_GPU_KERNEL(gpu::scalar<BinaryOp::NAME>), DIFFERENTIABLE ? &scalar_gradient<BinaryOp::NAME> : nullptr, \
        &scalar_attrs, &scalar_parse<BinaryOp::NAME>},
#define NDG_SCALAR_BACKWARD_DEF(NAME, ...)                                                              \
  OpDef{"_backward_" #NAME "_scalar", &backward_like_last, &scalar_backward_cpu<BinaryOp::NAME>,        \
        NDG_GPU_KERNEL(gpu::scalar_backward<BinaryOp::NAME>), nullptr},

std::vector<std::pair<std::string, std::string>> scalar_attrs(const Params& params) {
  const auto& p = params.as<ScalarParams>();
  return {{"scalar", format_real(p.scalar)}, {"reverse", format_bool(p.reverse)}};
}

// scalar (MXNet's default 1) and reverse, an ndgluon extension (MXNet names its reversed ops
// _rminus_scalar, ...). is_int (MXNet 1.9: whether the scalar was a Python int) changes no result,
// since the scalar is converted to the data's dtype either way: ignored.
template <BinaryOp op>
Params scalar_parse(const AttrList& attrs) {
  AttrReader a(std::string("_") + op_name(op) + "_scalar", attrs);
  const ScalarParams p{a.real("scalar", 1.0), a.boolean("reverse", false)};
  a.ignore({"is_int"});
  a.finish();
  return p;
}

template <std::size_t N>
bool register_all(const std::array<OpDef, N>& defs) {
  for (const OpDef& def : defs) register_op(def);
  return true;
}

const std::array<OpDef, kUnary>& unary_defs() {
  static const std::array<OpDef, kUnary> defs{NDG_UNARY_OPS(NDG_UNARY_DEF)};
  [[maybe_unused]] static const bool registered = register_all(defs);
  return defs;
}
const std::array<OpDef, kUnary>& unary_backward_defs() {
  static const std::array<OpDef, kUnary> defs{NDG_UNARY_OPS(NDG_UNARY_BACKWARD_DEF)};
  [[maybe_unused]] static const bool registered = register_all(defs);
  return defs;
}
const std::array<OpDef, kBinary>& binary_defs() {
  static const std::array<OpDef, kBinary> defs{NDG_BINARY_OPS(NDG_BINARY_DEF)};
  [[maybe_unused]] static const bool registered = register_all(defs);
  return defs;
}
const std::array<OpDef, kBinary>& binary_backward_defs() {
  static const std::array<OpDef, kBinary> defs{NDG_BINARY_OPS(NDG_BINARY_BACKWARD_DEF)};
  [[maybe_unused]] static const bool registered = register_all(defs);
  return defs;
}
const std::array<OpDef, kBinary>& scalar_defs() {
  static const std::array<OpDef, kBinary> defs{NDG_BINARY_OPS(NDG_SCALAR_DEF)};
  [[maybe_unused]] static const bool registered = register_all(defs);
  return defs;
}
const std::array<OpDef, kBinary>& scalar_backward_defs() {
  static const std::array<OpDef, kBinary> defs{NDG_BINARY_OPS(NDG_SCALAR_BACKWARD_DEF)};
  [[maybe_unused]] static const bool registered = register_all(defs);
  return defs;
}

const OpDef& binary_backward_op(BinaryOp op) { return binary_backward_defs()[static_cast<std::size_t>(op)]; }

// Every op of the family is in the registry from the start (find_op, graph import).
[[maybe_unused]] const bool elementwise_family_registered = (unary_defs(), unary_backward_defs(), binary_defs(),
                                                 binary_backward_defs(), scalar_defs(), scalar_backward_defs(), true);

}  // namespace

BroadcastIndex binary_index(const Invocation& inv) {
  const NDArray& out = inv.outputs[0];
  return make_broadcast_index(inv.op->name, out.shape(), inv.inputs[0].shape(), inv.inputs[1].shape());
}

BroadcastIndex binary_backward_index(const Invocation& inv) {
  const NDArray& y = inv.inputs[3];
  return make_broadcast_index(inv.op->name, y.shape(), inv.inputs[1].shape(), inv.inputs[2].shape());
}

// --- Activation: MXNet's name for the activations in graphs, run as the unary op of act_type ---

namespace {

struct ActivationParams {
  UnaryOp act = UnaryOp::relu;
};

// inv as an invocation of its activation's own unary op.
Invocation as_unary(const Invocation& inv) {
  return Invocation{&unary_op(inv.params.as<ActivationParams>().act), {}, inv.inputs, inv.outputs};
}

void activation_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const Invocation u = as_unary(inv);
  u.op->infer(u, out);
}
void activation_cpu(const ExecContext& ec, const Invocation& inv) {
  const Invocation u = as_unary(inv);
  u.op->cpu(ec, u);
}
[[maybe_unused]] void activation_gpu(const ExecContext& ec, const Invocation& inv) {
  const Invocation u = as_unary(inv);
  u.op->gpu(ec, u);
}
Grads activation_gradient(const Invocation& inv, const Grads& g) {
  const Invocation u = as_unary(inv);
  return u.op->gradient(u, g);
}
std::vector<std::pair<std::string, std::string>> activation_attrs(const Params& params) {
  return {{"act_type", op_name(params.as<ActivationParams>().act)}};
}
Params activation_parse(const AttrList& attrs) {
  AttrReader a("Activation", attrs);
  const std::string act = a.text("act_type", "");
  a.finish();
  const std::optional<UnaryOp> op = nd::activation_type(act, "Activation");
  if (!op) throw ValueError("Activation: attribute act_type is required");
  return ActivationParams{*op};
}

}  // namespace

const OpDef& activation_op() {
  static const OpDef def{"Activation", &activation_infer, &activation_cpu, NDG_GPU_KERNEL(activation_gpu),
                         &activation_gradient, &activation_attrs, &activation_parse};
  static const OpDef& reg = register_op(def);
  return reg;
}

[[maybe_unused]] const bool activation_registered = (activation_op(), true);

const OpDef& unary_backward_op(UnaryOp op) { return unary_backward_defs()[static_cast<std::size_t>(op)]; }
const OpDef& unary_op(UnaryOp op) { return unary_defs()[static_cast<std::size_t>(op)]; }
const OpDef& scalar_backward_op(BinaryOp op) { return scalar_backward_defs()[static_cast<std::size_t>(op)]; }
const OpDef& binary_op(BinaryOp op) { return binary_defs()[static_cast<std::size_t>(op)]; }
const OpDef& scalar_op(BinaryOp op) { return scalar_defs()[static_cast<std::size_t>(op)]; }

}  // namespace mx::op

namespace mx::nd {

NDArray binary(BinaryOp op, const NDArray& a, const NDArray& b) {
  check_not_none(op_name(op), a);
  check_not_none(op_name(op), b);
  return op::invoke1(op::binary_op(op), a, b);
}

NDArray binary(BinaryOp op, const NDArray& a, double scalar) {
  check_not_none(op_name(op), a);
  return op::invoke1(op::scalar_op(op), {a}, op::ScalarParams{scalar, false});
}

NDArray binary(BinaryOp op, double scalar, const NDArray& a) {
  check_not_none(op_name(op), a);
  return op::invoke1(op::scalar_op(op), {a}, op::ScalarParams{scalar, true});
}

NDArray unary(UnaryOp op, const NDArray& x) {
  check_not_none(op_name(op), x);
  return op::invoke1(op::unary_op(op), {x});
}

}  // namespace mx::nd
