// The image family: _contrib_BilinearResize2D and its backward op. Here: the front end,
// inference, gradient and CPU loops; the CUDA launches are in cuda/ops/image.cu. Both run the
// element functions of ndarray/ops/image_kernels.hpp.
#include "ndarray/ops/image.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "ndarray/core/checks.hpp"
#include "ndarray/ops/attrs.hpp"
#include "ndarray/ops/image_kernels.hpp"
#include "ndarray/ops/parallel.hpp"

namespace mx::op {
namespace {

using nd::NDArray;

constexpr const char* kResize = "_contrib_BilinearResize2D";

const BilinearResizeParams& resize_params(const Invocation& inv) { return inv.params.as<BilinearResizeParams>(); }

void resize_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray& x = inv.inputs[0];
  nd::check_floating(kResize, x);
  if (x.ndim() != 4) {
    throw ShapeError(std::string(kResize) + ": data must be (batch, channels, height, width), got " + nd::describe(x));
  }
  const ResizeGeometry g = resize_geometry(resize_params(inv), x.shape());
  if (g.out_h < 1 || g.out_w < 1) {
    throw ShapeError(std::string(kResize) + ": the output of " + nd::describe(x) + " would be " + std::to_string(g.out_h) +
                     " x " + std::to_string(g.out_w));
  }
  out = {{Shape{x.shape()[0], x.shape()[1], g.out_h, g.out_w}, x.dtype()}};
}

void resize_cpu(const ExecContext&, const Invocation& inv) {
  const NDArray &x = inv.inputs[0], &y = inv.outputs[0];
  const ResizeGeometry g = resize_geometry(resize_params(inv), x.shape());
  dispatch_floating(x.dtype(), kResize, [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(x.data());
    T* out = static_cast<T*>(y.data());
    parallel_for(y.size(), [&](std::int64_t i) { out[i] = resize_element(g, in, i); }, y.size() * 8);
  });
}

// _backward_contrib_BilinearResize2D: input dy, output dx (the data's shape: kept in the params'
// geometry through the invocation's second input, the data itself).
void backward_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  out = {{inv.inputs[1].shape(), inv.inputs[1].dtype()}};
}

// Each plane's outputs scatter into that plane alone: a thread per plane, no atomics.
void backward_cpu(const ExecContext&, const Invocation& inv) {
  const NDArray &dy = inv.inputs[0], &x = inv.inputs[1], &dx = inv.outputs[0];
  const ResizeGeometry g = resize_geometry(resize_params(inv), x.shape());
  dispatch_floating(x.dtype(), kResize, [&](auto tag) {
    using T = decltype(tag);
    using A = ComputeType<T>;
    const T* grad = static_cast<const T*>(dy.data());
    T* out = static_cast<T*>(dx.data());
    const std::int64_t plane_in = g.in_h * g.in_w, plane_out = g.out_h * g.out_w;
    parallel_for(g.planes, [&](std::int64_t plane) {
      std::vector<A> acc(static_cast<std::size_t>(plane_in), A(0));
      const std::int64_t base = plane * plane_in;
      for (std::int64_t i = plane * plane_out; i < (plane + 1) * plane_out; ++i) {
        resize_scatter<A>(g, i, static_cast<A>(grad[i]),
                          [&](std::int64_t j, A v) { acc[static_cast<std::size_t>(j - base)] += v; });
      }
      for (std::int64_t j = 0; j < plane_in; ++j) out[base + j] = static_cast<T>(acc[static_cast<std::size_t>(j)]);
    }, g.planes * (plane_in + 4 * plane_out));
  });
}

std::vector<std::pair<std::string, std::string>> resize_attrs(const Params& params) {
  const auto& p = params.as<BilinearResizeParams>();
  std::vector<std::pair<std::string, std::string>> attrs{{"height", std::to_string(p.height)},
                                                        {"width", std::to_string(p.width)}};
  if (p.scale_height > 0) attrs.emplace_back("scale_height", format_real(p.scale_height));
  if (p.scale_width > 0) attrs.emplace_back("scale_width", format_real(p.scale_width));
  attrs.emplace_back("mode", "size");
  attrs.emplace_back("align_corners", format_bool(p.align_corners));
  return attrs;
}

// The options checked (mx::ValueError naming the op): extents >= 1, scales > 0 where given.
BilinearResizeParams checked_params(const nd::contrib::BilinearResizeOptions& o) {
  const auto bad = [](const std::string& what) { return ValueError(std::string(kResize) + ": " + what); };
  if (o.height < 1 || o.width < 1) {
    throw bad("height and width must be >= 1, got " + std::to_string(o.height) + " and " + std::to_string(o.width));
  }
  for (const double scale : {o.scale_height, o.scale_width}) {
    if (!(scale >= 0) || !std::isfinite(scale)) throw bad("scale_height and scale_width must be > 0 where given");
  }
  return {o.height, o.width, o.scale_height, o.scale_width, o.align_corners};
}

// MXNet's attributes. Mode "size" only: the others ("like", "odd_scale", "to_even_down", ...)
// derive the extents otherwise and are refused by name.
Params resize_parse(const AttrList& attrs) {
  AttrReader a(kResize, attrs);
  nd::contrib::BilinearResizeOptions o;
  o.height = a.integer("height", 1);
  o.width = a.integer("width", 1);
  o.scale_height = a.real("scale_height", 0);  // None: not given
  o.scale_width = a.real("scale_width", 0);
  a.choice("mode", "size", {"size"});
  o.align_corners = a.boolean("align_corners", true);
  a.finish();
  return checked_params(o);
}

const OpDef& backward_op() {
  static const OpDef def{"_backward_contrib_BilinearResize2D", &backward_infer, &backward_cpu,
                         NDG_GPU_KERNEL(gpu::bilinear_resize_backward), nullptr, &resize_attrs, &resize_parse};
  static const OpDef& reg = register_op(def);
  return reg;
}

std::vector<NDArray> resize_gradient(const Invocation& inv, const std::vector<NDArray>& out_grads) {
  return {invoke1(backward_op(), {out_grads[0], inv.inputs[0]}, resize_params(inv))};
}

const OpDef& resize_op() {
  static const OpDef def{kResize, &resize_infer, &resize_cpu, NDG_GPU_KERNEL(gpu::bilinear_resize), &resize_gradient,
                         &resize_attrs, &resize_parse};
  static const OpDef& reg = register_op(def);
  return reg;
}

[[maybe_unused]] const bool image_family_registered = (resize_op(), backward_op(), true);

}  // namespace

ResizeGeometry resize_geometry(const BilinearResizeParams& p, const Shape& x) {
  const std::int64_t in_h = x[2], in_w = x[3];
  const std::int64_t out_h = p.scale_height > 0 ? static_cast<std::int64_t>(static_cast<double>(in_h) * p.scale_height) : p.height;
  const std::int64_t out_w = p.scale_width > 0 ? static_cast<std::int64_t>(static_cast<double>(in_w) * p.scale_width) : p.width;
  return {x[0] * x[1], in_h, in_w, out_h, out_w, p.align_corners};
}

}  // namespace mx::op

namespace mx::nd::contrib {

NDArray BilinearResize2D(const NDArray& data, const BilinearResizeOptions& options) {
  detail::check_not_none("_contrib_BilinearResize2D", data);
  return op::invoke1(op::resize_op(), {data}, op::checked_params(options));
}

}  // namespace mx::nd::contrib
