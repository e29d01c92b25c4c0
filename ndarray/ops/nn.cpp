// The nn family: FullyConnected (the matrix product and its fused bias + activation epilogue as
// one registered op), Dropout, LeakyReLU (with _backward_LeakyReLU) and BlockGrad. Here: the
// front ends, inference, gradients, attributes and the CPU loops; the CUDA launches are in
// cuda/ops/nn.cu.
#include "ndarray/ops/nn.hpp"

#include "ndarray/autograd/autograd.hpp"
#include "ndarray/backend/host_random.hpp"
#include "ndarray/core/checks.hpp"
#include "ndarray/ops/attrs.hpp"
#include "ndarray/ops/creation.hpp"
#include "ndarray/ops/creation_kernels.hpp"
#include "ndarray/ops/elementwise.hpp"
#include "ndarray/ops/elementwise_kernels.hpp"
#include "ndarray/ops/linalg.hpp"
#include "ndarray/ops/linalg_kernels.hpp"
#include "ndarray/ops/nn_kernels.hpp"
#include "ndarray/ops/parallel.hpp"
#include "ndarray/ops/reduce.hpp"
#include "ndarray/ops/reduce_kernels.hpp"

namespace mx::op {
namespace {

using nd::NDArray;
using Grads = std::vector<NDArray>;

const FullyConnectedParams& fc_params(const Invocation& inv) { return inv.params.as<FullyConnectedParams>(); }

// data as (rows, in): (batch, in...) flattened, or (..., in) over its last axis.
Shape data_2d(const Shape& data, bool flatten) {
  std::int64_t rows = 1;
  for (int axis = 0; axis < (flatten ? 1 : data.ndim() - 1); ++axis) rows *= data[axis];
  std::int64_t in = 1;
  for (int axis = flatten ? 1 : data.ndim() - 1; axis < data.ndim(); ++axis) in *= data[axis];
  return {rows, in};
}

// --- inference ------------------------------------------------------------------------------------

void fully_connected_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const char* op = "FullyConnected";
  const FullyConnectedParams& p = fc_params(inv);
  const NDArray &x = inv.inputs[0], &weight = inv.inputs[1], &bias = inv.inputs[2];
  nd::check_same_dtype(op, x, weight);
  if (!p.no_bias) nd::check_same_dtype(op, x, bias);
  nd::check_floating(op, x);
  if (x.ndim() < (p.flatten ? 2 : 1)) {
    throw ShapeError(std::string(op) + ": data must be " + (p.flatten ? "(batch, in...)" : "(..., in)") + ", got " +
                     nd::describe(x));
  }
  const std::int64_t in_units = data_2d(x.shape(), p.flatten)[1];
  if (weight.shape() != Shape{p.num_hidden, in_units}) {
    throw ShapeError(std::string(op) + ": weight " + nd::describe(weight) + " does not fit data " + nd::describe(x) +
                     " and num_hidden " + std::to_string(p.num_hidden) + "; expected " +
                     Shape{p.num_hidden, in_units}.tuple_str());
  }
  if (!p.no_bias && bias.shape() != Shape{p.num_hidden}) {
    throw ShapeError(std::string(op) + ": bias " + nd::describe(bias) + " does not fit num_hidden " +
                     std::to_string(p.num_hidden) + "; expected " + Shape{p.num_hidden}.tuple_str());
  }
  // (batch, num_hidden) when flattening; otherwise x's leading axes, then num_hidden.
  std::vector<std::int64_t> dims(x.shape().begin(), x.shape().end());
  if (p.flatten) dims.resize(1);
  else dims.pop_back();
  dims.push_back(p.num_hidden);
  out = {{Shape(dims), x.dtype()}};
}

// --- CPU loop: the reference of the CUDA epilogue ----------------------------------------------

// out (rows, cols) = act(out + bias[col]); bias may be null.
void fully_connected_cpu(const ExecContext& ec, const Invocation& inv) {
  fully_connected_product(ec, inv);
  const FullyConnectedParams& p = fc_params(inv);
  if (p.no_bias && !p.act) return;
  const NDArray& y = inv.outputs[0];
  const std::int64_t cols = p.num_hidden, rows = y.size() / cols;
  dispatch_floating(y.dtype(), "FullyConnected", [&](auto tag) {
    using T = decltype(tag);
    T* out = static_cast<T*>(y.data());
    const T* bias = p.no_bias ? nullptr : static_cast<const T*>(inv.inputs[2].data());
    with_activation(p.act, [&](auto act) {
      parallel_for(rows, [&](std::int64_t r) {
        T* row = out + r * cols;
        for (std::int64_t c = 0; c < cols; ++c) row[c] = act(bias ? static_cast<T>(row[c] + bias[c]) : row[c]);
      }, rows * cols);
    });
  });
}

// --- gradient -------------------------------------------------------------------------------------

// With y = act(x2 · Wᵀ + b) and G its gradient, g = G * act'(y) (activations write their
// derivative from y, so the backward op is fed y for x): dx2 = g · W, dW = gᵀ · x2, db = Σrows g.
Grads fully_connected_gradient(const Invocation& inv, const Grads& out_grads) {
  const FullyConnectedParams& p = fc_params(inv);
  const NDArray &x = inv.inputs[0], &weight = inv.inputs[1], &y = inv.outputs[0];
  const NDArray g_act = p.act ? invoke1(unary_backward_op(*p.act), {out_grads[0], y, y}) : out_grads[0];
  const Shape x2 = data_2d(x.shape(), p.flatten);
  const NDArray g = g_act.reshape({x2[0], p.num_hidden});
  Grads grads(3);
  // Each into the variable's own gradient buffer when backward offers it (op::gradient_into).
  // The data's gradient first: a parameter's gradient starts its all-reduce (gluon/gradient_buckets.hpp),
  // whose NCCL kernels then share the GPU with the layer below's products rather than also with this
  // layer's data product (2 processes on 2 H100s, MLP 784-4096-4096-10: 0.7% more samples/s). Sums on
  // the copy engines take no SMs: their buckets want the weight's gradient first, so that its sum runs
  // beside the data product (one process, 2 H100s: 1.91x over one GPU instead of 1.83x).
  const bool weight_first = p.weight_grad && op::gradient_wanted_early(inv, 1);
  const auto data_grad = [&] {
    const NDArray target = gradient_target(inv, 0);
    const OutputReuse reuse(target.is_none() ? target : target.reshape(x2));
    grads[0] = nd::dot(g, weight).reshape(x.shape());
  };
  if (p.data_grad && !weight_first) data_grad();
  if (p.weight_grad && !p.no_bias) {  // both from one op (one cuBLASLt call on a GPU)
    std::vector<NDArray> both;
    {
      const OutputReuse reuse({gradient_target(inv, 1), gradient_target(inv, 2)});
      both = invoke(fully_connected_weight_grad_op(), {g, x.reshape(x2)});
    }
    grads[1] = std::move(both[0]);
    grads[2] = std::move(both[1]);
    gradient_written(inv, 1, grads[1]);
    gradient_written(inv, 2, grads[2]);
  } else {
    if (p.weight_grad) {
      const NDArray x_2d = x.reshape(x2);
      grads[1] = gradient_into(inv, 1, [&] { return nd::dot(g, x_2d, true, false); });
    }
    if (!p.no_bias) grads[2] = gradient_into(inv, 2, [&] { return nd::sum(g, 0); });
  }
  if (p.data_grad && weight_first) data_grad();
  return grads;
}

// --- _backward_FullyConnected_weight: the weight's and the bias's gradients -------------------------

void fully_connected_weight_grad_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const char* op = "_backward_FullyConnected_weight";
  const NDArray &g = inv.inputs[0], &x = inv.inputs[1];
  nd::check_floating(op, g);
  nd::check_same_dtype(op, g, x);
  if (g.ndim() != 2 || x.ndim() != 2 || g.shape()[0] != x.shape()[0]) {
    throw ShapeError(std::string(op) + ": gradient " + nd::describe(g) + " and data " + nd::describe(x) +
                     " must be (rows, num_hidden) and (rows, in)");
  }
  out = {{Shape{g.shape()[1], x.shape()[1]}, g.dtype()}, {Shape{g.shape()[1]}, g.dtype()}};
}

