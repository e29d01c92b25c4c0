// The creation family: _full (fill, zeros, ones), _arange and _copy as registered ops, and the
// front ends that make arrays. Here: the ops and their CPU loops; the GPU launches are in
// cuda/ops/creation.cu. _copy's kernel serves every device through the backend's copies.
#include "ndarray/ops/creation.hpp"

#include <algorithm>
#include <cmath>

#include "ndarray/backend/backend.hpp"
#include "ndarray/core/checks.hpp"
#include "ndarray/core/contiguous.hpp"
#include "ndarray/ops/attrs.hpp"
#include "ndarray/ops/creation_kernels.hpp"
#include "ndarray/ops/parallel.hpp"

namespace mx::op {
namespace {

using nd::NDArray;


// Ops without inputs write arrays that the caller made: the output is what it is.
void output_as_given(const Invocation& inv, std::vector<OutputSpec>& out) {
  out = {{inv.outputs.at(0).shape(), inv.outputs[0].dtype()}};
}

// _full: the output as given, else as its params say.
void fill_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  if (!inv.outputs.empty()) return output_as_given(inv, out);
  const auto& p = inv.params.as<FillParams>();
  if (p.ndim < 0) throw ValueError("_full: the output's shape is not known (neither given nor an attribute)");
  out = {{Shape(std::vector<std::int64_t>(p.dims, p.dims + p.ndim)), p.dtype}};
}

void fill_cpu(const ExecContext&, const Invocation& inv) {
  const NDArray& y = inv.outputs[0];
  const std::int64_t n = y.size();
  dispatch_dtype(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* out = static_cast<T*>(y.data());
    const T v = static_cast<T>(inv.params.as<FillParams>().value);
    parallel_for_simd(n, [&](std::int64_t i) { out[i] = v; });
  });
}

void arange_cpu(const ExecContext&, const Invocation& inv) {
  const NDArray& y = inv.outputs[0];
  const auto& p = inv.params.as<ArangeParams>();
  const std::int64_t n = y.size();
  dispatch_dtype(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* out = static_cast<T*>(y.data());
    parallel_for_simd(n, [&](std::int64_t i) { out[i] = static_cast<T>(p.start + static_cast<double>(i) * p.step); });
  });
}

void copy_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  out = {{inv.inputs[0].shape(), inv.inputs[0].dtype()}};
}

// A contiguous input in one copy, a strided one in one gather (the op takes strided inputs).
void copy_kernel(const ExecContext& ec, const Invocation& inv) {
  const NDArray &x = inv.inputs[0], &y = inv.outputs[0];
  if (y.size() == 0) return;
  Backend& b = backend(ec.ctx);
  if (x.is_contiguous()) b.copy(ec.ctx, y.data(), x.data(), static_cast<std::size_t>(y.size()) * dtype_size(y.dtype()));
  else b.gather(ec.ctx, x.dtype(), nd::detail::view_index("_copy", x), x.data(), y.data());
}

std::vector<NDArray> copy_gradient(const Invocation&, const std::vector<NDArray>& g) { return {g[0]}; }

std::vector<std::pair<std::string, std::string>> fill_attrs(const Params& params) {
  const auto& p = params.as<FillParams>();
  std::vector<std::pair<std::string, std::string>> attrs{{"value", format_real(p.value)}};
  if (p.ndim >= 0) {
    attrs.emplace_back("shape", Shape(std::vector<std::int64_t>(p.dims, p.dims + p.ndim)).tuple_str());
    attrs.emplace_back("dtype", dtype_name(p.dtype));
  }
  return attrs;
}
// MXNet's stop (start + length · step) and dtype where the length is known.
std::vector<std::pair<std::string, std::string>> arange_attrs(const Params& params) {
  const auto& p = params.as<ArangeParams>();
  std::vector<std::pair<std::string, std::string>> a{{"start", format_real(p.start)}, {"step", format_real(p.step)}};
  if (p.length >= 0) {
    a.emplace_back("stop", format_real(p.start + static_cast<double>(p.length) * p.step));
    a.emplace_back("dtype", dtype_name(p.dtype));
  }
  return a;
}

// The output as given, else as the length and dtype say.
void arange_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  if (!inv.outputs.empty()) return output_as_given(inv, out);
  const auto& p = inv.params.as<ArangeParams>();
  if (p.length < 0) throw ValueError("_arange: the output's length is not known (neither given nor a stop attribute)");
  out = {{Shape{p.length}, p.dtype}};
}

// MXNet's attributes, with those of the output (read_output_attrs).
Params fill_parse(const AttrList& attrs) {
  AttrReader a("_full", attrs);
  const double value = a.real("value");
  const std::vector<std::int64_t> shape = a.tuple("shape", {});
  const bool has_shape = std::any_of(attrs.begin(), attrs.end(), [](const auto& kv) { return kv.first == "shape"; });
  const DType dtype = a.text("dtype", "None") != "None" ? a.dtype("dtype") : DType::float32;
  a.ignore({"ctx"});
  a.finish();
  return has_shape ? fill_params(value, Shape(shape), dtype) : FillParams{value};
}

// stop gives the length, ceil((stop - start) / step) as MXNet's (a given output's length wins);
// infer_range is ignored. repeat other than 1 is refused.
Params arange_parse(const AttrList& attrs) {
  AttrReader a("_arange", attrs);
  ArangeParams p{a.real("start"), a.real("step", 1.0)};
  if (a.integer("repeat", 1) != 1) a.fail("repeat", "is not supported: each value once");
  if (a.text("stop", "None") != "None" && p.step != 0) {
    const double count = std::ceil((a.real("stop") - p.start) / p.step - 1e-9);
    p.length = count > 0 ? static_cast<std::int64_t>(count) : 0;
  }
  if (a.text("dtype", "None") != "None") p.dtype = a.dtype("dtype");
  a.ignore({"infer_range", "shape", "ctx"});
  a.finish();
  return p;
}

