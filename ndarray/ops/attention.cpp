// The attention family: MXNet's interleaved attention products _contrib_interleaved_matmul_
// selfatt_qk, _selfatt_valatt, _encdec_qk and _encdec_valatt, and their backward ops. Each kernel
// is one function for every device: the heads' slots gathered into dense (B·H, T, d) scratch
// (Note [interleaved layout] in attention_kernels.hpp), one batched gemm() (OpenBLAS or cuBLAS),
// and the result scattered back where it is interleaved. The GPU gathers are in
// cuda/ops/attention.cu. Also _sdpa_fused and _backward_sdpa_fused, scaled_dot_product_attention's
// fused path on GPUs (flash attention through cuDNN, cuda/cudnn_attention.cpp).
#include "ndarray/ops/attention.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>

#include "ndarray/autograd/autograd.hpp"
#include "ndarray/core/checks.hpp"
#include "ndarray/core/describe.hpp"
#include "ndarray/ops/attention_kernels.hpp"
#include "ndarray/ops/attrs.hpp"
#include "ndarray/ops/linalg_kernels.hpp"
#include "ndarray/ops/creation.hpp"
#include "ndarray/ops/elementwise.hpp"
#include "ndarray/ops/linalg.hpp"
#include "ndarray/ops/manipulation.hpp"
#include "ndarray/ops/nn.hpp"
#include "ndarray/ops/indexing.hpp"
#include "ndarray/ops/parallel.hpp"
#include "ndarray/ops/softmax.hpp"

namespace mx::op {
namespace {

using nd::NDArray;
using Kind = InterleavedKind;

const InterleavedParams& params_of(const Invocation& inv) { return inv.params.as<InterleavedParams>(); }

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::selfatt_qk: return "_contrib_interleaved_matmul_selfatt_qk";
    case Kind::selfatt_valatt: return "_contrib_interleaved_matmul_selfatt_valatt";
    case Kind::encdec_qk: return "_contrib_interleaved_matmul_encdec_qk";
    case Kind::encdec_valatt: return "_contrib_interleaved_matmul_encdec_valatt";
  }
  return "";
}

// a (T, B, heads·slots·d) as its `slot`; mx::ShapeError naming the op unless a is 3-D and its last
// extent a multiple of heads·slots.
SlotView view_of(const char* op, const char* what, const NDArray& a, std::int64_t heads, std::int64_t slots,
                 std::int64_t slot) {
  if (a.ndim() != 3 || a.shape()[2] % (heads * slots) != 0) {
    throw ShapeError(std::string(op) + ": " + what + " " + nd::describe(a) + " must be (T, B, heads·" +
                     std::to_string(slots) + "·d) for heads=" + std::to_string(heads));
  }
  return {a.shape()[0], a.shape()[1], heads, slots, slot, a.shape()[2] / (heads * slots)};
}

std::int64_t dense_size(const SlotView& v) { return v.batch * v.heads * v.steps * v.d; }

void gather([[maybe_unused]] const ExecContext& ec, DType dt, const SlotView& v, const void* interleaved, void* dense) {
#ifdef NDG_HAVE_CUDA
  if (ec.ctx.is_gpu()) return gpu::gather_slot(ec, dt, v, interleaved, dense);
#endif
  dispatch_floating(dt, "interleaved_matmul", [&](auto tag) {
    using T = decltype(tag);
    parallel_for(dense_size(v), [&](std::int64_t i) {
      gather_slot(v, static_cast<const T*>(interleaved), static_cast<T*>(dense), i);
    });
  });
}

void scatter([[maybe_unused]] const ExecContext& ec, DType dt, const SlotView& v, const void* dense, void* interleaved) {
#ifdef NDG_HAVE_CUDA
  if (ec.ctx.is_gpu()) return gpu::scatter_slot(ec, dt, v, dense, interleaved);
#endif
  dispatch_floating(dt, "interleaved_matmul", [&](auto tag) {
    using T = decltype(tag);
    parallel_for(dense_size(v), [&](std::int64_t i) {
      scatter_slot(v, static_cast<const T*>(dense), static_cast<T*>(interleaved), i);
    });
  });
}

