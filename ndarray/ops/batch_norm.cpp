// BatchNorm and its backward op. Here: the front end, inference, gradient and CPU loops (sums in
// double, two passes over the data: the reference the GPU is tested against); the CUDA launches
// are in cuda/ops/batch_norm.cu.
//
// BatchNorm's inputs are (data, gamma, beta, moving_mean, moving_var), its outputs (out, mean,
// invstd): the statistics it normalised by, which backward reuses. Float16 and bfloat16 data keep
// their parameters and statistics in float32, as MXNet and cuDNN do. In training the kernel also
// updates moving_mean and moving_var in place, as MXNet's auxiliary states, so that a replayed
// graph updates them too.
#include <cmath>

#include "ndarray/autograd/autograd.hpp"
#include "ndarray/core/checks.hpp"
#include "ndarray/ops/attrs.hpp"
#include "ndarray/ops/conv_kernels.hpp"
#include "ndarray/ops/nn.hpp"
#include "ndarray/ops/parallel.hpp"
#include "ndarray/ops/reduce_kernels.hpp"

namespace mx::op {
namespace {

using nd::NDArray;

const BatchNormParams& bn_params(const Invocation& inv) { return inv.params.as<BatchNormParams>(); }

int channel_axis(const BatchNormParams& p, const NDArray& x) { return p.axis < 0 ? p.axis + x.ndim() : p.axis; }

void infer_with(const char* op, const BatchNormParams& p, const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray& x = inv.inputs[0];
  nd::check_floating(op, x);
  if (p.axis < -x.ndim() || p.axis >= x.ndim()) {
    throw ShapeError(std::string(op) + ": axis " + std::to_string(p.axis) + " is out of range for data " +
                     nd::describe(x));
  }
  const Shape channels{x.shape()[channel_axis(p, x)]};
  const DType param_dtype = batch_norm_param_dtype(x.dtype());
  const char* names[] = {"gamma", "beta", "moving_mean", "moving_var"};
  for (int i = 1; i <= 4; ++i) {
    const NDArray& param = inv.inputs[static_cast<std::size_t>(i)];
    if (param.dtype() != param_dtype) {
      throw DTypeError(std::string(op) + ": " + names[i - 1] + " " + nd::describe(param) + " must be " +
                       dtype_name(param_dtype) + " for data " + nd::describe(x));
    }
    if (param.shape() != channels) {
      throw ShapeError(std::string(op) + ": " + names[i - 1] + " " + nd::describe(param) + " does not fit data " +
                       nd::describe(x) + " along axis " + std::to_string(p.axis) + "; expected " + channels.tuple_str());
    }
  }
  out = {{x.shape(), x.dtype()}, {channels, param_dtype}, {channels, param_dtype}};
}

void batch_norm_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  infer_with("BatchNorm", bn_params(inv), inv, out);
}

void batch_norm_loops(const BatchNormParams& p, const Invocation& inv) {
  const NDArray& x = inv.inputs[0];
  const ReduceShape s = around_axis(x.shape(), channel_axis(p, x));
  const std::int64_t count = s.outer * s.inner;  // elements per channel
  dispatch_floating(x.dtype(), "BatchNorm", [&](auto tag) {
    using T = decltype(tag);
    using P = ComputeType<T>;  // parameters and statistics
    const T* in = static_cast<const T*>(x.data());
    const P *gamma = static_cast<const P*>(inv.inputs[1].data()), *beta = static_cast<const P*>(inv.inputs[2].data());
    P *moving_mean = static_cast<P*>(inv.inputs[3].data()), *moving_var = static_cast<P*>(inv.inputs[4].data());
    T* out = static_cast<T*>(inv.outputs[0].data());
    P *mean = static_cast<P*>(inv.outputs[1].data()), *invstd = static_cast<P*>(inv.outputs[2].data());
    const auto element = [&](std::int64_t c, std::int64_t o, std::int64_t i) -> std::int64_t {
      return (o * s.length + c) * s.inner + i;
    };
    parallel_for(s.length, [&](std::int64_t c) {
      if (!p.training || count == 0) {
        mean[c] = moving_mean[c];
        invstd[c] = static_cast<P>(1.0 / std::sqrt(static_cast<double>(moving_var[c]) + p.eps));
        return;
      }
      double sum = 0, squares = 0;
      for (std::int64_t o = 0; o < s.outer; ++o) {
        for (std::int64_t i = 0; i < s.inner; ++i) sum += in[element(c, o, i)];
      }
      const double m = sum / static_cast<double>(count);
      for (std::int64_t o = 0; o < s.outer; ++o) {
        for (std::int64_t i = 0; i < s.inner; ++i) {
          const double d = static_cast<double>(in[element(c, o, i)]) - m;
          squares += d * d;
        }
      }
      const double var = squares / static_cast<double>(count);
      const double unbiased = count > 1 ? squares / static_cast<double>(count - 1) : var;
      mean[c] = static_cast<P>(m);
      invstd[c] = static_cast<P>(1.0 / std::sqrt(var + p.eps));
      moving_mean[c] = static_cast<P>(p.momentum * moving_mean[c] + (1 - p.momentum) * m);
      moving_var[c] = static_cast<P>(p.momentum * moving_var[c] + (1 - p.momentum) * unbiased);
    }, x.size());
    parallel_for(s.outer * s.length, [&](std::int64_t row) {
      const std::int64_t c = row % s.length;
      const P scale = (p.fix_gamma ? P(1) : gamma[c]) * invstd[c], shift = beta[c] - mean[c] * scale;
      for (std::int64_t i = 0; i < s.inner; ++i) out[row * s.inner + i] = static_cast<T>(in[row * s.inner + i] * scale + shift);
    }, x.size());
  });
}

void batch_norm_cpu(const ExecContext&, const Invocation& inv) { batch_norm_loops(bn_params(inv), inv); }

// _backward_BatchNorm: inputs (dy, x, gamma, mean, invstd), outputs (dx, dgamma, dbeta). With
// x̂ = (x - mean) · invstd and M elements per channel, in training
//   dx = gamma · invstd · (dy - Σdy / M - x̂ · Σ(dy · x̂) / M),
// and with fixed statistics dx = gamma · invstd · dy; dgamma = Σ(dy · x̂) (0 with fix_gamma),
// dbeta = Σdy.
void backward_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray &x = inv.inputs[1], &gamma = inv.inputs[2];
  out = {{x.shape(), x.dtype()}, {gamma.shape(), gamma.dtype()}, {gamma.shape(), gamma.dtype()}};
}

