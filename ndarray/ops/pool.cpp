// Pooling (max and average, 1-, 2- and 3-D, global, "valid" and "full" conventions) and its
// backward op. Here: the front end, inference, gradient and CPU loops; the CUDA launches are in
// cuda/ops/pool.cu. Both run the element functions of ndarray/ops/conv_kernels.hpp.
#include <algorithm>
#include <limits>

#include "ndarray/core/checks.hpp"
#include "ndarray/ops/attrs.hpp"
#include "ndarray/ops/conv_kernels.hpp"
#include "ndarray/ops/nn.hpp"
#include "ndarray/ops/parallel.hpp"

namespace mx::op {
namespace {

using nd::NDArray;

const PoolingParams& pool_params(const Invocation& inv) { return inv.params.as<PoolingParams>(); }

void pooling_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const char* op = "Pooling";
  const PoolingParams& p = pool_params(inv);
  const NDArray& x = inv.inputs[0];
  nd::check_floating(op, x);
  const int spatial = p.window.spatial;
  if (p.global_pool ? (x.ndim() < 3 || x.ndim() > 5) : x.ndim() != spatial + 2) {
    throw ShapeError(std::string(op) + ": data must be (batch, channels, " +
                     (p.global_pool ? std::string("1 to 3") : std::to_string(spatial)) + " spatial axes)" +
                     (p.global_pool ? "" : " for the kernel " + window_tuple(p.window, p.window.kernel)) + ", got " +
                     nd::describe(x));
  }
  const ConvGeometry g = pool_geometry(p, x.shape(), x.dtype());
  if (g.in_size() > std::numeric_limits<std::int32_t>::max()) {
    throw ShapeError(std::string(op) + ": a channel of " + nd::describe(x) + " has more than 2^31 positions");
  }
  std::vector<std::int64_t> dims{g.batch, g.in_channels};
  for (int d = 3 - g.window.spatial; d < 3; ++d) {
    if (g.out[d] < 1) {
      throw ShapeError(std::string(op) + ": kernel " + window_tuple(p.window, p.window.kernel) + " with pad " +
                       window_tuple(p.window, p.window.pad) + " is larger than the padded input " + nd::describe(x));
    }
    dims.push_back(g.out[d]);
  }
  out = {{Shape(dims), x.dtype()}};
  if (p.max) out.push_back({Shape(dims), DType::int32});  // where each maximum was, for backward
}

void pooling_cpu(const ExecContext&, const Invocation& inv) {
  const PoolingParams& p = pool_params(inv);
  const NDArray &x = inv.inputs[0], &y = inv.outputs[0];
  const ConvGeometry g = pool_geometry(p, x.shape(), x.dtype());
  std::int32_t* argmax = p.max ? static_cast<std::int32_t*>(inv.outputs[1].data()) : nullptr;
  dispatch_floating(x.dtype(), "Pooling", [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(x.data());
    T* out = static_cast<T*>(y.data());
    parallel_for(y.size(), [&](std::int64_t i) { out[i] = pool_element(g, p, in, i, argmax); },
                 y.size() * g.kernel_size());
  });
}

// _backward_Pooling: inputs (dy, x, argmax: a none array for avg), output dx.
void backward_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  out = {{inv.inputs[1].shape(), inv.inputs[1].dtype()}};
}

void backward_cpu(const ExecContext&, const Invocation& inv) {
  const PoolingParams& p = pool_params(inv);
  const NDArray &dy = inv.inputs[0], &x = inv.inputs[1], &dx = inv.outputs[0];
  const ConvGeometry g = pool_geometry(p, x.shape(), x.dtype());
  const std::int32_t* argmax = p.max ? static_cast<const std::int32_t*>(inv.inputs[2].data()) : nullptr;
  dispatch_floating(x.dtype(), "Pooling", [&](auto tag) {
    using T = decltype(tag);
    const T* grad = static_cast<const T*>(dy.data());
    T* out = static_cast<T*>(dx.data());
    if (windows_disjoint(g)) {
      if (!windows_tile(g)) std::fill(out, out + dx.size(), T(0));
      parallel_for(dy.size(), [&](std::int64_t i) { pool_backward_window(g, p, grad, argmax, out, i); },
                   dx.size() * 2);
      return;
    }
    parallel_for(dx.size(), [&](std::int64_t i) { out[i] = pool_backward_element(g, p, grad, argmax, i); },
                 dx.size() * 4);
  });
}

