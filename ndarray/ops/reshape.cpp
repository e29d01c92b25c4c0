// Reshape and Flatten as registered ops, for graphs: an NDArray's reshape is a view and runs no op,
// but a traced or imported graph (MXNet's symbol JSON) names them as ops. Each copies its input
// into the new shape. Shape codes as MXNet's Reshape: 0 keeps the input's extent at that place, -1
// is inferred from the others.
#include "ndarray/ops/reshape_kernels.hpp"

#include <algorithm>

#include "ndarray/backend/backend.hpp"
#include "ndarray/core/checks.hpp"
#include "ndarray/core/describe.hpp"
#include "ndarray/core/strided_index.hpp"
#include "ndarray/ops/attrs.hpp"

namespace mx::op {
namespace {

using nd::NDArray;

void reshape_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray& x = inv.inputs[0];
  out = {{reshaped(inv.op->name, inv.params.as<ReshapeParams>(), x.shape()), x.dtype()}};
}

void flatten_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray& x = inv.inputs[0];
  if (x.ndim() < 1) throw ShapeError("Flatten: needs an axis to keep, got " + nd::describe(x));
  const std::int64_t batch = x.shape()[0];
  out = {{Shape{batch, batch ? x.size() / batch : 0}, x.dtype()}};
}

// broadcast_to's output shape: the attribute's, 0 taking the input's extent.
Shape broadcast_target(const ReshapeParams& p, const Shape& in) {
  std::vector<std::int64_t> dims(p.shape, p.shape + p.ndim);
  for (int d = 0; d < p.ndim && d < in.ndim(); ++d) {
    if (dims[static_cast<std::size_t>(d)] == 0) dims[static_cast<std::size_t>(d)] = in[d];
  }
  return Shape(dims);
}

void broadcast_to_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray& x = inv.inputs[0];
  const Shape shape = broadcast_target(inv.params.as<ReshapeParams>(), x.shape());
  // As MXNet's: the same rank, each extent kept or repeated from 1.
  if (shape.ndim() != x.ndim() || broadcast_shapes("broadcast_to", x.shape(), shape) != shape) {
    throw ShapeError("broadcast_to: " + nd::describe(x) + " cannot be broadcast to " + shape.tuple_str() +
                     " (the same number of axes, each extent kept or repeated from 1)");
  }
  out = {{shape, x.dtype()}};
}

// Both devices: the input read through strides of 0 on its repeated axes.
void broadcast_to_kernel(const ExecContext& ec, const Invocation& inv) {
  const NDArray &x = inv.inputs[0], &y = inv.outputs[0];
  if (y.size() == 0) return;
  const Shape &in = x.shape(), &out = y.shape();
  std::vector<std::int64_t> strides(static_cast<std::size_t>(out.ndim()), 0);
  std::int64_t step = 1;
  for (int d = in.ndim() - 1; d >= 0; --d) {
    if (in[d] != 1) strides[static_cast<std::size_t>(d + out.ndim() - in.ndim())] = step;
    step *= in[d];
  }
  backend(ec.ctx).gather(ec.ctx, y.dtype(), make_view_index("broadcast_to", out, strides), x.data(), y.data());
}

std::vector<NDArray> broadcast_to_gradient(const Invocation& inv, const std::vector<NDArray>& g) {
  return {nd::detail::sum_to(g[0], inv.inputs[0].shape())};
}

Params broadcast_to_parse(const AttrList& attrs) {
  AttrReader a("broadcast_to", attrs);
  const std::vector<std::int64_t> shape = a.tuple("shape", {});
  if (shape.size() > ReshapeParams::kMaxDims) a.fail("shape", "has too many axes for ndgluon's broadcast_to");
  if (std::any_of(shape.begin(), shape.end(), [](std::int64_t d) { return d < 0; })) {
    a.fail("shape", "has a negative extent");
  }
  a.finish();
  ReshapeParams p;
  p.ndim = static_cast<std::int32_t>(shape.size());
  std::copy(shape.begin(), shape.end(), p.shape);
  return p;
}

// The gradient has the output's elements in the input's shape.
std::vector<NDArray> reshape_gradient(const Invocation& inv, const std::vector<NDArray>& g) {
  return {invoke1(reshape_op(), {g[0]}, ReshapeParams::of(inv.inputs[0].shape()))};
}

std::vector<std::pair<std::string, std::string>> reshape_attrs(const Params& params) {
  const auto& p = params.as<ReshapeParams>();
  std::string t = "(";
  for (int i = 0; i < p.ndim; ++i) t += (i ? ", " : "") + std::to_string(p.shape[i]);
  return {{"shape", t + (p.ndim == 1 ? ",)" : ")")}};
}