// --- the registered op -----------------------------------------------------------------------------

void fully_connected_input_grads(Params& params, const std::vector<bool>& needed) {
  FullyConnectedParams p = params.as<FullyConnectedParams>();
  p.data_grad = needed.at(0);
  p.weight_grad = needed.at(1);
  params = p;
}

std::vector<std::pair<std::string, std::string>> fully_connected_attrs(const Params& params) {
  const auto& p = params.as<FullyConnectedParams>();
  std::vector<std::pair<std::string, std::string>> attrs{{"num_hidden", std::to_string(p.num_hidden)},
                                                        {"no_bias", format_bool(p.no_bias)},
                                                        {"flatten", format_bool(p.flatten)}};
  if (p.act) attrs.emplace_back("act_type", op_name(*p.act));  // an ndgluon extension
  return attrs;
}

// mx::ValueError for num_hidden <= 0 or an unknown act_type.
FullyConnectedParams fully_connected_params(std::int64_t num_hidden, bool no_bias, bool flatten,
                                            const std::string& act_type) {
  FullyConnectedParams p;
  p.act = nd::activation_type(act_type, "FullyConnected");
  if (num_hidden <= 0) {
    throw ValueError("FullyConnected: num_hidden must be positive, got " + std::to_string(num_hidden));
  }
  p.num_hidden = num_hidden;
  p.no_bias = no_bias;
  p.flatten = flatten;
  return p;
}

