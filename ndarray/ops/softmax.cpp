// The softmax family: softmax and log_softmax along an axis, each one fused pass (max, sum of
// exponentials, result) instead of five elementwise and reduction ops, and their gradients
// _backward_softmax and _backward_log_softmax, one fused pass each (sum along the line, result)
// instead of four ops; and MXNet's loss head SoftmaxOutput (softmax along the last axis, whose
// gradient _backward_SoftmaxOutput is that of the cross entropy with its label). Here: the front
// ends, inference, gradients and the CPU loops; the CUDA launches are in cuda/ops/softmax.cu.
#include "ndarray/ops/softmax.hpp"

#include <cmath>

#include "ndarray/core/checks.hpp"
#include "ndarray/core/describe.hpp"
#include "ndarray/ops/attrs.hpp"
#include "ndarray/ops/parallel.hpp"
#include "ndarray/ops/reduce_kernels.hpp"
#include "ndarray/ops/softmax_kernels.hpp"

namespace mx::op {
namespace {

using nd::NDArray;


ComputeType<double> inverse_temperature(const SoftmaxParams& p) { return 1.0 / p.temperature; }

// The CPU reference: each (outer, inner) line (softmax_line).
void softmax_cpu(const ExecContext&, const Invocation& inv) {
  const auto& p = inv.params.as<SoftmaxParams>();
  const ReduceShape s = softmax_shape(inv);
  if (s.length == 0 || inv.outputs[0].size() == 0) return;
  const LineLengths lengths = line_lengths(inv, 1);
  const std::int64_t lines = s.outer * s.inner;
  dispatch_floating(inv.inputs[0].dtype(), inv.op->name, [&](auto tag) {
    using T = decltype(tag);
    const T* x = static_cast<const T*>(inv.inputs[0].data());
    T* y = static_cast<T*>(inv.outputs[0].data());
    const auto inv_t = static_cast<ComputeType<T>>(inverse_temperature(p));
    parallel_for(lines, [&](std::int64_t line) {
      softmax_line(x, y, s, line, line_length(lengths, line, s.length), p.log, inv_t);
    }, lines * s.length);
  });
}

// Data of shape S, and with use_length lengths of S without the axis ((1,) for 1-D data).
Shape lengths_shape(const Shape& data, int axis) {
  std::vector<std::int64_t> dims;
  for (int a = 0; a < data.ndim(); ++a) {
    if (a != axis) dims.push_back(data[a]);
  }
  return dims.empty() ? Shape{1} : Shape(dims);
}

void check_lengths(const Invocation& inv, const NDArray& data, std::size_t input) {
  const auto& p = inv.params.as<SoftmaxParams>();
  if (!(p.temperature > 0)) {
    throw ValueError(std::string(inv.op->name) + ": temperature must be positive, got " + format_real(p.temperature));
  }
  const bool given = inv.inputs.size() > input && !inv.inputs[input].is_none();
  if (!p.use_length) {
    if (given) throw ValueError(std::string(inv.op->name) + ": a length input needs use_length=True");
    return;
  }
  if (!given) throw ValueError(std::string(inv.op->name) + ": use_length=True needs a length input");
  const NDArray& length = inv.inputs[input];
  const Shape want = lengths_shape(data.shape(), normalize_axis(inv.op->name, p.axis, data.shape()));
  if (length.shape() != want) {
    throw ShapeError(std::string(inv.op->name) + ": length " + nd::describe(length) + " does not fit data " +
                     nd::describe(data) + "; expected " + want.tuple_str() + ", one length per line along axis " +
                     std::to_string(p.axis));
  }
}

void softmax_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray& x = inv.inputs[0];
  nd::check_floating(inv.op->name, x);
  normalize_axis(inv.op->name, inv.params.as<SoftmaxParams>().axis, x.shape());
  check_lengths(inv, x, 1);
  out = {{x.shape(), x.dtype()}};
}

// The backward ops' CPU reference: per (outer, inner) line, the sum of the terms, then dx.
void softmax_backward_cpu(const ExecContext&, const Invocation& inv) {
  const auto& p = inv.params.as<SoftmaxParams>();
  const ReduceShape s = softmax_shape(inv);
  if (inv.outputs[0].size() == 0) return;
  const LineLengths lengths = line_lengths(inv, 2);
  const std::int64_t lines = s.outer * s.inner;
  dispatch_floating(inv.inputs[0].dtype(), inv.op->name, [&](auto tag) {
    using T = decltype(tag);
    const T *g = static_cast<const T*>(inv.inputs[0].data()), *y = static_cast<const T*>(inv.inputs[1].data());
    T* dx = static_cast<T*>(inv.outputs[0].data());
    const auto inv_t = static_cast<ComputeType<T>>(inverse_temperature(p));
    parallel_for(lines, [&](std::int64_t line) {
      softmax_backward_line(g, y, dx, s, line, line_length(lengths, line, s.length), p.log, inv_t);
    }, lines * s.length);
  });
}

// _backward_softmax / _backward_log_softmax: inputs (g, y) and with use_length the lengths, output
// dx of y's shape and dtype.
void softmax_backward_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray &g = inv.inputs[0], &y = inv.inputs[1];
  nd::check_floating(inv.op->name, y);
  nd::check_same_dtype(inv.op->name, g, y);
  if (g.shape() != y.shape()) {
    throw ShapeError(std::string(inv.op->name) + ": output gradient " + nd::describe(g) + " does not match output " +
                     nd::describe(y));
  }
  normalize_axis(inv.op->name, inv.params.as<SoftmaxParams>().axis, y.shape());
  check_lengths(inv, y, 2);
  out = {{y.shape(), y.dtype()}};
}