std::vector<std::pair<std::string, std::string>> pooling_attrs(const Params& params) {
  const auto& p = params.as<PoolingParams>();
  std::vector<std::pair<std::string, std::string>> attrs{{"pool_type", p.max ? "max" : "avg"},
                                                        {"global_pool", format_bool(p.global_pool)}};
  if (!p.global_pool) {
    const Window& w = p.window;
    attrs.insert(attrs.end(), {{"kernel", window_tuple(w, w.kernel)},
                               {"stride", window_tuple(w, w.stride)},
                               {"pad", window_tuple(w, w.pad)},
                               {"pooling_convention", p.full_convention ? "full" : "valid"}});
  }
  if (!p.max) attrs.emplace_back("count_include_pad", format_bool(p.count_include_pad));
  return attrs;
}

// Pooling's options checked (mx::ValueError): pool_type, pooling_convention, and unless
// global_pool the window, with pad < kernel.
PoolingParams pooling_params(const nd::PoolingOptions& o) {
  const char* op = "Pooling";
  if (o.pool_type != "max" && o.pool_type != "avg") {
    throw ValueError("Pooling: unknown pool_type \"" + o.pool_type + "\"; valid: \"max\", \"avg\"");
  }
  if (o.pooling_convention != "valid" && o.pooling_convention != "full") {
    throw ValueError("Pooling: unknown pooling_convention \"" + o.pooling_convention +
                     "\"; valid: \"valid\", \"full\"");
  }
  PoolingParams p;
  p.max = o.pool_type == "max";
  p.global_pool = o.global_pool;
  p.full_convention = o.pooling_convention == "full";
  p.count_include_pad = o.count_include_pad;
  if (!o.global_pool) {
    p.window = make_window(op, o.kernel, o.stride, {}, o.pad);
    for (int d = 0; d < 3; ++d) {
      if (p.window.pad[d] >= p.window.kernel[d]) {
        throw ValueError("Pooling: pad " + window_tuple(p.window, p.window.pad) + " must be smaller than the kernel " +
                         window_tuple(p.window, p.window.kernel) + " along every axis");
      }
    }
  }
  return p;
}

// MXNet's attributes; cudnn_off (which engine runs) and p_value (Lp pooling's, a pool_type ndgluon
// refuses) change no result: ignored. With global_pool the window is not read (MXNet ignores it).
Params pooling_parse(const AttrList& attrs) {
  AttrReader a("Pooling", attrs);
  nd::PoolingOptions o;
  o.global_pool = a.boolean("global_pool", false);
  o.kernel = a.tuple("kernel", {});
  o.pool_type = a.choice("pool_type", "max", {"max", "avg"});
  o.pooling_convention = a.choice("pooling_convention", "valid", {"valid", "full"});
  o.stride = a.tuple("stride", {});
  o.pad = a.tuple("pad", {});
  o.count_include_pad = a.boolean("count_include_pad", true);
  a.ignore({"cudnn_off", "p_value"});
  read_layout(a, o.kernel.size());
  a.finish();
  return pooling_params(o);
}

const OpDef& backward_op() {
  static const OpDef def{"_backward_Pooling", &backward_infer, &backward_cpu, NDG_GPU_KERNEL(gpu::pooling_backward),
                         nullptr, &pooling_attrs, &pooling_parse};
  static const OpDef& reg = register_op(def);
  return reg;
}

std::vector<NDArray> pooling_gradient(const Invocation& inv, const std::vector<NDArray>& out_grads) {
  const PoolingParams& p = pool_params(inv);
  return {invoke1(backward_op(), {out_grads[0], inv.inputs[0], p.max ? inv.outputs[1] : NDArray()}, p)};
}

const OpDef& pooling_op() {
  static const OpDef def{"Pooling", &pooling_infer, &pooling_cpu, NDG_GPU_KERNEL(gpu::pooling), &pooling_gradient,
                         &pooling_attrs, &pooling_parse};
  static const OpDef& reg = register_op(def);
  return reg;
}

[[maybe_unused]] const bool pool_family_registered = (pooling_op(), backward_op(), true);

}  // namespace

ConvGeometry pool_geometry(const PoolingParams& p, const Shape& x, DType dtype) {
  Window w = p.window;
  if (p.global_pool) {
    w = Window{};
    w.spatial = x.ndim() - 2;
    for (int d = 3 - w.spatial; d < 3; ++d) w.kernel[d] = static_cast<std::int32_t>(x[2 + d - (3 - w.spatial)]);
  }
  return window_geometry(w, x, dtype, p.full_convention && !p.global_pool);
}

}  // namespace mx::op

namespace mx::nd {

NDArray Pooling(const NDArray& data, const PoolingOptions& o) {
  detail::check_not_none("Pooling", data);
  const auto outputs = op::invoke(op::pooling_op(), {data}, op::pooling_params(o));
  return outputs[0];
}

}  // namespace mx::nd