// c (batch, m, n) = alpha · op(a) · op(b), batched over the B·H heads.
void product(const ExecContext& ec, DType dt, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n,
             std::int64_t k, double alpha, std::int64_t batch, const void* a, const void* b, void* c) {
  GemmArgs args;
  args.trans_a = trans_a;
  args.trans_b = trans_b;
  args.m = m;
  args.n = n;
  args.k = k;
  args.alpha = alpha;
  args.batch = batch;
  gemm(ec, dt, args, a, b, c);
}

// Dense scratch for `count` arrays of one view's size.
struct Scratch {
  Scratch(const ExecContext& ec, DType dt, const SlotView& v, int count)
      : bytes(static_cast<std::size_t>(dense_size(v)) * dtype_size(dt)), ws(ec, bytes * static_cast<std::size_t>(count)) {}
  void* at(int i) const { return ws.as<char>() + bytes * static_cast<std::size_t>(i); }
  std::size_t bytes;
  Workspace ws;
};

// The views an invocation's operands give: for the qk ops the queries' and keys' slots, for the
// valatt ops the values' slot and the output's (one slot per head).
struct Views {
  SlotView query, key;  // the qk ops
  SlotView value, out;  // the valatt ops
  std::int64_t tq = 0, tk = 0, bh = 0;
};

// The forward operands (inputs 0 and 1 of the forward op, inputs 1 and 2 of its backward op)
// checked and seen as views.
Views views_of(Kind kind, std::int64_t heads, const NDArray& first, const NDArray& second) {
  const char* op = kind_name(kind);
  Views v;
  switch (kind) {
    case Kind::selfatt_qk:
      v.query = view_of(op, "queries_keys_values", first, heads, 3, 0);
      v.key = view_of(op, "queries_keys_values", first, heads, 3, 1);
      v.tq = v.tk = first.shape()[0];
      break;
    case Kind::encdec_qk:
      v.query = view_of(op, "queries", first, heads, 1, 0);
      v.key = view_of(op, "keys_values", second, heads, 2, 0);
      v.tq = first.shape()[0];
      v.tk = second.shape()[0];
      if (second.shape()[1] != first.shape()[1] || v.key.d != v.query.d) {
        throw ShapeError(std::string(op) + ": queries " + nd::describe(first) + " and keys_values " +
                         nd::describe(second) + " must be (Tq, B, heads·d) and (Tk, B, heads·2·d)");
      }
      break;
    case Kind::selfatt_valatt:
    case Kind::encdec_valatt: {
      const bool self = kind == Kind::selfatt_valatt;
      v.value = view_of(op, self ? "queries_keys_values" : "keys_values", first, heads, self ? 3 : 2, self ? 2 : 1);
      v.tk = first.shape()[0];
      const std::int64_t bh = first.shape()[1] * heads;
      if (second.ndim() != 3 || second.shape()[0] != bh || second.shape()[2] != v.tk ||
          (self && second.shape()[1] != v.tk)) {
        throw ShapeError(std::string(op) + ": attention " + nd::describe(second) + " does not fit " +
                         nd::describe(first) + "; expected (" + std::to_string(bh) + ", " +
                         (self ? std::to_string(v.tk) : std::string("Tq")) + ", " + std::to_string(v.tk) + ")");
      }
      v.tq = second.shape()[1];
      v.out = {v.tq, first.shape()[1], heads, 1, 0, v.value.d};
      break;
    }
  }
  v.bh = first.shape()[1] * heads;
  return v;
}