void backward_loops(const BatchNormParams& p, const Invocation& inv) {
  const NDArray& x = inv.inputs[1];
  const ReduceShape s = around_axis(x.shape(), channel_axis(p, x));
  const double count = static_cast<double>(s.outer * s.inner);
  dispatch_floating(x.dtype(), "BatchNorm", [&](auto tag) {
    using T = decltype(tag);
    using P = ComputeType<T>;
    const T *dy = static_cast<const T*>(inv.inputs[0].data()), *in = static_cast<const T*>(x.data());
    const P *gamma = static_cast<const P*>(inv.inputs[2].data()), *mean = static_cast<const P*>(inv.inputs[3].data()),
            *invstd = static_cast<const P*>(inv.inputs[4].data());
    T* dx = static_cast<T*>(inv.outputs[0].data());
    P *dgamma = static_cast<P*>(inv.outputs[1].data()), *dbeta = static_cast<P*>(inv.outputs[2].data());
    parallel_for(s.length, [&](std::int64_t c) {
      double sum_dy = 0, sum_dy_xhat = 0;
      for (std::int64_t o = 0; o < s.outer; ++o) {
        const std::int64_t row = (o * s.length + c) * s.inner;
        for (std::int64_t i = 0; i < s.inner; ++i) {
          sum_dy += dy[row + i];
          sum_dy_xhat += static_cast<double>(dy[row + i]) * (static_cast<double>(in[row + i]) - mean[c]) * invstd[c];
        }
      }
      dbeta[c] = static_cast<P>(sum_dy);
      dgamma[c] = p.fix_gamma ? P(0) : static_cast<P>(sum_dy_xhat);
      const double scale = (p.fix_gamma ? 1.0 : static_cast<double>(gamma[c])) * invstd[c];
      const double mean_dy = p.training && count > 0 ? sum_dy / count : 0.0;
      const double mean_dy_xhat = p.training && count > 0 ? sum_dy_xhat / count : 0.0;
      for (std::int64_t o = 0; o < s.outer; ++o) {
        const std::int64_t row = (o * s.length + c) * s.inner;
        for (std::int64_t i = 0; i < s.inner; ++i) {
          const double xhat = (static_cast<double>(in[row + i]) - mean[c]) * static_cast<double>(invstd[c]);
          dx[row + i] = static_cast<T>(scale * (static_cast<double>(dy[row + i]) - mean_dy - xhat * mean_dy_xhat));
        }
      }
    }, x.size());
  });
}