std::vector<std::pair<std::string, std::string>> softmax_attrs(const Params& params) {
  const auto& p = params.as<SoftmaxParams>();
  std::vector<std::pair<std::string, std::string>> attrs{{"axis", std::to_string(p.axis)}};
  if (p.temperature != 1) attrs.emplace_back("temperature", format_real(p.temperature));
  if (p.use_length) attrs.emplace_back("use_length", format_bool(true));
  return attrs;
}

// MXNet's attributes: axis, temperature (None: 1), use_length (a second input of lengths). dtype
// (a result of another dtype than the input's) is refused.
template <bool log>
Params softmax_parse(const AttrList& attrs) {
  AttrReader a(log ? "log_softmax" : "softmax", attrs);
  SoftmaxParams p;
  p.axis = a.axis("axis", -1);
  p.log = log;
  p.temperature = a.real("temperature", 1.0);
  if (!(p.temperature > 0)) a.fail("temperature", "must be positive");
  p.use_length = a.boolean("use_length", false);
  if (!a.text("dtype", "").empty()) a.fail("dtype", "is not supported: the result has the input's dtype");
  a.finish();
  return p;
}

const OpDef& softmax_backward_def() {
  static const OpDef def{"_backward_softmax", &softmax_backward_infer, &softmax_backward_cpu,
                         NDG_GPU_KERNEL(gpu::softmax_backward), nullptr, &softmax_attrs, &softmax_parse<false>};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}
const OpDef& log_softmax_backward_def() {
  static const OpDef def{"_backward_log_softmax", &softmax_backward_infer, &softmax_backward_cpu,
                         NDG_GPU_KERNEL(gpu::softmax_backward), nullptr, &softmax_attrs, &softmax_parse<true>};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}