void check_operands(const char* op, const Invocation& inv, std::size_t from) {
  nd::check_floating(op, inv.inputs[from]);
  for (std::size_t i = from + 1; i < inv.inputs.size(); ++i) nd::check_same_dtype(op, inv.inputs[from], inv.inputs[i]);
}

void forward_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const InterleavedParams& p = params_of(inv);
  const char* op = kind_name(p.kind);
  check_operands(op, inv, 0);
  const NDArray& first = inv.inputs[0];
  const Views v = views_of(p.kind, p.heads, first, inv.inputs.size() > 1 ? inv.inputs[1] : first);
  const bool qk = p.kind == Kind::selfatt_qk || p.kind == Kind::encdec_qk;
  out = {{qk ? Shape{v.bh, v.tq, v.tk} : Shape{v.tq, first.shape()[1], p.heads * v.value.d}, first.dtype()}};
}

void forward_kernel(const ExecContext& ec, const Invocation& inv) {
  const InterleavedParams& p = params_of(inv);
  const NDArray& first = inv.inputs[0];
  const NDArray& second = inv.inputs.size() > 1 ? inv.inputs[1] : first;
  const DType dt = first.dtype();
  const Views v = views_of(p.kind, p.heads, first, second);
  if (inv.outputs[0].size() == 0) return;
  if (p.kind == Kind::selfatt_qk || p.kind == Kind::encdec_qk) {
    // scores = q · kᵀ / sqrt(d)
    const Scratch q(ec, dt, v.query, 1), k(ec, dt, v.key, 1);
    gather(ec, dt, v.query, first.data(), q.at(0));
    gather(ec, dt, v.key, second.data(), k.at(0));
    product(ec, dt, false, true, v.tq, v.tk, v.query.d, 1 / std::sqrt(static_cast<double>(v.query.d)), v.bh, q.at(0),
            k.at(0), inv.outputs[0].data());
    return;
  }
  // out = attention · v, interleaved back
  const Scratch values(ec, dt, v.value, 1), result(ec, dt, v.out, 1);
  gather(ec, dt, v.value, first.data(), values.at(0));
  product(ec, dt, false, false, v.tq, v.value.d, v.tk, 1, v.bh, second.data(), values.at(0), result.at(0));
  scatter(ec, dt, v.out, result.at(0), inv.outputs[0].data());
}

// _backward_*: inputs (the output's gradient, then the forward op's inputs), outputs the
// gradients of those inputs.
void backward_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const InterleavedParams& p = params_of(inv);
  check_operands(kind_name(p.kind), inv, 0);
  out.clear();
  for (std::size_t i = 1; i < inv.inputs.size(); ++i) out.push_back({inv.inputs[i].shape(), inv.inputs[i].dtype()});
}

// Every slot of an interleaved gradient of `slots` slots not among `written`: zeros.
void zero_other_slots(const ExecContext& ec, DType dt, SlotView v, std::initializer_list<std::int64_t> written,
                      void* interleaved) {
  for (std::int64_t slot = 0; slot < v.slots; ++slot) {
    if (std::find(written.begin(), written.end(), slot) != written.end()) continue;
    v.slot = slot;
    scatter(ec, dt, v, nullptr, interleaved);
  }
}