void backward_cpu(const ExecContext&, const Invocation& inv) { backward_loops(bn_params(inv), inv); }

std::vector<std::pair<std::string, std::string>> batch_norm_attrs(const Params& params) {
  const auto& p = params.as<BatchNormParams>();
  return {{"eps", format_real(p.eps)},
          {"momentum", format_real(p.momentum)},
          {"fix_gamma", format_bool(p.fix_gamma)},
          {"use_global_stats", format_bool(p.use_global_stats)},
          {"axis", std::to_string(p.axis)}};
}

// The options checked (mx::ValueError): eps > 0, momentum in [0, 1].
BatchNormParams batch_norm_params(const nd::BatchNormOptions& o, bool training, const char* op = "BatchNorm") {
  if (!(o.eps > 0)) throw ValueError(std::string(op) + ": eps must be positive, got " + format_real(o.eps));
  if (!(o.momentum >= 0 && o.momentum <= 1)) {
    throw ValueError(std::string(op) + ": momentum must be in [0, 1], got " + format_real(o.momentum));
  }
  BatchNormParams p;
  p.eps = o.eps;
  p.momentum = o.momentum;
  p.axis = o.axis;
  p.fix_gamma = o.fix_gamma;
  p.use_global_stats = o.use_global_stats;
  p.training = training;
  return p;
}

// MXNet's attributes. output_mean_var (whether the node shows the mean and invstd outputs, which
// the op computes either way), cudnn_off (which engine runs) and min_calib_range /
// max_calib_range (quantized BatchNorm's) change no result: ignored. training is not an
// attribute: it is set as the front end sets it in training mode (batch statistics unless
// use_global_stats); whoever runs the graph for prediction clears it.
Params batch_norm_parse(const AttrList& attrs) {
  AttrReader a("BatchNorm", attrs);
  nd::BatchNormOptions o;
  o.eps = a.real("eps", 1e-3);
  o.momentum = a.real("momentum", 0.9);
  o.fix_gamma = a.boolean("fix_gamma", true);
  o.use_global_stats = a.boolean("use_global_stats", false);
  o.axis = a.axis("axis", 1);
  a.ignore({"output_mean_var", "cudnn_off", "min_calib_range", "max_calib_range"});
  a.finish();
  return batch_norm_params(o, !o.use_global_stats);
}

const OpDef& backward_op() {
  static const OpDef def{"_backward_BatchNorm", &backward_infer, &backward_cpu,
                         NDG_GPU_KERNEL(gpu::batch_norm_backward), nullptr, &batch_norm_attrs, &batch_norm_parse};
  static const OpDef& reg = register_op(def);
  return reg;
}

// Gradients for data, gamma and beta; none for the running statistics.
std::vector<NDArray> batch_norm_gradient(const Invocation& inv, const std::vector<NDArray>& out_grads) {
  auto grads = invoke(backward_op(),
                      {out_grads[0], inv.inputs[0], inv.inputs[1], inv.outputs[1], inv.outputs[2]}, inv.params);
  return {grads[0], grads[1], grads[2], NDArray(), NDArray()};
}

