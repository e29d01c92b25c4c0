// The normalisation family: LayerNorm, GroupNorm and InstanceNorm, as MXNet's ops of those names,
// and their backward ops _backward_LayerNorm, _backward_GroupNorm and _backward_InstanceNorm. One
// computation serves the three (Note [normalisation lines] in norm_kernels.hpp). Here: the front
// ends, inference, gradients and the CPU loops (sums in double: the reference the GPU is tested
// against); the CUDA launches are in cuda/ops/norm.cu.
//
// Inputs (data, gamma, beta); outputs (out, mean, std), the statistics backward reuses, after the
// visible output as BatchNorm's: MXNet's LayerNorm and GroupNorm show them under
// output_mean_var=True (its InstanceNorm keeps mean and var hidden).
#include "ndarray/ops/norm.hpp"

#include <string>

#include "ndarray/core/checks.hpp"
#include "ndarray/core/describe.hpp"
#include "ndarray/ops/attrs.hpp"
#include "ndarray/ops/conv_kernels.hpp"  // batch_norm_param_dtype: the statistics' dtype
#include "ndarray/ops/norm_kernels.hpp"
#include "ndarray/ops/parallel.hpp"
#include "ndarray/ops/reduce_kernels.hpp"

namespace mx::op {
namespace {

using nd::NDArray;

const NormParams& norm_params(const Invocation& inv) { return inv.params.as<NormParams>(); }

const char* norm_op_name(NormKind kind) {
  switch (kind) {
    case NormKind::layer: return "LayerNorm";
    case NormKind::group: return "GroupNorm";
    case NormKind::instance: return "InstanceNorm";
  }
  return "LayerNorm";
}

// The statistics' shape: data's with extent 1 at the axis (LayerNorm), (N, G) or (N, C).
Shape stats_shape(const NormParams& p, const Shape& data, const NormShape& s) {
  if (p.kind != NormKind::layer) return Shape{data[0], s.groups};
  std::vector<std::int64_t> dims(data.begin(), data.end());
  dims[static_cast<std::size_t>(normalize_axis("LayerNorm", p.axis, data))] = 1;
  return Shape(dims);
}

// gamma and beta: (channels,), of the data's dtype or its compute dtype (float32 for 16-bit data).
void check_param(const char* op, const char* name, const NDArray& param, const NDArray& data, std::int64_t channels) {
  if (param.shape() != Shape{channels}) {
    throw ShapeError(std::string(op) + ": " + name + " " + nd::describe(param) + " does not fit data " +
                     nd::describe(data) + "; expected (" + std::to_string(channels) + ",), one value per channel");
  }
  const DType compute = batch_norm_param_dtype(data.dtype());
  if (param.dtype() != data.dtype() && param.dtype() != compute) {
    throw DTypeError(std::string(op) + ": " + name + " " + nd::describe(param) + " must be " +
                     dtype_name(data.dtype()) +
                     (compute != data.dtype() ? std::string(" or ") + dtype_name(compute) : std::string()) +
                     " for data " + nd::describe(data));
  }
}

void norm_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NormParams& p = norm_params(inv);
  const char* op = norm_op_name(p.kind);
  const NDArray &x = inv.inputs[0], &gamma = inv.inputs[1], &beta = inv.inputs[2];
  nd::check_floating(op, x);
  const NormShape s = norm_shape(p, x);
  check_param(op, "gamma", gamma, x, s.channels);
  check_param(op, "beta", beta, x, s.channels);
  if (gamma.dtype() != beta.dtype()) {
    throw DTypeError(std::string(op) + ": gamma " + nd::describe(gamma) + " and beta " + nd::describe(beta) +
                     " must have one dtype");
  }
  const Shape stats = stats_shape(p, x.shape(), s);
  const DType stats_dtype = batch_norm_param_dtype(x.dtype());
  out = {{x.shape(), x.dtype()}, {stats, stats_dtype}, {stats, stats_dtype}};
}

void norm_cpu(const ExecContext&, const Invocation& inv) {
  const NormParams& p = norm_params(inv);
  const NDArray& x = inv.inputs[0];
  const NormShape s = norm_shape(p, x);
  const std::int64_t lines = s.lines.outer * s.lines.inner;
  dispatch_norm(x.dtype(), inv.inputs[1].dtype(), inv.op->name, [&](auto data_tag, auto param_tag) {
    const NormForwardArrays<decltype(data_tag), decltype(param_tag)> a(inv);
    parallel_for(lines, [&](std::int64_t line) {
      norm_forward_line<double>(a.x, a.gamma, a.beta, a.y, a.mean, a.stdev, s, line, p.eps);
    }, x.size());
  });
}

// _backward_*: inputs (dy, data, gamma, mean, std), outputs (dx, dgamma, dbeta).
void norm_backward_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray &x = inv.inputs[1], &gamma = inv.inputs[2];
  out = {{x.shape(), x.dtype()}, {gamma.shape(), gamma.dtype()}, {gamma.shape(), gamma.dtype()}};
}