void backward_kernel(const ExecContext& ec, const Invocation& inv) {
  const InterleavedParams& p = params_of(inv);
  const NDArray &g = inv.inputs[0], &first = inv.inputs[1];
  const NDArray& second = inv.inputs.size() > 2 ? inv.inputs[2] : first;
  const DType dt = g.dtype();
  const Views v = views_of(p.kind, p.heads, first, second);
  if (p.kind == Kind::selfatt_qk || p.kind == Kind::encdec_qk) {
    // dq = g · k / sqrt(d), dk = gᵀ · q / sqrt(d)
    const double alpha = 1 / std::sqrt(static_cast<double>(v.query.d));
    const Scratch q(ec, dt, v.query, 2), k(ec, dt, v.key, 2);  // values, then gradients
    gather(ec, dt, v.query, first.data(), q.at(0));
    gather(ec, dt, v.key, second.data(), k.at(0));
    product(ec, dt, false, false, v.tq, v.query.d, v.tk, alpha, v.bh, g.data(), k.at(0), q.at(1));
    product(ec, dt, true, false, v.tk, v.query.d, v.tq, alpha, v.bh, g.data(), q.at(0), k.at(1));
    if (p.kind == Kind::selfatt_qk) {
      void* dqkv = inv.outputs[0].data();
      scatter(ec, dt, v.query, q.at(1), dqkv);
      scatter(ec, dt, v.key, k.at(1), dqkv);
      zero_other_slots(ec, dt, v.query, {0, 1}, dqkv);
    } else {
      scatter(ec, dt, v.query, q.at(1), inv.outputs[0].data());
      scatter(ec, dt, v.key, k.at(1), inv.outputs[1].data());
      zero_other_slots(ec, dt, v.key, {0}, inv.outputs[1].data());
    }
    return;
  }
  // d attention = g · vᵀ, dv = attentionᵀ · g, with g gathered head by head
  const Scratch values(ec, dt, v.value, 2), grads(ec, dt, v.out, 1);
  gather(ec, dt, v.value, first.data(), values.at(0));
  gather(ec, dt, v.out, g.data(), grads.at(0));
  product(ec, dt, false, true, v.tq, v.tk, v.value.d, 1, v.bh, grads.at(0), values.at(0), inv.outputs[1].data());
  product(ec, dt, true, false, v.tk, v.value.d, v.tq, 1, v.bh, second.data(), grads.at(0), values.at(1));
  scatter(ec, dt, v.value, values.at(1), inv.outputs[0].data());
  zero_other_slots(ec, dt, v.value, {v.value.slot}, inv.outputs[0].data());
}

std::vector<std::pair<std::string, std::string>> interleaved_attrs(const Params& params) {
  return {{"heads", std::to_string(params.as<InterleavedParams>().heads)}};
}

InterleavedParams checked(Kind kind, std::int64_t heads) {
  if (heads < 1) throw ValueError(std::string(kind_name(kind)) + ": heads must be >= 1, got " + std::to_string(heads));
  return {heads, kind};
}

template <Kind kind>
Params interleaved_parse(const AttrList& attrs) {
  AttrReader a(kind_name(kind), attrs);
  const std::int64_t heads = a.integer("heads");
  a.finish();
  return checked(kind, heads);
}

template <Kind kind>
const OpDef& backward_def() {
  static const std::string name = std::string("_backward_") + (kind_name(kind) + std::string("_contrib_").size());
  static const OpDef def{name.c_str(), &backward_infer, &backward_kernel, NDG_GPU_KERNEL(backward_kernel), nullptr,
                         &interleaved_attrs, &interleaved_parse<kind>};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}

// One backward op over the output's gradient and the forward inputs.
template <Kind kind>
std::vector<NDArray> interleaved_gradient(const Invocation& inv, const std::vector<NDArray>& g) {
  std::vector<NDArray> inputs{g[0]};
  inputs.insert(inputs.end(), inv.inputs.begin(), inv.inputs.end());
  return invoke(backward_def<kind>(), inputs, inv.params);
}

template <Kind kind>
const OpDef& forward_def() {
  static const OpDef def{kind_name(kind), &forward_infer, &forward_kernel, NDG_GPU_KERNEL(forward_kernel),
                         &interleaved_gradient<kind>, &interleaved_attrs, &interleaved_parse<kind>};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}

[[maybe_unused]] const bool attention_family_registered =
    (forward_def<Kind::selfatt_qk>(), forward_def<Kind::selfatt_valatt>(), forward_def<Kind::encdec_qk>(),
     forward_def<Kind::encdec_valatt>(), backward_def<Kind::selfatt_qk>(), backward_def<Kind::selfatt_valatt>(),
     backward_def<Kind::encdec_qk>(), backward_def<Kind::encdec_valatt>(), true);