// Batch statistics in training unless use_global_stats, as the front end decides.
bool batch_norm_mode(Params& params, bool training) {
  BatchNormParams p = params.as<BatchNormParams>();
  p.training = training && !p.use_global_stats;
  params = p;
  return true;
}

const OpDef& batch_norm_op() {
  static const OpDef def = [] {
    OpDef d{"BatchNorm", &batch_norm_infer, &batch_norm_cpu, NDG_GPU_KERNEL(gpu::batch_norm),
            &batch_norm_gradient, &batch_norm_attrs, &batch_norm_parse, false, &batch_norm_mode};
    d.written_inputs = 1u << 3 | 1u << 4;  // moving_mean, moving_var
    return d;
  }();
  static const OpDef& reg = register_op(def);
  return reg;
}

// --- _contrib_SyncBatchNorm --------------------------------------------------------------------
// BatchNorm on axis 1 with the batch statistics of all ndev GPUs that run it under the same key
// in a step, as MXNet's contrib op: each GPU normalises its slice by the whole batch's mean and
// variance, and its data gradient takes the whole batch's sums, so that data-parallel training on
// n GPUs computes what one GPU computes on the whole batch. gamma's and beta's gradients are each
// GPU's own sums (the trainer adds them over the GPUs). The GPUs exchange their sums in their
// streams (Note [in-stream exchange between GPUs], cuda/device_exchange.hpp). Where ndgluon
// differs from MXNet on purpose: the running statistics are updated in the forward pass (MXNet
// updates them in backward) with the unbiased variance, as BatchNorm does; the variance is
// combined from each GPU's shifted sums in double (MXNet subtracts E[x]² from E[x²] in float).
// ndev = 1 is BatchNorm on axis 1. A CPU kernel runs one context at a time, in turn, so it cannot
// wait for the others: on cpu(0), ndev must be 1 in training.

const SyncBatchNormParams& sync_params(const Invocation& inv) { return inv.params.as<SyncBatchNormParams>(); }

void sync_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const char* op = "_contrib_SyncBatchNorm";
  const SyncBatchNormParams& p = sync_params(inv);
  infer_with(op, p.bn, inv, out);
  if (p.ndev > 1 && p.bn.training && !inv.inputs[0].context().is_gpu()) {
    throw ValueError(std::string(op) + " '" + p.key + "': ndev=" + std::to_string(p.ndev) + " on " +
                     inv.inputs[0].context().str() +
                     ": statistics are exchanged between GPUs only (a CPU kernel cannot wait for the other devices)");
  }
}

void sync_cpu(const ExecContext&, const Invocation& inv) { batch_norm_loops(sync_params(inv).bn, inv); }
void sync_backward_cpu(const ExecContext&, const Invocation& inv) { backward_loops(sync_params(inv).bn, inv); }

std::vector<std::pair<std::string, std::string>> sync_attrs(const Params& params) {
  const auto& p = params.as<SyncBatchNormParams>();
  return {{"eps", format_real(p.bn.eps)},
          {"momentum", format_real(p.bn.momentum)},
          {"fix_gamma", format_bool(p.bn.fix_gamma)},
          {"use_global_stats", format_bool(p.bn.use_global_stats)},
          {"ndev", std::to_string(p.ndev)},
          {"key", p.key}};
}

SyncBatchNormParams sync_batch_norm_params(const nd::contrib::SyncBatchNormOptions& o, bool training) {
  const char* op = "_contrib_SyncBatchNorm";
  SyncBatchNormParams p;
  p.bn = batch_norm_params({.eps = o.eps, .momentum = o.momentum, .fix_gamma = o.fix_gamma,
                            .use_global_stats = o.use_global_stats, .axis = 1},
                           training, op);
  if (o.ndev < 1) throw ValueError(std::string(op) + ": ndev must be >= 1, got " + std::to_string(o.ndev));
  if (o.key.size() >= sizeof(p.key)) {
    throw ValueError(std::string(op) + ": key '" + o.key + "' is longer than " + std::to_string(sizeof(p.key) - 1) +
                     " characters");
  }
  p.ndev = o.ndev;
  std::copy(o.key.begin(), o.key.end(), p.key);
  return p;
}