Params fully_connected_parse(const AttrList& attrs) {
  AttrReader a("FullyConnected", attrs);
  const std::int64_t num_hidden = a.integer("num_hidden");
  const bool no_bias = a.boolean("no_bias", false), flatten = a.boolean("flatten", true);
  const std::string act_type = a.text("act_type", "");  // an ndgluon extension
  a.finish();
  return fully_connected_params(num_hidden, no_bias, flatten, act_type);
}

// --- Dropout --------------------------------------------------------------------------------------

void dropout_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray& x = inv.inputs[0];
  nd::check_floating("Dropout", x);
  out = {{x.shape(), x.dtype()}, {x.shape(), x.dtype()}};
}

// Uniform draws in (0, 1]: element i is kept when its draw is above p, with probability 1 - p.
// Draws come in multiples of 4 (see ndarray/ops/random.cpp), into scratch memory.
void dropout_cpu(const ExecContext& ec, const Invocation& inv) {
  const double p = inv.params.as<DropoutParams>().p;
  const NDArray &x = inv.inputs[0], &y = inv.outputs[0], &mask = inv.outputs[1];
  const std::int64_t n = x.size(), padded = (n + 3) / 4 * 4;
  if (n == 0) return;
  dispatch_floating(x.dtype(), "Dropout", [&](auto tag) {
    using T = decltype(tag);
    using U = ComputeType<T>;  // the draws: float for float16 and bfloat16
    const Workspace draws(ec, static_cast<std::size_t>(padded) * sizeof(U));
    detail::host_random_uniform(dtype_of<U>, draws.data(), padded, -1);
    const T* in = static_cast<const T*>(x.data());
    const U* u = draws.as<U>();
    T *out = static_cast<T*>(y.data()), *m = static_cast<T*>(mask.data());
    const T scale = static_cast<T>(1.0 / (1.0 - p));
    const U threshold = static_cast<U>(p);
    parallel_for_simd(n, [&](std::int64_t i) {
      m[i] = u[i] > threshold ? scale : T(0);
      out[i] = static_cast<T>(in[i] * m[i]);
    });
  });
}

Grads dropout_gradient(const Invocation& inv, const Grads& out_grads) { return {out_grads[0] * inv.outputs[1]}; }

std::vector<std::pair<std::string, std::string>> dropout_attrs(const Params& params) {
  const auto& p = params.as<DropoutParams>();
  return {{"p", format_real(p.p)}, {"mode", p.always ? "always" : "training"}};
}