template <Kind kind>
NDArray run(std::vector<NDArray> inputs, std::int64_t heads) {
  for (const NDArray& a : inputs) nd::detail::check_not_none(kind_name(kind), a);
  return invoke1(forward_def<kind>(), inputs, checked(kind, heads));
}


// --- _sdpa_fused ---------------------------------------------------------------------------------
//
// scaled_dot_product_attention in one op on GPUs: inputs q (B, H, Tq, d), k, v (B, H, Tk, d) in
// float16 or bfloat16 and the keys' lengths (B,) int32 in [1, Tk] (or none); outputs o
// (B, H, Tq, d), the float32 log-sum-exp of each query's scaled, masked scores (B, H, Tq, 1), and
// the dropout mask's (seed, offset), int64 (2,), which the backward reads to regenerate the mask.
// No CPU kernel: the front end takes the reference path there.

// The kernels of cuda/cudnn_attention.cpp (declared in cuda/cudnn_attention.hpp), or stand-ins
// that the front end never reaches in a build without cuDNN.
}  // namespace
namespace gpu {
#ifdef NDG_HAVE_CUDNN
bool cudnn_sdpa_supported(int device, DType dtype, std::int64_t batch, std::int64_t heads, std::int64_t tq,
                          std::int64_t tk, std::int64_t d, bool causal, bool padded, double dropout);
void cudnn_sdpa_forward(const ExecContext& ec, const Invocation& inv, double scale, double dropout, bool causal);
void cudnn_sdpa_backward(const ExecContext& ec, const Invocation& inv, double scale, double dropout, bool causal);
#else
inline bool cudnn_sdpa_supported(int, DType, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                                 bool, bool, double) {
  return false;
}
inline void cudnn_sdpa_forward(const ExecContext&, const Invocation& inv, double, double, bool) {
  throw DeviceError(std::string(inv.op->name) + " needs a build with cuDNN");
}
inline void cudnn_sdpa_backward(const ExecContext&, const Invocation& inv, double, double, bool) {
  throw DeviceError(std::string(inv.op->name) + " needs a build with cuDNN");
}
#endif
}  // namespace gpu
namespace {

struct SDPAFusedParams {
  double scale;
  double dropout;  // the weights' dropout probability while training
  bool causal;
  bool training;   // set by the front end, and by a graph's replay (sdpa_mode)
};

const SDPAFusedParams& sdpa_params(const Invocation& inv) { return inv.params.as<SDPAFusedParams>(); }
double active_dropout(const SDPAFusedParams& p) { return p.training ? p.dropout : 0.0; }

// q, k, v of one half dtype and shapes (B, H, Tq, d), (B, H, Tk, d) twice; lengths int32 (B,).
void check_fused_operands(const char* op, const NDArray& q, const NDArray& k, const NDArray& v,
                          const NDArray& lengths) {
  if (!is_half(q.dtype())) throw DTypeError(std::string(op) + ": q must be float16 or bfloat16, got " + nd::describe(q));
  nd::check_same_dtype(op, q, k);
  nd::check_same_dtype(op, q, v);
  const bool fit = q.ndim() == 4 && k.ndim() == 4 && k.shape() == v.shape() && k.shape()[0] == q.shape()[0] &&
                   k.shape()[1] == q.shape()[1] && k.shape()[3] == q.shape()[3];
  if (!fit || (!lengths.is_none() && lengths.shape() != Shape{q.shape()[0]})) {
    throw ShapeError(std::string(op) + ": q " + nd::describe(q) + ", k " + nd::describe(k) + ", v " +
                     nd::describe(v) + " must be (B, H, Tq, d), (B, H, Tk, d), (B, H, Tk, d)" +
                     (lengths.is_none() ? "" : " and valid_length (B,), got " + nd::describe(lengths)));
  }
  if (!lengths.is_none() && lengths.dtype() != DType::int32) {
    throw DTypeError(std::string(op) + ": valid_length must be int32, got " + nd::describe(lengths));
  }
}

void sdpa_fused_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray &q = inv.inputs[0], &k = inv.inputs[1], &v = inv.inputs[2], &lengths = inv.inputs[3];
  check_fused_operands("_sdpa_fused", q, k, v, lengths);
  const Shape& s = q.shape();
  out = {{s, q.dtype()}, {Shape{s[0], s[1], s[2], 1}, DType::float32}, {Shape{2}, DType::int64}};
}