// One backward op on the recorded output: dx = (g - exp(y) * sum(g)) / t (log_softmax),
// y * (g - sum(g * y)) / t (softmax), sums along the axis over each line's length; the lengths
// get no gradient.
std::vector<NDArray> softmax_gradient(const Invocation& inv, const std::vector<NDArray>& g) {
  const auto& p = inv.params.as<SoftmaxParams>();
  const OpDef& backward = p.log ? log_softmax_backward_def() : softmax_backward_def();
  if (!p.use_length) return {invoke1(backward, {g[0], inv.outputs[0]}, p)};
  return {invoke1(backward, {g[0], inv.outputs[0], inv.inputs[1]}, p), NDArray()};
}

const OpDef& softmax_def() {
  static const OpDef def{"softmax", &softmax_infer, &softmax_cpu, NDG_GPU_KERNEL(gpu::softmax), &softmax_gradient,
                         &softmax_attrs, &softmax_parse<false>};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}
const OpDef& log_softmax_def() {
  static const OpDef def{"log_softmax", &softmax_infer, &softmax_cpu, NDG_GPU_KERNEL(gpu::softmax),
                         &softmax_gradient, &softmax_attrs, &softmax_parse<true>};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}

// --- SoftmaxOutput ---------------------------------------------------------------------------------

const SoftmaxOutputParams& softmax_output_params(const Invocation& inv) { return inv.params.as<SoftmaxOutputParams>(); }

// The label shape that fits data: its leading axes, one class index per row.
Shape label_shape_of(const Shape& data) { return Shape(std::vector<std::int64_t>(data.begin(), data.end() - 1)); }

void check_label(const char* op, const NDArray& data, const NDArray& label) {
  nd::check_same_dtype(op, data, label);
  if (label.shape() != label_shape_of(data.shape())) {
    throw ShapeError(std::string(op) + ": label " + nd::describe(label) + " does not fit data " + nd::describe(data) +
                     "; expected " + label_shape_of(data.shape()).tuple_str() + ", one class index per row");
  }
}

void softmax_output_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const char* op = "SoftmaxOutput";
  const NDArray& x = inv.inputs[0];
  nd::check_floating(op, x);
  if (x.ndim() < 2 || (!softmax_output_params(inv).preserve_shape && x.ndim() != 2)) {
    throw ShapeError(std::string(op) + ": data must be (batch, classes), or (..., classes) with preserve_shape, got " +
                     nd::describe(x));
  }
  if (inv.inputs.size() > 1 && !inv.inputs[1].is_none()) check_label(op, x, inv.inputs[1]);
  out = {{x.shape(), x.dtype()}};
}

void softmax_output_cpu(const ExecContext& ec, const Invocation& inv) { softmax_cpu(ec, as_last_axis_softmax(inv)); }
#ifdef NDG_HAVE_CUDA
void softmax_output_gpu(const ExecContext& ec, const Invocation& inv) { gpu::softmax(ec, as_last_axis_softmax(inv)); }
#endif

// _backward_SoftmaxOutput: inputs (output, label), output d data of the output's shape.
void softmax_output_backward_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const char* op = "_backward_SoftmaxOutput";
  const NDArray &y = inv.inputs[0], &label = inv.inputs[1];
  nd::check_floating(op, y);
  if (y.ndim() < 1) throw ShapeError(std::string(op) + ": output " + nd::describe(y) + " has no class axis");
  if (label.is_none()) throw ValueError(std::string(op) + ": the gradient of SoftmaxOutput needs its label");
  check_label(op, y, label);
  out = {{y.shape(), y.dtype()}};
}

// The normaliser's reciprocal times grad_scale, the count of valid labels taken on the host.
template <class T>
double softmax_output_scale(const SoftmaxOutputParams& p, const T* label, std::int64_t rows) {
  switch (p.normalization) {
    case SoftmaxNormalization::null: return p.grad_scale;
    case SoftmaxNormalization::batch: return p.grad_scale / static_cast<double>(rows);
    case SoftmaxNormalization::valid: break;
  }
  const std::int64_t ignore = label_class(p.ignore_label);
  std::int64_t valid = 0;
  for (std::int64_t r = 0; r < rows; ++r) valid += label_class(label[r]) != ignore;
  return p.grad_scale / static_cast<double>(valid > 0 ? valid : 1);
}