void norm_backward_cpu(const ExecContext&, const Invocation& inv) {
  const NDArray& x = inv.inputs[1];
  const NormShape s = norm_shape(norm_params(inv), x);
  const std::int64_t lines = s.lines.outer * s.lines.inner;
  dispatch_norm(x.dtype(), inv.inputs[2].dtype(), inv.op->name, [&](auto data_tag, auto param_tag) {
    const NormBackwardArrays<decltype(data_tag), decltype(param_tag)> a(inv);
    parallel_for(lines, [&](std::int64_t line) {
      norm_backward_line<double>(a.dy, a.x, a.gamma, a.mean, a.stdev, a.dx, s, line);
    }, x.size());
    parallel_for(s.channels, [&](std::int64_t c) {
      norm_param_grad_channel<double>(a.dy, a.x, a.mean, a.stdev, a.dgamma, a.dbeta, s, c);
    }, x.size());
  });
}

std::vector<std::pair<std::string, std::string>> norm_attrs(const Params& params) {
  const auto& p = params.as<NormParams>();
  switch (p.kind) {
    case NormKind::layer:
      return {{"axis", std::to_string(p.axis)}, {"eps", format_real(p.eps)},
              {"output_mean_var", format_bool(p.output_mean_var)}};
    case NormKind::group:
      return {{"num_groups", std::to_string(p.num_groups)}, {"eps", format_real(p.eps)},
              {"output_mean_var", format_bool(p.output_mean_var)}};
    case NormKind::instance: break;
  }
  return {{"eps", format_real(p.eps)}};
}

// The options checked: eps > 0 (MXNet allows 0, which divides by zero for a constant group; here a
// typed error), num_groups >= 1.
NormParams checked(NormParams p) {
  const char* op = norm_op_name(p.kind);
  if (!(p.eps > 0)) throw ValueError(std::string(op) + ": eps must be positive, got " + format_real(p.eps));
  if (p.kind == NormKind::group && p.num_groups < 1) {
    throw ValueError(std::string(op) + ": num_groups must be >= 1, got " + std::to_string(p.num_groups));
  }
  return p;
}

// MXNet's attributes and defaults: LayerNorm axis -1, eps 1e-5; GroupNorm num_groups 1, eps 1e-5;
// InstanceNorm eps 1e-3.
template <NormKind kind>
Params norm_parse(const AttrList& attrs) {
  AttrReader a(norm_op_name(kind), attrs);
  NormParams p;
  p.kind = kind;
  if (kind == NormKind::layer) p.axis = a.axis("axis", -1);
  if (kind == NormKind::group) p.num_groups = a.integer("num_groups", 1);
  p.eps = a.real("eps", kind == NormKind::instance ? 1e-3 : 1e-5);
  if (kind != NormKind::instance) p.output_mean_var = a.boolean("output_mean_var", false);
  a.finish();
  return checked(p);
}

template <NormKind kind>
const OpDef& backward_def() {
  static const std::string name = std::string("_backward_") + norm_op_name(kind);
  static const OpDef def{name.c_str(), &norm_backward_infer, &norm_backward_cpu, NDG_GPU_KERNEL(gpu::norm_backward),
                         nullptr, &norm_attrs, &norm_parse<kind>};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}

// The data's, gamma's and beta's gradients from out's, each into the variable's own gradient
// buffer where backward offers it (op::gradient_into: no copy of dx into x.grad() after the op);
// gradients reaching mean and std (under output_mean_var) are not propagated, as in MXNet.
template <NormKind kind>
std::vector<NDArray> norm_gradient(const Invocation& inv, const std::vector<NDArray>& g) {
  if (g[0].is_none()) return {NDArray(), NDArray(), NDArray()};
  std::vector<NDArray> grads;
  {
    const OutputReuse reuse({gradient_target(inv, 0), gradient_target(inv, 1), gradient_target(inv, 2)});
    grads = invoke(backward_def<kind>(), {g[0], inv.inputs[0], inv.inputs[1], inv.outputs[1], inv.outputs[2]},
                   inv.params);
  }
  for (std::size_t i = 0; i < grads.size(); ++i) gradient_written(inv, i, grads[i]);
  return grads;
}