void sdpa_fused_cpu(const ExecContext&, const Invocation& inv) {
  throw DeviceError(std::string(inv.op->name) + " runs on GPUs only (cuDNN); scaled_dot_product_attention takes "
                    "the reference path on cpu(0)");
}

[[maybe_unused]] void sdpa_fused_gpu(const ExecContext& ec, const Invocation& inv) {
  const SDPAFusedParams& p = sdpa_params(inv);
  gpu::cudnn_sdpa_forward(ec, inv, p.scale, active_dropout(p), p.causal);
}

// _backward_sdpa_fused: inputs the gradient of o, q, k, v, o, the statistics, (seed, offset) and
// the lengths (or none); outputs the gradients of q, k and v.
void sdpa_backward_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  check_fused_operands("_backward_sdpa_fused", inv.inputs[1], inv.inputs[2], inv.inputs[3], inv.inputs[7]);
  nd::check_same_dtype("_backward_sdpa_fused", inv.inputs[1], inv.inputs[0]);
  if (inv.inputs[0].shape() != inv.inputs[1].shape()) {
    throw ShapeError("_backward_sdpa_fused: the output's gradient " + nd::describe(inv.inputs[0]) +
                     " must have q's shape " + nd::describe(inv.inputs[1]));
  }
  out.clear();
  for (std::size_t i = 1; i <= 3; ++i) out.push_back({inv.inputs[i].shape(), inv.inputs[i].dtype()});
}

[[maybe_unused]] void sdpa_backward_gpu(const ExecContext& ec, const Invocation& inv) {
  const SDPAFusedParams& p = sdpa_params(inv);
  gpu::cudnn_sdpa_backward(ec, inv, p.scale, active_dropout(p), p.causal);
}

std::vector<std::pair<std::string, std::string>> sdpa_attrs(const Params& params) {
  const SDPAFusedParams& p = params.as<SDPAFusedParams>();
  return {{"causal", p.causal ? "True" : "False"}, {"dropout", format_real(p.dropout)}, {"scale", format_real(p.scale)}};
}

// mx::ValueError for a dropout outside [0, 1) or a scale that is not finite and positive.
SDPAFusedParams sdpa_fused_params(const char* op, double scale, double dropout, bool causal, bool training) {
  if (!(dropout >= 0 && dropout < 1)) {
    throw ValueError(std::string(op) + ": dropout must be in [0, 1), got " + format_real(dropout));
  }
  if (!(std::isfinite(scale) && scale > 0)) {
    throw ValueError(std::string(op) + ": scale must be finite and positive, got " + format_real(scale));
  }
  return {scale, dropout, causal, training};
}

// Attributes as sdpa_attrs writes them; training until a replay's mode says otherwise.
template <const char* name>
Params sdpa_parse(const AttrList& attrs) {
  AttrReader a(name, attrs);
  const bool causal = a.boolean("causal", false);
  const double dropout = a.real("dropout", 0.0), scale = a.real("scale");
  a.finish();
  return sdpa_fused_params(name, scale, dropout, causal, true);
}

bool sdpa_mode(Params& params, bool training) {
  SDPAFusedParams p = params.as<SDPAFusedParams>();
  p.training = training;
  params = p;
  return true;
}