[[maybe_unused]] const bool creation_family_registered = (full_op(), arange_op(), copy_op(), true);

}  // namespace

FillParams fill_params(double value, const Shape& shape, DType dtype) {
  FillParams p{value};
  if (shape.ndim() > 8) return p;  // not carried: the output as given only
  p.ndim = shape.ndim();
  p.dtype = dtype;
  for (int i = 0; i < shape.ndim(); ++i) p.dims[i] = shape[i];
  return p;
}

const OpDef& full_op() {
  static const OpDef def{"_full", &fill_infer, &fill_cpu, NDG_GPU_KERNEL(gpu::fill), nullptr, &fill_attrs,
                         &fill_parse};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}
const OpDef& arange_op() {
  static const OpDef def{"_arange", &arange_infer, &arange_cpu, NDG_GPU_KERNEL(gpu::arange), nullptr, &arange_attrs,
                         &arange_parse};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}
namespace {

void zeros_like_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  out = {{inv.inputs[0].shape(), inv.inputs[0].dtype()}};
}
// The fill kernels with value 0 on zeros_like's output.
void zeros_like_cpu(const ExecContext& ec, const Invocation& inv) {
  fill_cpu(ec, Invocation{&full_op(), FillParams{0.0}, {}, inv.outputs});
}
// The GPU fill launch; null in a CPU-only build, where zeros_like registers no GPU kernel.
constexpr KernelFn kGpuFill = NDG_GPU_KERNEL(gpu::fill);
[[maybe_unused]] void zeros_like_gpu(const ExecContext& ec, const Invocation& inv) {
  kGpuFill(ec, Invocation{&full_op(), FillParams{0.0}, {}, inv.outputs});
}

}  // namespace

// No gradient function: its input gets zero (Note [zero gradients]).
const OpDef& zeros_like_op() {
  static const OpDef def{"zeros_like", &zeros_like_infer, &zeros_like_cpu, NDG_GPU_KERNEL(zeros_like_gpu), nullptr};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}
[[maybe_unused]] const bool zeros_like_registered = (zeros_like_op(), true);

const OpDef& copy_op() {
  static const OpDef def{"_copy", &copy_infer, &copy_kernel, NDG_GPU_KERNEL(copy_kernel), &copy_gradient, nullptr,
                         nullptr, /*strided_inputs=*/true};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}

}  // namespace mx::op

namespace mx::nd {

namespace {

NDArray filled(const char* op, const Shape& shape, double value, Context ctx, DType dtype) {
  detail::check_shape(op, shape, dtype);
  NDArray out(shape, ctx, dtype);
  out.fill(value);
  return out;
}

}  // namespace

NDArray empty(const Shape& shape, Context ctx, DType dtype) {
  detail::check_shape("empty", shape, dtype);
  return NDArray(shape, ctx, dtype);
}

NDArray full(const Shape& shape, double value, Context ctx, DType dtype) { return filled("full", shape, value, ctx, dtype); }
NDArray zeros(const Shape& shape, Context ctx, DType dtype) { return filled("zeros", shape, 0.0, ctx, dtype); }
NDArray ones(const Shape& shape, Context ctx, DType dtype) { return filled("ones", shape, 1.0, ctx, dtype); }
NDArray zeros_like(const NDArray& x) { return zeros(x.shape(), x.context(), x.dtype()); }
NDArray ones_like(const NDArray& x) { return ones(x.shape(), x.context(), x.dtype()); }

NDArray array(const void* data, DType data_dtype, const Shape& shape, Context ctx, DType dtype) {
  NDArray staged(shape, cpu(0), data_dtype);
  copy_across(cpu(0), staged.data(), cpu(0), data,
              static_cast<std::size_t>(shape.numel()) * dtype_size(data_dtype));
  if (data_dtype != dtype) staged = staged.astype(dtype);
  return staged.as_in_context(ctx);
}

NDArray arange(double start, double stop, double step, Context ctx, DType dtype) {
  if (step == 0.0) throw ValueError("arange: step must not be 0");
  const double count = std::ceil((stop - start) / step);
  const std::int64_t n = count > 0 ? static_cast<std::int64_t>(count) : 0;
  // Made where it lives: no host copy, so ops that need one (one_hot) never wait for the device.
  NDArray out({n}, ctx, dtype);
  op::invoke_into(op::arange_op(), {}, {out}, op::ArangeParams{start, step, n, dtype});
  return out;
}

NDArray arange(double stop, Context ctx, DType dtype) { return arange(0.0, stop, 1.0, ctx, dtype); }

NDArray array(std::initializer_list<Scalar> values, Context ctx, DType dtype) {
  std::vector<double> data;
  for (Scalar v : values) data.push_back(v.value);
  return array(data, {static_cast<std::int64_t>(data.size())}, ctx, dtype);
}

NDArray array(std::initializer_list<std::initializer_list<double>> rows, Context ctx, DType dtype) {
  const std::size_t cols = rows.size() ? rows.begin()->size() : 0;
  std::vector<double> values;
  for (const auto& row : rows) {
    if (row.size() != cols) {
      throw ShapeError("array: ragged nested list: row " + std::to_string(values.size() / std::max<std::size_t>(cols, 1)) +
                       " has " + std::to_string(row.size()) + " values, the first row has " +
                       std::to_string(cols));
    }
    values.insert(values.end(), row.begin(), row.end());
  }
  return array(values, {static_cast<std::int64_t>(rows.size()), static_cast<std::int64_t>(cols)}, ctx, dtype);
}

}  // namespace mx::nd