// MXNet's attributes (defaults eps 1e-3, momentum 0.9, fix_gamma true, ndev 1, key ""):
// output_mean_var changes no result and is ignored.
Params sync_parse(const AttrList& attrs) {
  AttrReader a("_contrib_SyncBatchNorm", attrs);
  nd::contrib::SyncBatchNormOptions o;
  o.eps = a.real("eps", 1e-3);
  o.momentum = a.real("momentum", 0.9);
  o.fix_gamma = a.boolean("fix_gamma", true);
  o.use_global_stats = a.boolean("use_global_stats", false);
  o.ndev = static_cast<int>(a.integer("ndev", 1));
  o.key = a.text("key", "");
  a.ignore({"output_mean_var"});
  a.finish();
  return sync_batch_norm_params(o, !o.use_global_stats);
}

const OpDef& sync_backward_op() {
  static const OpDef def{"_backward_contrib_SyncBatchNorm", &backward_infer, &sync_backward_cpu,
                         NDG_GPU_KERNEL(gpu::sync_batch_norm_backward), nullptr, &sync_attrs, &sync_parse};
  static const OpDef& reg = register_op(def);
  return reg;
}

std::vector<NDArray> sync_gradient(const Invocation& inv, const std::vector<NDArray>& out_grads) {
  auto grads = invoke(sync_backward_op(),
                      {out_grads[0], inv.inputs[0], inv.inputs[1], inv.outputs[1], inv.outputs[2]}, inv.params);
  return {grads[0], grads[1], grads[2], NDArray(), NDArray()};
}

bool sync_mode(Params& params, bool training) {
  SyncBatchNormParams p = params.as<SyncBatchNormParams>();
  p.bn.training = training && !p.bn.use_global_stats;
  params = p;
  return true;
}

const OpDef& sync_batch_norm_op() {
  static const OpDef def = [] {
    OpDef d{"_contrib_SyncBatchNorm", &sync_infer, &sync_cpu, NDG_GPU_KERNEL(gpu::sync_batch_norm),
            &sync_gradient, &sync_attrs, &sync_parse, false, &sync_mode};
    d.written_inputs = 1u << 3 | 1u << 4;  // moving_mean, moving_var
    return d;
  }();
  static const OpDef& reg = register_op(def);
  return reg;
}

[[maybe_unused]] const bool batch_norm_family_registered = (batch_norm_op(), backward_op(), sync_batch_norm_op(), sync_backward_op(), true);

}  // namespace
}  // namespace mx::op

namespace mx::nd {

NDArray BatchNorm(const NDArray& data, const NDArray& gamma, const NDArray& beta, NDArray moving_mean,
                  NDArray moving_var, const BatchNormOptions& o) {
  const char* op = "BatchNorm";
  for (const NDArray* a : {&data, &gamma, &beta, static_cast<const NDArray*>(&moving_mean),
                           static_cast<const NDArray*>(&moving_var)}) {
    detail::check_not_none(op, *a);
  }
  const op::BatchNormParams p = op::batch_norm_params(o, autograd::is_training() && !o.use_global_stats);
  return op::invoke(op::batch_norm_op(), {data, gamma, beta, moving_mean, moving_var}, p)[0];
}

}  // namespace mx::nd

namespace mx::nd::contrib {

NDArray SyncBatchNorm(const NDArray& data, const NDArray& gamma, const NDArray& beta, NDArray moving_mean,
                      NDArray moving_var, const SyncBatchNormOptions& o) {
  const char* op = "_contrib_SyncBatchNorm";
  for (const NDArray* a : {&data, &gamma, &beta, static_cast<const NDArray*>(&moving_mean),
                           static_cast<const NDArray*>(&moving_var)}) {
    detail::check_not_none(op, *a);
  }
  const op::SyncBatchNormParams p = op::sync_batch_norm_params(o, autograd::is_training() && !o.use_global_stats);
  return op::invoke(op::sync_batch_norm_op(), {data, gamma, beta, moving_mean, moving_var}, p)[0];
}

}  // namespace mx::nd::contrib