void softmax_output_backward_cpu(const ExecContext&, const Invocation& inv) {
  const SoftmaxOutputParams& p = softmax_output_params(inv);
  const NDArray &y = inv.inputs[0], &dx = inv.outputs[0];
  const std::int64_t rows = inv.inputs[1].size(), classes = rows > 0 ? y.size() / rows : 0;
  if (dx.size() == 0) return;
  dispatch_floating(y.dtype(), inv.op->name, [&](auto tag) {
    using T = decltype(tag);
    const T* out = static_cast<const T*>(y.data());
    const T* label = static_cast<const T*>(inv.inputs[1].data());
    T* grad = static_cast<T*>(dx.data());
    const auto scale = static_cast<ComputeType<T>>(softmax_output_scale(p, label, rows));
    const std::int64_t ignore = label_class(p.ignore_label);
    parallel_for(rows, [&](std::int64_t r) {
      const std::int64_t cls = label_class(label[r]);
      const bool ignored = p.use_ignore && cls == ignore;
      for (std::int64_t k = 0; k < classes; ++k) {
        grad[r * classes + k] = softmax_output_grad_element(out[r * classes + k], k, cls, ignored, scale);
      }
    }, rows * classes);
  });
}

std::vector<std::pair<std::string, std::string>> softmax_output_attrs(const Params& params) {
  const auto& p = params.as<SoftmaxOutputParams>();
  const char* normalization = p.normalization == SoftmaxNormalization::batch   ? "batch"
                              : p.normalization == SoftmaxNormalization::valid ? "valid"
                                                                               : "null";
  return {{"grad_scale", format_real(p.grad_scale)},   {"ignore_label", format_real(p.ignore_label)},
          {"multi_output", format_bool(false)},         {"use_ignore", format_bool(p.use_ignore)},
          {"preserve_shape", format_bool(p.preserve_shape)}, {"normalization", normalization}};
}

// mx::ValueError naming SoftmaxOutput for multi_output or an unknown normalization.
SoftmaxOutputParams softmax_output_params(double grad_scale, double ignore_label, bool multi_output, bool use_ignore,
                                          bool preserve_shape, const std::string& normalization) {
  if (multi_output) {
    throw ValueError("SoftmaxOutput: multi_output=True is not supported: ndgluon computes the softmax along the last "
                     "axis (multi_output=False; preserve_shape=True for more than 2 axes)");
  }
  SoftmaxOutputParams p{grad_scale, ignore_label, use_ignore, preserve_shape, SoftmaxNormalization::null};
  if (normalization == "batch") p.normalization = SoftmaxNormalization::batch;
  else if (normalization == "valid") p.normalization = SoftmaxNormalization::valid;
  else if (normalization != "null") {
    throw ValueError("SoftmaxOutput: unknown normalization \"" + normalization +
                     "\"; valid: \"null\", \"batch\", \"valid\"");
  }
  return p;
}

// MXNet's attributes. multi_output (the softmax along axis 1), out_grad (the head gradient
// multiplied in) and smooth_alpha (label smoothing) other than their defaults are refused.
Params softmax_output_parse(const AttrList& attrs) {
  AttrReader a("SoftmaxOutput", attrs);
  const double grad_scale = a.real("grad_scale", 1.0), ignore_label = a.real("ignore_label", -1.0);
  if (a.boolean("multi_output", false)) {
    a.fail("multi_output", "is not supported: ndgluon computes SoftmaxOutput's softmax along the last axis");
  }
  const bool use_ignore = a.boolean("use_ignore", false), preserve_shape = a.boolean("preserve_shape", false);
  const std::string normalization = a.choice("normalization", "null", {"null", "batch", "valid"});
  if (a.boolean("out_grad", false)) a.fail("out_grad", "is not supported: the gradient ignores the head gradient");
  if (a.real("smooth_alpha", 0.0) != 0.0) a.fail("smooth_alpha", "is not supported: ndgluon has no label smoothing");
  a.finish();
  return softmax_output_params(grad_scale, ignore_label, false, use_ignore, preserve_shape, normalization);
}