template <NormKind kind>
const OpDef& norm_def() {
  static const OpDef def{norm_op_name(kind), &norm_infer, &norm_cpu, NDG_GPU_KERNEL(gpu::norm), &norm_gradient<kind>,
                         &norm_attrs, &norm_parse<kind>};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}

[[maybe_unused]] const bool norm_family_registered =
    (norm_def<NormKind::layer>(), norm_def<NormKind::group>(), norm_def<NormKind::instance>(),
     backward_def<NormKind::layer>(), backward_def<NormKind::group>(), backward_def<NormKind::instance>(), true);

std::vector<NDArray> run(NormParams p, const NDArray& data, const NDArray& gamma, const NDArray& beta) {
  const char* op = norm_op_name(p.kind);
  for (const NDArray* a : {&data, &gamma, &beta}) nd::detail::check_not_none(op, *a);
  p = checked(p);
  switch (p.kind) {
    case NormKind::layer: return invoke(norm_def<NormKind::layer>(), {data, gamma, beta}, p);
    case NormKind::group: return invoke(norm_def<NormKind::group>(), {data, gamma, beta}, p);
    case NormKind::instance: break;
  }
  return invoke(norm_def<NormKind::instance>(), {data, gamma, beta}, p);
}

}  // namespace

NormShape norm_shape(const NormParams& p, const nd::NDArray& data) {
  const char* op = norm_op_name(p.kind);
  const Shape& shape = data.shape();
  NormShape s;
  if (p.kind == NormKind::layer) {
    s.lines = around_axis(shape, normalize_axis(op, p.axis, shape));
    s.channels = s.lines.length;
    return s;
  }
  const int min_axes = p.kind == NormKind::group ? 2 : 3;
  if (shape.ndim() < min_axes) {
    throw ShapeError(std::string(op) + ": data must be (N, C" + (p.kind == NormKind::group ? ", ...)" : ", spatial...)") +
                     ", got " + nd::describe(data));
  }
  const std::int64_t N = shape[0], C = shape[1];
  const std::int64_t S = N * C > 0 ? shape.numel() / (N * C) : 0;  // spatial positions per channel
  if (p.kind == NormKind::group && C % p.num_groups != 0) {
    throw ShapeError(std::string(op) + ": " + std::to_string(C) + " channels of data " + nd::describe(data) +
                     " do not fall into num_groups=" + std::to_string(p.num_groups) + " equal groups");
  }
  s.groups = p.kind == NormKind::group ? p.num_groups : C;
  s.channels = s.groups;  // a gamma per group (GroupNorm) or per channel (InstanceNorm)
  s.lines = {N * s.groups, s.groups > 0 ? C / s.groups * S : 0, 1};
  // One gamma for the whole line: the line is one channel's spatial extent (1 when it is empty).
  s.spatial = s.lines.length > 0 ? s.lines.length : 1;
  return s;
}

}  // namespace mx::op

namespace mx::nd {

NDArray LayerNorm(const NDArray& data, const NDArray& gamma, const NDArray& beta, const LayerNormOptions& o) {
  return op::run({op::NormKind::layer, o.axis, 1, o.eps, false}, data, gamma, beta)[0];
}

std::vector<NDArray> LayerNorm_mean_std(const NDArray& data, const NDArray& gamma, const NDArray& beta,
                                        const LayerNormOptions& o) {
  return op::run({op::NormKind::layer, o.axis, 1, o.eps, true}, data, gamma, beta);
}

NDArray GroupNorm(const NDArray& data, const NDArray& gamma, const NDArray& beta, const GroupNormOptions& o) {
  return op::run({op::NormKind::group, -1, o.num_groups, o.eps, false}, data, gamma, beta)[0];
}

NDArray InstanceNorm(const NDArray& data, const NDArray& gamma, const NDArray& beta, const InstanceNormOptions& o) {
  return op::run({op::NormKind::instance, -1, 1, o.eps, false}, data, gamma, beta)[0];
}

}  // namespace mx::nd