bool sdpa_draws(const Params& params) { return active_dropout(params.as<SDPAFusedParams>()) > 0; }

constexpr char kFusedName[] = "_sdpa_fused";
constexpr char kFusedBackwardName[] = "_backward_sdpa_fused";

const OpDef& sdpa_backward_def() {
  static const OpDef def{kFusedBackwardName, &sdpa_backward_infer, &sdpa_fused_cpu, NDG_GPU_KERNEL(sdpa_backward_gpu),
                         nullptr, &sdpa_attrs, &sdpa_parse<kFusedBackwardName>, false, &sdpa_mode, 8, false,
                         nullptr, 0, nullptr};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}

// The gradients of q, k and v from o's (the statistics and the seed carry none), in one backward op.
std::vector<NDArray> sdpa_fused_gradient(const Invocation& inv, const std::vector<NDArray>& g) {
  if (g[0].is_none()) return {NDArray(), NDArray(), NDArray(), NDArray()};
  std::vector<NDArray> grads = invoke(sdpa_backward_def(), {g[0], inv.inputs[0], inv.inputs[1], inv.inputs[2],
                                                            inv.outputs[0], inv.outputs[1], inv.outputs[2],
                                                            inv.inputs[3]},
                                      inv.params);
  grads.push_back(NDArray());
  return grads;
}

const OpDef& sdpa_fused_def() {
  static const OpDef def{kFusedName, &sdpa_fused_infer, &sdpa_fused_cpu, NDG_GPU_KERNEL(sdpa_fused_gpu),
                         &sdpa_fused_gradient, &sdpa_attrs, &sdpa_parse<kFusedName>, false, &sdpa_mode, 4, false,
                         nullptr, 0, &sdpa_draws};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}

[[maybe_unused]] const bool sdpa_registered = (sdpa_fused_def(), sdpa_backward_def(), true);

// Whether scaled_dot_product_attention takes the fused path: a GPU, float16 or bfloat16 operands
// of one dtype, dv = d, and extents cuDNN builds plans for (cached per geometry).
bool sdpa_fused_applies(const NDArray& q, const NDArray& k, const NDArray& v, bool padded, bool causal,
                        double dropout) {
  if (!q.context().is_gpu() || !is_half(q.dtype()) || k.dtype() != q.dtype() || v.dtype() != q.dtype()) return false;
  if (v.shape()[3] != q.shape()[3]) return false;
  const Shape &s = q.shape();
  return gpu::cudnn_sdpa_supported(q.context().device_id(), q.dtype(), s[0], s[1], s[2], k.shape()[2], s[3], causal,
                                   padded, dropout);
}

// The fused path: o of _sdpa_fused. Valid lengths go to cuDNN clipped to [1, Tk]; a batch row with
// none (a length of 0 or less) gets zeros, as the reference gives, through a (B, 1, 1, 1) mask.
NDArray sdpa_fused(const NDArray& q, const NDArray& k, const NDArray& v, const nd::SDPAOptions& o, double scale,
                   bool training) {
  NDArray lengths, has_keys;
  if (!o.valid_length.is_none()) {
    const NDArray given = o.valid_length.astype(DType::int32);
    lengths = nd::clip(given, 1, static_cast<double>(k.shape()[2]));
    has_keys = nd::clip(given, 0, 1).astype(q.dtype()).reshape({q.shape()[0], 1, 1, 1});
  }
  const NDArray out =
      invoke(sdpa_fused_def(), {q, k, v, lengths},
             sdpa_fused_params("scaled_dot_product_attention", scale, o.dropout, o.causal, training))[0];
  return has_keys.is_none() ? out : out * has_keys;
}

}  // namespace
}  // namespace mx::op