// mx::ValueError for p outside [0, 1) or an unknown mode.
DropoutParams dropout_params(double p, const std::string& mode) {
  if (!(p >= 0.0 && p < 1.0)) throw ValueError("Dropout: p must be in [0, 1), got " + format_real(p));
  if (mode != "training" && mode != "always") {
    throw ValueError("Dropout: unknown mode \"" + mode + "\"; valid: \"training\", \"always\"");
  }
  return {p, mode == "always"};
}

// MXNet's attributes; cudnn_off (which engine runs) changes no result: ignored. axes (a mask
// shared along axes) is refused.
Params dropout_parse(const AttrList& attrs) {
  AttrReader a("Dropout", attrs);
  const double p = a.real("p", 0.5);
  const std::string mode = a.choice("mode", "training", {"training", "always"});
  if (!a.tuple("axes", {}).empty()) a.fail("axes", "is not supported: ndgluon draws one mask value per element");
  a.ignore({"cudnn_off"});
  a.finish();
  return dropout_params(p, mode);
}

// The identity in prediction, unless mode "always", as the front end decides.
bool dropout_mode(Params& params, bool training) { return training || params.as<DropoutParams>().always; }

const OpDef& dropout_op() {
  static const OpDef def{"Dropout", &dropout_infer, &dropout_cpu, NDG_GPU_KERNEL(gpu::dropout), &dropout_gradient,
                         &dropout_attrs, &dropout_parse, false, &dropout_mode, 0, true};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}

// --- LeakyReLU -------------------------------------------------------------------------------------

const LeakyReLUParams& leaky_params(const Invocation& inv) { return inv.params.as<LeakyReLUParams>(); }

void leaky_relu_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray& x = inv.inputs[0];
  nd::check_floating("LeakyReLU", x);
  out = {{x.shape(), x.dtype()}};
}

void leaky_relu_cpu(const ExecContext&, const Invocation& inv) {
  const NDArray &x = inv.inputs[0], &y = inv.outputs[0];
  dispatch_floating(x.dtype(), "LeakyReLU", [&](auto tag) {
    using T = decltype(tag);
    const LeakyReLUForward<T> f{leaky_params(inv).act, static_cast<ComputeType<T>>(leaky_params(inv).slope)};
    const T* in = static_cast<const T*>(x.data());
    T* out = static_cast<T*>(y.data());
    parallel_for_simd(x.size(), [&](std::int64_t i) { out[i] = f(in[i]); });
  });
}

// _backward_LeakyReLU: inputs (g, x, y), output dx of x's shape and dtype.
void leaky_relu_backward_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray &g = inv.inputs[0], &x = inv.inputs[1], &y = inv.inputs[2];
  nd::check_floating("_backward_LeakyReLU", x);
  nd::check_same_dtype("_backward_LeakyReLU", g, x);
  nd::check_same_dtype("_backward_LeakyReLU", y, x);
  if (g.shape() != x.shape() || y.shape() != x.shape()) {
    throw ShapeError("_backward_LeakyReLU: output gradient " + nd::describe(g) + ", data " + nd::describe(x) +
                     " and output " + nd::describe(y) + " must have one shape");
  }
  out = {{x.shape(), x.dtype()}};
}

void leaky_relu_backward_cpu(const ExecContext&, const Invocation& inv) {
  const NDArray& dx = inv.outputs[0];
  dispatch_floating(dx.dtype(), "_backward_LeakyReLU", [&](auto tag) {
    using T = decltype(tag);
    const LeakyReLUBackward<T> f{leaky_params(inv).act, static_cast<ComputeType<T>>(leaky_params(inv).slope)};
    const T* g = static_cast<const T*>(inv.inputs[0].data());
    const T* x = static_cast<const T*>(inv.inputs[1].data());
    const T* y = static_cast<const T*>(inv.inputs[2].data());
    T* out = static_cast<T*>(dx.data());
    parallel_for_simd(dx.size(), [&](std::int64_t i) { out[i] = f(g[i], x[i], y[i]); });
  });
}

const char* leaky_act_name(LeakyAct act) {
  switch (act) {
    case LeakyAct::leaky: return "leaky";
    case LeakyAct::elu: return "elu";
    case LeakyAct::selu: return "selu";
    case LeakyAct::gelu: return "gelu";
  }
  return "leaky";
}