// MXNet's attributes: shape, with the codes 0 and -1 (-2, -3, -4 and reverse are refused);
// target_shape and keep_highest, deprecated in MXNet, are refused unless unset.
Params reshape_parse(const AttrList& attrs) {
  AttrReader a("Reshape", attrs);
  const std::vector<std::int64_t> shape = a.tuple("shape", {});
  if (shape.size() > ReshapeParams::kMaxDims) a.fail("shape", "has too many axes for ndgluon's Reshape");
  if (std::any_of(shape.begin(), shape.end(), [](std::int64_t d) { return d < -1; })) {
    a.fail("shape", "is not supported: ndgluon's shape codes are 0 and -1");
  }
  if (a.boolean("reverse", false)) a.fail("reverse", "is not supported");
  if (!a.tuple("target_shape", {}).empty()) a.fail("target_shape", "(deprecated in MXNet) is not supported: give shape");
  if (a.boolean("keep_highest", false)) a.fail("keep_highest", "(deprecated in MXNet) is not supported");
  a.finish();
  ReshapeParams p;
  p.ndim = static_cast<std::int32_t>(shape.size());
  std::copy(shape.begin(), shape.end(), p.shape);
  return p;
}

[[maybe_unused]] const bool reshape_family_registered = (reshape_op(), flatten_op(), broadcast_to_op(), true);

}  // namespace

void reshape_copy_kernel(const ExecContext& ec, const Invocation& inv) {
  const NDArray &x = inv.inputs[0], &y = inv.outputs[0];
  if (y.size() > 0) backend(ec.ctx).copy(ec.ctx, y.data(), x.data(), static_cast<std::size_t>(y.size()) * dtype_size(y.dtype()));
}

ReshapeParams ReshapeParams::of(const Shape& shape) {
  if (shape.ndim() > kMaxDims) {
    throw ValueError("Reshape: at most " + std::to_string(kMaxDims) + " axes, got " + shape.tuple_str());
  }
  ReshapeParams p;
  p.ndim = shape.ndim();
  for (int i = 0; i < p.ndim; ++i) p.shape[i] = shape[i];
  return p;
}

Shape reshaped(const char* op, const ReshapeParams& p, const Shape& in) {
  std::vector<std::int64_t> dims;
  int infer_at = -1;
  std::int64_t known = 1;
  for (int i = 0; i < p.ndim; ++i) {
    std::int64_t d = p.shape[i];
    if (d == 0) {
      if (i >= in.ndim()) throw ShapeError(std::string(op) + ": shape code 0 at axis " + std::to_string(i) + " but the input " + in.tuple_str() + " has no such axis");
      d = in[i];
    } else if (d == -1) {
      if (infer_at >= 0) throw ValueError(std::string(op) + ": more than one -1 in the shape");
      infer_at = i;
      dims.push_back(1);
      continue;
    } else if (d < 0) {
      throw ValueError(std::string(op) + ": shape code " + std::to_string(d) + " (only 0 and -1 are supported)");
    }
    known *= d;
    dims.push_back(d);
  }
  if (infer_at >= 0) {
    if (known == 0 || in.numel() % known != 0) {
      throw ShapeError(std::string(op) + ": cannot infer the -1 extent of the new shape for input " + in.tuple_str());
    }
    dims[static_cast<std::size_t>(infer_at)] = in.numel() / known;
  }
  Shape out(dims);
  if (out.numel() != in.numel()) {
    throw ShapeError(std::string(op) + ": input " + in.tuple_str() + " has " + std::to_string(in.numel()) +
                     " elements, the new shape " + out.tuple_str() + " " + std::to_string(out.numel()));
  }
  return out;
}

const OpDef& reshape_op() {
  static const OpDef def{"Reshape", &reshape_infer, &reshape_copy_kernel, NDG_GPU_KERNEL(reshape_copy_kernel), &reshape_gradient,
                         &reshape_attrs, &reshape_parse};
  static const OpDef& reg = register_op(def);
  return reg;
}

const OpDef& flatten_op() {
  static const OpDef def{"Flatten", &flatten_infer, &reshape_copy_kernel, NDG_GPU_KERNEL(reshape_copy_kernel), &reshape_gradient};
  static const OpDef& reg = register_op(def);
  return reg;
}

const OpDef& broadcast_to_op() {
  static const OpDef def{"broadcast_to", &broadcast_to_infer, &broadcast_to_kernel, NDG_GPU_KERNEL(broadcast_to_kernel),
                         &broadcast_to_gradient, &reshape_attrs, &broadcast_to_parse};
  static const OpDef& reg = register_op(def);
  return reg;
}

}  // namespace mx::op