namespace mx::nd::contrib {

NDArray interleaved_matmul_selfatt_qk(const NDArray& queries_keys_values, std::int64_t heads) {
  return op::run<op::Kind::selfatt_qk>({queries_keys_values}, heads);
}

NDArray interleaved_matmul_selfatt_valatt(const NDArray& queries_keys_values, const NDArray& attention,
                                          std::int64_t heads) {
  return op::run<op::Kind::selfatt_valatt>({queries_keys_values, attention}, heads);
}

NDArray interleaved_matmul_encdec_qk(const NDArray& queries, const NDArray& keys_values, std::int64_t heads) {
  return op::run<op::Kind::encdec_qk>({queries, keys_values}, heads);
}

NDArray interleaved_matmul_encdec_valatt(const NDArray& keys_values, const NDArray& attention, std::int64_t heads) {
  return op::run<op::Kind::encdec_valatt>({keys_values, attention}, heads);
}

}  // namespace mx::nd::contrib

namespace mx::nd {

NDArray scaled_dot_product_attention(const NDArray& q, const NDArray& k, const NDArray& v, const SDPAOptions& o) {
  for (const NDArray* a : {&q, &k, &v}) detail::check_not_none("scaled_dot_product_attention", *a);
  const auto fail = [&](const std::string& why) {
    throw ShapeError("scaled_dot_product_attention: " + why + "; got q " + describe(q) + ", k " + describe(k) +
                     ", v " + describe(v) + (o.valid_length.is_none() ? "" : ", valid_length " + describe(o.valid_length)));
  };
  if (q.ndim() != 4 || k.ndim() != 4 || v.ndim() != 4) fail("q, k and v must be (batch, heads, length, features)");
  const std::int64_t B = q.shape()[0], H = q.shape()[1], Tq = q.shape()[2], d = q.shape()[3];
  const std::int64_t Tk = k.shape()[2], dv = v.shape()[3];
  if (k.shape() != Shape{B, H, Tk, d} || v.shape() != Shape{B, H, Tk, dv}) {
    fail("k must be (batch, heads, Tk, d) and v (batch, heads, Tk, dv) for q (batch, heads, Tq, d)");
  }
  if (!o.valid_length.is_none() && o.valid_length.shape() != Shape{B}) fail("valid_length must be (batch,)");
  if (!(o.dropout >= 0 && o.dropout < 1)) {
    throw ValueError("scaled_dot_product_attention: dropout must be in [0, 1), got " + std::to_string(o.dropout));
  }
  const double scale = o.scale.value_or(1.0 / std::sqrt(static_cast<double>(d)));
  const bool training = autograd::is_training();
  if (op::sdpa_fused_applies(q, k, v, !o.valid_length.is_none(), o.causal, training ? o.dropout : 0.0)) {
    return op::sdpa_fused(q, k, v, o, scale, training);
  }
  const NDArray scores = batch_dot(q.reshape({B * H, Tq, d}), k.reshape({B * H, Tk, d}), false, true) * scale;
  NDArray weights;
  if (!o.causal && o.valid_length.is_none()) {
    weights = softmax(scores, -1);
  } else {
    // Each query's number of keys, (B·H, Tq): i + 1 when causal, the row's valid length, or the
    // smaller of the two.
    const Context ctx = q.context();
    NDArray lengths = o.causal ? arange(1, static_cast<double>(Tq) + 1, 1, ctx, DType::int32).reshape({1, 1, Tq})
                               : full({1, 1, Tq}, static_cast<double>(Tk), ctx, DType::int32);
    if (!o.valid_length.is_none()) lengths = minimum(lengths, o.valid_length.astype(DType::int32).reshape({B, 1, 1}));
    weights = softmax(scores, broadcast_to(lengths, {B, H, Tq}).reshape({B * H, Tq}), -1);
  }
  if (o.dropout > 0 && autograd::is_training()) weights = Dropout(weights, o.dropout);
  return batch_dot(weights, v.reshape({B * H, Tk, dv})).reshape({B, H, Tq, dv});
}

}  // namespace mx::nd