// mx::ValueError naming LeakyReLU for an act_type that ndgluon does not compute.
LeakyReLUParams leaky_relu_params(const std::string& act_type, double slope) {
  for (const LeakyAct act : {LeakyAct::leaky, LeakyAct::elu, LeakyAct::selu, LeakyAct::gelu}) {
    if (act_type == leaky_act_name(act)) return {act, slope};
  }
  const char* why = act_type == "prelu"   ? "is not supported (a learned slope input, gamma)"
                    : act_type == "rrelu" ? "is not supported (random slopes)"
                                          : "is unknown";
  throw ValueError("LeakyReLU: act_type \"" + act_type + "\" " + why +
                   "; valid: \"leaky\", \"elu\", \"selu\", \"gelu\"");
}

std::vector<std::pair<std::string, std::string>> leaky_relu_attrs(const Params& params) {
  const auto& p = params.as<LeakyReLUParams>();
  return {{"act_type", leaky_act_name(p.act)}, {"slope", format_real(p.slope)}};
}

// MXNet's attributes; lower_bound and upper_bound (rrelu's range) change no result of the
// act_types ndgluon computes: ignored.
Params leaky_relu_parse(const AttrList& attrs) {
  AttrReader a("LeakyReLU", attrs);
  const std::string act_type = a.text("act_type", "leaky");
  if (act_type == "prelu") a.fail("act_type", "is not supported: ndgluon has no learned-slope input (gamma)");
  if (act_type == "rrelu") a.fail("act_type", "is not supported: ndgluon draws no random slopes");
  a.choice("act_type", "leaky", {"leaky", "elu", "selu", "gelu"});
  const double slope = a.real("slope", 0.25);
  a.ignore({"lower_bound", "upper_bound"});
  a.finish();
  return leaky_relu_params(act_type, slope);
}

const OpDef& leaky_relu_backward_op() {
  static const OpDef def{"_backward_LeakyReLU", &leaky_relu_backward_infer, &leaky_relu_backward_cpu,
                         NDG_GPU_KERNEL(gpu::leaky_relu_backward), nullptr, &leaky_relu_attrs, &leaky_relu_parse};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}

// One backward op on the recorded input and output.
Grads leaky_relu_gradient(const Invocation& inv, const Grads& out_grads) {
  return {invoke1(leaky_relu_backward_op(), {out_grads[0], inv.inputs[0], inv.outputs[0]}, inv.params)};
}

const OpDef& leaky_relu_op() {
  static const OpDef def{"LeakyReLU", &leaky_relu_infer, &leaky_relu_cpu, NDG_GPU_KERNEL(gpu::leaky_relu),
                         &leaky_relu_gradient, &leaky_relu_attrs, &leaky_relu_parse};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}

// --- BlockGrad ---------------------------------------------------------------------------------------

// The input's values (_copy's inference and kernels, which serve every device); the gradient is
// zero, as MXNet's (a zero array rather than none, so that a variable read only through BlockGrad
// gets a zero gradient).
Grads block_grad_gradient(const Invocation& inv, const Grads&) { return {nd::zeros_like(inv.inputs[0])}; }

const OpDef& block_grad_op() {
  static const OpDef def{"BlockGrad", copy_op().infer, copy_op().cpu, copy_op().gpu, &block_grad_gradient, nullptr,
                         nullptr, copy_op().strided_inputs};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}

// In the registry from the start (find_op, graph import).
[[maybe_unused]] const bool nn_family_registered =
    (fully_connected_op(), dropout_op(), leaky_relu_op(), leaky_relu_backward_op(), block_grad_op(), true);

}  // namespace

const OpDef& fully_connected_op() {
  static const OpDef def{"FullyConnected", &fully_connected_infer, &fully_connected_cpu,
                         NDG_GPU_KERNEL(gpu::fully_connected), &fully_connected_gradient, &fully_connected_attrs,
                         &fully_connected_parse, false, nullptr, 3, false, &fully_connected_input_grads};
  static const OpDef& reg = register_op(def);
  return reg;
}