const OpDef& softmax_output_backward_def() {
  static const OpDef def{"_backward_SoftmaxOutput", &softmax_output_backward_infer, &softmax_output_backward_cpu,
                         NDG_GPU_KERNEL(gpu::softmax_output_backward), nullptr, &softmax_output_attrs,
                         &softmax_output_parse};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}

// The cross entropy's gradient with the label, the head gradient ignored; without a label, the
// gradient of the softmax (a model whose label graph::drop_labels dropped, trained with another loss).
std::vector<NDArray> softmax_output_gradient(const Invocation& inv, const std::vector<NDArray>& g) {
  const NDArray& label = inv.inputs.size() > 1 ? inv.inputs[1] : NDArray();
  if (label.is_none()) return {invoke1(softmax_backward_def(), {g[0], inv.outputs[0]}, SoftmaxParams{-1, false}), NDArray()};
  return {invoke1(softmax_output_backward_def(), {inv.outputs[0], label}, inv.params), NDArray()};
}

const OpDef& softmax_output_def() {
  static const OpDef def{"SoftmaxOutput", &softmax_output_infer, &softmax_output_cpu,
                         NDG_GPU_KERNEL(softmax_output_gpu), &softmax_output_gradient, &softmax_output_attrs,
                         &softmax_output_parse, false, nullptr, /*arity=*/2};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}

[[maybe_unused]] const bool softmax_family_registered =
    (softmax_def(), log_softmax_def(), softmax_backward_def(), log_softmax_backward_def(), softmax_output_def(),
     softmax_output_backward_def(), true);

}  // namespace

LineLengths line_lengths(const Invocation& inv, std::size_t input) {
  if (!inv.params.as<SoftmaxParams>().use_length) return {};
  return {inv.inputs[input].data(), inv.inputs[input].dtype()};
}

ReduceShape softmax_shape(const Invocation& inv) {
  const Shape& shape = inv.inputs[0].shape();
  return around_axis(shape, normalize_axis(inv.op->name, inv.params.as<SoftmaxParams>().axis, shape));
}

}  // namespace mx::op

namespace mx::nd {

NDArray softmax(const NDArray& x, int axis, double temperature) {
  check_not_none("softmax", x);
  return op::invoke1(op::softmax_def(), {x}, op::SoftmaxParams{axis, false, false, temperature});
}

NDArray log_softmax(const NDArray& x, int axis, double temperature) {
  check_not_none("log_softmax", x);
  return op::invoke1(op::log_softmax_def(), {x}, op::SoftmaxParams{axis, true, false, temperature});
}

NDArray softmax(const NDArray& x, const NDArray& length, int axis, double temperature) {
  check_not_none("softmax", x);
  check_not_none("softmax", length);
  return op::invoke1(op::softmax_def(), {x, length}, op::SoftmaxParams{axis, false, true, temperature});
}

NDArray log_softmax(const NDArray& x, const NDArray& length, int axis, double temperature) {
  check_not_none("log_softmax", x);
  check_not_none("log_softmax", length);
  return op::invoke1(op::log_softmax_def(), {x, length}, op::SoftmaxParams{axis, true, true, temperature});
}

NDArray SoftmaxOutput(const NDArray& data, const NDArray& label, const SoftmaxOutputOptions& options) {
  check_not_none("SoftmaxOutput", data);
  const op::SoftmaxOutputParams p =
      op::softmax_output_params(options.grad_scale, options.ignore_label, options.multi_output, options.use_ignore,
                                options.preserve_shape, options.normalization);
  return op::invoke1(op::softmax_output_def(), {data, label}, p);
}

}  // namespace mx::nd