const OpDef& fully_connected_weight_grad_op() {
  static const OpDef def{"_backward_FullyConnected_weight", &fully_connected_weight_grad_infer,
                         &fully_connected_weight_grad_unfused, NDG_GPU_KERNEL(gpu::fully_connected_weight_grad),
                         nullptr};
  static const OpDef& reg = register_op(def);
  return reg;
}

// dW (num_hidden, in) = gᵀ · x
GemmArgs fully_connected_weight_grad_gemm(const Invocation& inv) {
  GemmArgs args;
  args.trans_a = true;
  args.m = inv.outputs[0].shape()[0];
  args.n = inv.outputs[0].shape()[1];
  args.k = inv.inputs[0].shape()[0];
  return args;
}

void fully_connected_weight_grad_unfused(const ExecContext& ec, const Invocation& inv) {
  const NDArray &g = inv.inputs[0], &x = inv.inputs[1], &dw = inv.outputs[0], &db = inv.outputs[1];
  if (dw.size() > 0) gemm(ec, g.dtype(), fully_connected_weight_grad_gemm(inv), g.data(), x.data(), dw.data());
  run_kernel(Invocation{&reduce_op(ReduceOp::sum), ReduceParams{ReduceOp::sum, 0, true, false}, {g}, {db}});
}

GemmArgs fully_connected_gemm(const Invocation& inv) {
  const NDArray &weight = inv.inputs[1], &y = inv.outputs[0];
  GemmArgs args;
  args.trans_b = true;
  args.m = y.size() / fc_params(inv).num_hidden;
  args.n = weight.shape()[0];
  args.k = weight.shape()[1];
  return args;
}

void fully_connected_product(const ExecContext& ec, const Invocation& inv) {
  const NDArray &x = inv.inputs[0], &weight = inv.inputs[1], &y = inv.outputs[0];
  if (y.size() == 0) return;
  gemm(ec, y.dtype(), fully_connected_gemm(inv), x.data(), weight.data(), y.data());
}

}  // namespace mx::op

namespace mx::nd {

NDArray FullyConnected(const NDArray& x, const NDArray& weight, const NDArray& bias, std::int64_t num_hidden,
                       bool no_bias, bool flatten, const std::string& act_type) {
  const char* op = "FullyConnected";
  op::FullyConnectedParams p = op::fully_connected_params(num_hidden, no_bias, flatten, act_type);
  detail::check_not_none(op, x);
  detail::check_not_none(op, weight);
  if (!no_bias) detail::check_not_none(op, bias);
  p.data_grad = x.autograd_node() != nullptr;
  p.weight_grad = weight.autograd_node() != nullptr;
  // Contexts first (common_context, in the order data, weight, bias), then the rest in inference.
  return op::invoke1(op::fully_connected_op(), {x, weight, no_bias ? NDArray() : bias}, p);
}

NDArray Dropout(const NDArray& x, double p, const std::string& mode) {
  detail::check_not_none("Dropout", x);
  const op::DropoutParams params = op::dropout_params(p, mode);
  if (p == 0.0 || (!params.always && !autograd::is_training())) return x;  // the identity, as in MXNet
  return op::invoke(op::dropout_op(), {x}, params)[0];
}

NDArray LeakyReLU(const NDArray& x, const std::string& act_type, double slope) {
  detail::check_not_none("LeakyReLU", x);
  return op::invoke1(op::leaky_relu_op(), {x}, op::leaky_relu_params(act_type, slope));
}

NDArray BlockGrad(const NDArray& x) {
  detail::check_not_none("BlockGrad", x);
  return op::invoke1(op::block_grad_op(), {x});
}

NDArray stop_gradient(const NDArray& x) { return BlockGrad(x); }

std::optional<UnaryOp> activation_type(const std::string& act_type, const char* op) {
  if (act_type.empty()) return std::nullopt;
  for (const UnaryOp act : {UnaryOp::relu, UnaryOp::sigmoid, UnaryOp::tanh, UnaryOp::softrelu}) {
    if (act_type == op_name(act)) return act;
  }
  throw ValueError(std::string(op) + ": unknown act_type \"" + act_type +
                   "\"; valid: \"\", \"relu\", \"sigmoid\", \"tanh\", \"softrelu\"");
}

}  // namespace mx::nd
