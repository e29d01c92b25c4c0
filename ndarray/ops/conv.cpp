// Convolution (1-, 2- and 3-D, groups, dilation) and its backward ops (data, weight, bias). Here: the front end,
// inference, gradient, the window helpers Pooling shares, and im2col + GEMM, the path of the CPU
// and of a GPU without cuDNN. cuDNN's path is cuda/cudnn_conv.cpp, the GPU loops cuda/ops/conv.cu.
#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "ndarray/core/checks.hpp"
#include "ndarray/core/contiguous.hpp"
#include "ndarray/ops/attrs.hpp"
#include "ndarray/ops/conv_kernels.hpp"
#include "ndarray/ops/elementwise_kernels.hpp"
#include "ndarray/ops/linalg_kernels.hpp"
#include "ndarray/ops/nn.hpp"
#include "ndarray/ops/nn_kernels.hpp"
#include "ndarray/ops/parallel.hpp"

namespace mx::op {
namespace {

using nd::NDArray;
using Grads = std::vector<NDArray>;

const ConvolutionParams& conv_params(const Invocation& inv) { return inv.params.as<ConvolutionParams>(); }

std::string tuple_of(const std::vector<std::int64_t>& v) { return Shape(v).tuple_str(); }

// --- im2col + GEMM --------------------------------------------------------------------------------

void im2col([[maybe_unused]] const ExecContext& ec, const ConvGeometry& g, const void* x, void* col) {
#ifdef NDG_HAVE_CUDA
  if (ec.ctx.is_gpu()) return gpu::im2col(ec, g, x, col);
#endif
  dispatch_floating(g.dtype, "Convolution", [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(x);
    T* out = static_cast<T*>(col);
    const std::int64_t n = g.in_channels * g.kernel_size() * g.out_size();
    parallel_for(n, [&](std::int64_t i) { out[i] = im2col_element(g, in, i); });
  });
}

void col2im([[maybe_unused]] const ExecContext& ec, const ConvGeometry& g, const void* col, void* dx) {
#ifdef NDG_HAVE_CUDA
  if (ec.ctx.is_gpu()) return gpu::col2im(ec, g, col, dx);
#endif
  dispatch_floating(g.dtype, "Convolution", [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(col);
    T* out = static_cast<T*>(dx);
    parallel_for(g.in_channels * g.in_size(), [&](std::int64_t i) { out[i] = col2im_element(g, in, i); },
                 g.in_channels * g.in_size() * g.kernel_size());
  });
}

// A 1×1 kernel with stride 1 and no padding: the column matrix is the input itself.
bool is_pointwise(const ConvGeometry& g) {
  const Window& w = g.window;
  for (int d = 0; d < 3; ++d) {
    if (w.kernel[d] != 1 || w.stride[d] != 1 || w.pad[d] != 0) return false;
  }
  return true;
}

// One pass of a convolution, on cuDNN where it has an engine, else by im2col + GEMM.
void convolution_pass(const ExecContext& ec, ConvPass pass, const ConvGeometry& g, const void* a, const void* b,
                      void* out) {
#ifdef NDG_HAVE_CUDA
  if (ec.ctx.is_gpu() && gpu::cudnn_pass(ec, pass, g, a, b, out)) return;
#endif
  im2col_convolution(ec, pass, g, a, b, out);
}

// Channels last (N, spatial..., C) and first (N, C, spatial...): the axes of one as the other. A
// weight (O, kernel..., I) permutes the same way.
std::vector<int> first_axes(int ndim) {
  std::vector<int> axes{0, ndim - 1};
  for (int a = 1; a < ndim - 1; ++a) axes.push_back(a);
  return axes;
}
Shape channels_first_shape(const Shape& s) {
  std::vector<std::int64_t> dims;
  for (int a : first_axes(s.ndim())) dims.push_back(s[a]);
  return Shape(dims);
}
Shape channels_last_shape(const Shape& s) {
  std::vector<std::int64_t> dims{s[0]};
  for (int a = 2; a < s.ndim(); ++a) dims.push_back(s[a]);
  dims.push_back(s[1]);
  return Shape(dims);
}

// The geometry of a Convolution's invocation on data x, whichever its layout.
ConvGeometry geometry_of(const ConvolutionParams& p, const NDArray& x) {
  ConvGeometry g = conv_geometry(p, p.channels_last ? channels_first_shape(x.shape()) : x.shape(), x.dtype());
  g.channels_last = p.channels_last;
  return g;
}

// One pass over the arrays of an invocation. Channels-last ones go to cuDNN as they are (it reads
// them through their strides) where it has an engine; otherwise the im2col path runs on
// channels-first copies and the result is written back channels last.
void run_pass(const ExecContext& ec, ConvPass pass, ConvGeometry g, const NDArray& a, const NDArray& b,
              const NDArray& out) {
  if (!g.channels_last) return convolution_pass(ec, pass, g, a.data(), b.data(), out.data());
#ifdef NDG_HAVE_CUDA
  if (ec.ctx.is_gpu() && gpu::cudnn_pass(ec, pass, g, a.data(), b.data(), out.data())) return;
#endif
  g.channels_last = false;
  const auto first = [](const NDArray& x) { return nd::detail::dense(x.transpose(first_axes(x.ndim()))); };
  const NDArray a_first = first(a), b_first = first(b);
  const NDArray out_first(channels_first_shape(out.shape()), out.context(), out.dtype());
  im2col_convolution(ec, pass, g, a_first.data(), b_first.data(), out_first.data());
  nd::detail::write_into(out_first, out.transpose(first_axes(out.ndim())));
}

void bias_activation([[maybe_unused]] const ExecContext& ec, const ConvGeometry& g, void* y, const void* bias,
                     std::optional<UnaryOp> act) {
#ifdef NDG_HAVE_CUDA
  if (ec.ctx.is_gpu()) return gpu::bias_activation(ec, g, y, bias, act);
#endif
  dispatch_floating(g.dtype, "Convolution", [&](auto tag) {
    using T = decltype(tag);
    T* out = static_cast<T*>(y);
    const T* b = static_cast<const T*>(bias);
    const std::int64_t rows = g.batch * g.out_channels, cols = g.out_size();
    with_activation(act, [&](auto f) {
      parallel_for(rows, [&](std::int64_t r) {
        const T v = b ? b[r % g.out_channels] : T(0);
        T* row = out + r * cols;
        for (std::int64_t c = 0; c < cols; ++c) row[c] = f(static_cast<T>(row[c] + v));
      }, rows * cols);
    });
  });
}

// --- inference ------------------------------------------------------------------------------------

std::string window_text(const ConvolutionParams& p) {
  const Window& w = p.window;
  return "kernel " + window_tuple(w, w.kernel) + ", stride " + window_tuple(w, w.stride) + ", dilate " +
         window_tuple(w, w.dilation) + ", pad " + window_tuple(w, w.pad);
}

// x (batch, channels, spatial...) for the window: the geometry, with every extent checked.
ConvGeometry checked_geometry(const char* op, const ConvolutionParams& p, const NDArray& x) {
  const int spatial = p.window.spatial;
  if (x.ndim() != spatial + 2) {
    const std::string axes = std::to_string(spatial) + " spatial axes";
    throw ShapeError(std::string(op) + ": data must be (batch, " + (p.channels_last ? axes + ", channels" : "channels, " + axes) +
                     ") for the " + std::to_string(spatial) + "-D kernel " +
                     window_tuple(p.window, p.window.kernel) + ", got " + nd::describe(x));
  }
  const std::int64_t channels = x.shape()[p.channels_last ? x.ndim() - 1 : 1];
  if (channels % p.num_group != 0 || p.num_filter % p.num_group != 0) {
    throw ValueError(std::string(op) + ": num_group " + std::to_string(p.num_group) + " must divide the data's " +
                     std::to_string(channels) + " channels and num_filter " + std::to_string(p.num_filter) +
                     "; data " + nd::describe(x));
  }
  const ConvGeometry g = geometry_of(p, x);
  for (int d = 3 - spatial; d < 3; ++d) {
    if (g.out[d] < 1) {
      throw ShapeError(std::string(op) + ": the " + window_text(p) + " do not fit data " + nd::describe(x) +
                       ": the dilated kernel is larger than the padded input");
    }
  }
  return g;
}

// The weight's shape: (num_filter, channels / num_group, kernel...), or channels last (num_filter,
// kernel..., channels / num_group).
Shape weight_shape(const ConvolutionParams& p, std::int64_t channels) {
  std::vector<std::int64_t> dims{p.num_filter, channels / p.num_group};
  for (int d = 3 - p.window.spatial; d < 3; ++d) dims.push_back(p.window.kernel[d]);
  return p.channels_last ? channels_last_shape(Shape(dims)) : Shape(dims);
}

Shape output_shape(const ConvGeometry& g, std::int64_t channels) {
  std::vector<std::int64_t> dims{g.batch, channels};
  for (int d = 3 - g.window.spatial; d < 3; ++d) dims.push_back(g.out[d]);
  return g.channels_last ? channels_last_shape(Shape(dims)) : Shape(dims);
}

void convolution_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const char* op = "Convolution";
  const ConvolutionParams& p = conv_params(inv);
  const NDArray &x = inv.inputs[0], &weight = inv.inputs[1], &bias = inv.inputs[2];
  nd::check_floating(op, x);
  nd::check_same_dtype(op, x, weight);
  if (!p.no_bias) nd::check_same_dtype(op, x, bias);
  const ConvGeometry g = checked_geometry(op, p, x);
  const Shape expected = weight_shape(p, g.in_channels);
  if (weight.shape() != expected) {
    throw ShapeError(std::string(op) + ": weight " + nd::describe(weight) + " does not fit data " + nd::describe(x) +
                     ", num_filter " + std::to_string(p.num_filter) + ", num_group " + std::to_string(p.num_group) +
                     " and kernel " + window_tuple(p.window, p.window.kernel) + "; expected " + expected.tuple_str());
  }
  if (!p.no_bias && bias.shape() != Shape{p.num_filter}) {
    throw ShapeError(std::string(op) + ": bias " + nd::describe(bias) + " does not fit num_filter " +
                     std::to_string(p.num_filter) + "; expected " + Shape{p.num_filter}.tuple_str());
  }
  out = {{output_shape(g, p.num_filter), x.dtype()}};
}

// The backward ops take (dy, x, weight), as MXNet's _backward_Convolution; dx is shaped like x.
void backward_data_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  out = {{inv.inputs[1].shape(), inv.inputs[1].dtype()}};
}
void backward_weight_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  out = {{inv.inputs[2].shape(), inv.inputs[2].dtype()}};
}

// --- kernels: one per op for every device (convolution_pass picks cuDNN or im2col) --------------

void convolution_kernel(const ExecContext& ec, const Invocation& inv) {
  const ConvolutionParams& p = conv_params(inv);
  const NDArray &x = inv.inputs[0], &y = inv.outputs[0];
  const ConvGeometry g = geometry_of(p, x);
  if (y.size() == 0) return;
  run_pass(ec, ConvPass::forward, g, x, inv.inputs[1], y);
  if (p.no_bias && !p.act) return;
  // Channels last: every position of every image is a row of out_channels values.
  ConvGeometry rows = g;
  if (g.channels_last) rows.batch = g.batch * g.out_size(), rows.out = {1, 1, 1};
  bias_activation(ec, rows, y.data(), p.no_bias ? nullptr : inv.inputs[2].data(), p.act);
}

void backward_data_kernel(const ExecContext& ec, const Invocation& inv) {
  const NDArray &dy = inv.inputs[0], &x = inv.inputs[1], &dx = inv.outputs[0];
  if (dx.size() == 0) return;
  run_pass(ec, ConvPass::backward_data, geometry_of(conv_params(inv), x), dy, inv.inputs[2], dx);
}

void backward_weight_kernel(const ExecContext& ec, const Invocation& inv) {
  const NDArray &dy = inv.inputs[0], &x = inv.inputs[1], &dw = inv.outputs[0];
  if (dw.size() == 0) return;
  run_pass(ec, ConvPass::backward_filter, geometry_of(conv_params(inv), x), x, dy, dw);
}

// _backward_Convolution_bias: dy (batch, filters, out...) summed per filter, in one pass over dy.
void backward_bias_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  out = {{Shape{conv_params(inv).num_filter}, inv.inputs[0].dtype()}};
}

ReduceShape bias_shape(const Invocation& inv) {
  const NDArray& dy = inv.inputs[0];
  const std::int64_t filters = conv_params(inv).num_filter, batch = dy.shape()[0];
  if (conv_params(inv).channels_last) return {filters == 0 ? 0 : dy.size() / filters, filters, 1};
  return {batch, filters, batch * filters == 0 ? 0 : dy.size() / (batch * filters)};
}

void backward_bias_cpu(const ExecContext&, const Invocation& inv) {
  const ReduceShape s = bias_shape(inv);
  dispatch_floating(inv.inputs[0].dtype(), "Convolution", [&](auto tag) {
    using T = decltype(tag);
    const T* dy = static_cast<const T*>(inv.inputs[0].data());
    T* db = static_cast<T*>(inv.outputs[0].data());
    parallel_for(s.length, [&](std::int64_t c) {
      double sum = 0;
      for (std::int64_t o = 0; o < s.outer; ++o) {
        const T* row = dy + (o * s.length + c) * s.inner;
        for (std::int64_t i = 0; i < s.inner; ++i) sum += row[i];
      }
      db[c] = static_cast<T>(sum);
    }, inv.inputs[0].size());
  });
}

#ifdef NDG_HAVE_CUDA
void backward_bias_gpu(const ExecContext& ec, const Invocation& inv) {
  gpu::channel_sum(ec, bias_shape(inv), inv.inputs[0].dtype(), inv.inputs[0].data(), inv.outputs[0].data());
}
#endif

// --- gradient and attributes ---------------------------------------------------------------------

std::vector<std::pair<std::string, std::string>> convolution_attrs(const Params& params) {
  const auto& p = params.as<ConvolutionParams>();
  const Window& w = p.window;
  std::vector<std::pair<std::string, std::string>> attrs{{"kernel", window_tuple(w, w.kernel)},     {"stride", window_tuple(w, w.stride)},
          {"dilate", window_tuple(w, w.dilation)},   {"pad", window_tuple(w, w.pad)},
          {"num_filter", std::to_string(p.num_filter)}, {"num_group", std::to_string(p.num_group)},
          {"no_bias", format_bool(p.no_bias)}};
  if (p.act) attrs.emplace_back("act_type", op_name(*p.act));  // an ndgluon extension
  if (p.channels_last) {
    static const char* last[] = {"NWC", "NHWC", "NDHWC"};
    attrs.emplace_back("layout", last[w.spatial - 1]);
  }
  return attrs;
}

// The attributes Convolution and Deconvolution share, checked (mx::ValueError naming op): the
// window, num_filter >= 1, act_type. The callers check num_group, which they restrict differently.
template <class Options>
ConvolutionParams shared_conv_params(const char* op, const Options& o) {
  ConvolutionParams p;
  p.window = make_window(op, o.kernel, o.stride, o.dilate, o.pad);
  if (o.num_filter < 1) {
    throw ValueError(std::string(op) + ": num_filter must be positive, got " + std::to_string(o.num_filter));
  }
  p.num_filter = o.num_filter;
  p.num_group = static_cast<std::int32_t>(o.num_group);
  p.no_bias = o.no_bias;
  p.act = nd::activation_type(o.act_type, op);
  return p;
}

ConvolutionParams convolution_params(const nd::ConvolutionOptions& o) {
  ConvolutionParams p = shared_conv_params("Convolution", o);
  p.channels_last = channels_last_layout("Convolution", o.layout, p.window.spatial);
  if (o.num_group < 1 || o.num_group > o.num_filter) {
    throw ValueError("Convolution: num_group must be in [1, num_filter " + std::to_string(o.num_filter) + "], got " +
                     std::to_string(o.num_group));
  }
  return p;
}

// MXNet's attributes of Convolution and Deconvolution, no_bias's default aside. workspace (a
// scratch limit), cudnn_tune and cudnn_off (which engine runs) change no result: ignored.
template <class Options>
Options read_conv_options(AttrReader& a, bool no_bias) {
  Options o;
  o.kernel = a.tuple("kernel");
  o.stride = a.tuple("stride", {});
  o.dilate = a.tuple("dilate", {});
  o.pad = a.tuple("pad", {});
  o.num_filter = a.integer("num_filter");
  o.num_group = a.integer("num_group", 1);
  o.no_bias = a.boolean("no_bias", no_bias);
  o.act_type = a.text("act_type", "");  // an ndgluon extension
  a.ignore({"workspace", "cudnn_tune", "cudnn_off"});
  if constexpr (std::is_same_v<Options, nd::ConvolutionOptions>) o.layout = read_conv_layout(a);
  else read_layout(a, o.kernel.size());
  return o;
}

// Also the backward ops', whose attributes are the forward's.
Params convolution_parse(const AttrList& attrs) {
  AttrReader a("Convolution", attrs);
  const auto o = read_conv_options<nd::ConvolutionOptions>(a, false);
  a.finish();
  return convolution_params(o);
}

const OpDef& backward_data_op() {
  static const OpDef def{"_backward_Convolution_data", &backward_data_infer, &backward_data_kernel,
                         NDG_GPU_KERNEL(backward_data_kernel), nullptr, &convolution_attrs,
                         &convolution_parse};
  static const OpDef& reg = register_op(def);
  return reg;
}

const OpDef& backward_weight_op() {
  static const OpDef def{"_backward_Convolution_weight", &backward_weight_infer, &backward_weight_kernel,
                         NDG_GPU_KERNEL(backward_weight_kernel), nullptr, &convolution_attrs,
                         &convolution_parse};
  static const OpDef& reg = register_op(def);
  return reg;
}

const OpDef& backward_bias_op() {
  static const OpDef def{"_backward_Convolution_bias", &backward_bias_infer, &backward_bias_cpu,
                         NDG_GPU_KERNEL(backward_bias_gpu), nullptr, &convolution_attrs,
                         &convolution_parse};
  static const OpDef& reg = register_op(def);
  return reg;
}

// dx and dweight by their own passes (only those a variable needs); dbias sums dy over the batch
// and the positions.
Grads convolution_gradient(const Invocation& inv, const Grads& out_grads) {
  const ConvolutionParams& p = conv_params(inv);
  const NDArray &x = inv.inputs[0], &weight = inv.inputs[1], &y = inv.outputs[0];
  // Through the fused activation first: its derivative is written from y.
  const NDArray dy = p.act ? invoke1(unary_backward_op(*p.act), {out_grads[0], y, y}) : out_grads[0];
  Grads grads(3);
  // Each into the variable's own gradient buffer when backward offers it (op::gradient_into); the
  // parameters' first, so that their all-reduce may start while the data's is computed.
  if (p.weight_grad) grads[1] = gradient_into(inv, 1, [&] { return invoke1(backward_weight_op(), {dy, x, weight}, p); });
  if (!p.no_bias) grads[2] = gradient_into(inv, 2, [&] { return invoke1(backward_bias_op(), {dy}, p); });
  if (p.data_grad) grads[0] = gradient_into(inv, 0, [&] { return invoke1(backward_data_op(), {dy, x, weight}, p); });
  return grads;
}

void convolution_input_grads(Params& params, const std::vector<bool>& needed) {
  ConvolutionParams p = params.as<ConvolutionParams>();
  p.data_grad = needed.at(0);
  p.weight_grad = needed.at(1);
  params = p;
}

const OpDef& convolution_op() {
  static const OpDef def{"Convolution", &convolution_infer, &convolution_kernel, NDG_GPU_KERNEL(convolution_kernel),
                         &convolution_gradient, &convolution_attrs, &convolution_parse, false, nullptr, 3, false,
                         &convolution_input_grads};
  static const OpDef& reg = register_op(def);
  return reg;
}

// --- Deconvolution: the adjoint of a Convolution ---------------------------------------------------
//
// Deconvolution(x, w) is the data gradient of the Convolution that maps its output y back to x:
// the same window, y's channels (num_filter) as that convolution's input channels and x's as its
// filters, so w (x channels, num_filter / num_group, kernel...) is that convolution's weight. Its
// three passes are the convolution's with the roles swapped: forward = backward_data, the data
// gradient = forward, the weight gradient = backward_filter (input dy, output gradient x).

struct DeconvolutionParams {
  ConvolutionParams conv;  // num_filter: y's channels
  Dims3 adj{0, 0, 0};      // extra extent at the end of each output axis (< stride)
  Dims3 target{0, 0, 0};   // MXNet's target_shape, for the attributes; 0: none was given
};

bool has_target(const DeconvolutionParams& p) { return p.target[0] != 0 || p.target[1] != 0 || p.target[2] != 0; }

// adj < stride along every axis, else the adjoint convolution does not map y back onto x.
void check_adj(const DeconvolutionParams& p) {
  const Window& w = p.conv.window;
  for (int d = 3 - w.spatial; d < 3; ++d) {
    if (p.adj[d] >= w.stride[d]) {
      throw ValueError("Deconvolution: adj " + window_tuple(w, p.adj) +
                       (has_target(p) ? " (from target_shape " + window_tuple(w, p.target) + ")" : "") +
                       " must be smaller than stride " + window_tuple(w, w.stride) + " along every axis");
    }
  }
}

// The params for data x: with a target_shape, the padding and adj that give it, as MXNet computes
// them when the op runs (a node read from symbol JSON has no data yet); otherwise as given.
DeconvolutionParams resolved(DeconvolutionParams p, const NDArray& x) {
  Window& w = p.conv.window;
  if (!has_target(p) || x.ndim() != w.spatial + 2) return p;  // inference refuses the latter
  for (int d = 3 - w.spatial; d < 3; ++d) {
    const std::int64_t in = x.shape()[2 + d - (3 - w.spatial)];
    const std::int64_t full = (in - 1) * w.stride[d] + std::int64_t{w.dilation[d]} * (w.kernel[d] - 1) + 1;
    const std::int64_t total_pad = full - p.target[d];
    if (total_pad < 0) {
      throw ShapeError("Deconvolution: target_shape " + window_tuple(w, p.target) + " is larger than the data " +
                       nd::describe(x) + " can give with the kernel and stride");
    }
    p.adj[d] = static_cast<std::int32_t>(total_pad % 2);
    w.pad[d] = static_cast<std::int32_t>((total_pad + 1) / 2);
  }
  check_adj(p);
  return p;
}

DeconvolutionParams deconv_params(const Invocation& inv) {
  return resolved(inv.params.as<DeconvolutionParams>(), inv.inputs[0]);
}

// The convolution from y back to x (x_channels filters).
ConvolutionParams adjoint_convolution(const DeconvolutionParams& p, std::int64_t x_channels) {
  ConvolutionParams c = p.conv;
  c.num_filter = x_channels;
  c.no_bias = true;
  c.act.reset();
  return c;
}

Shape deconvolution_shape(const DeconvolutionParams& p, const Shape& x) {
  const Window& w = p.conv.window;
  std::vector<std::int64_t> dims{x[0], p.conv.num_filter};
  for (int d = 3 - w.spatial; d < 3; ++d) {
    const std::int64_t in = x[2 + d - (3 - w.spatial)];
    dims.push_back((in - 1) * w.stride[d] - 2 * std::int64_t{w.pad[d]} + std::int64_t{w.dilation[d]} * (w.kernel[d] - 1) +
                   1 + p.adj[d]);
  }
  return Shape(dims);
}

// y's geometry as the adjoint convolution's input; its out extents are x's.
ConvGeometry deconvolution_geometry(const DeconvolutionParams& p, const Shape& x, DType dtype) {
  return conv_geometry(adjoint_convolution(p, x[1]), deconvolution_shape(p, x), dtype);
}

// The bias/activation pass over y: rows (batch, num_filter), y's positions.
ConvGeometry output_rows(ConvGeometry g, std::int64_t filters) {
  g.out = g.in;
  g.out_channels = filters;
  return g;
}

void deconvolution_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const char* op = "Deconvolution";
  const DeconvolutionParams p = deconv_params(inv);
  const NDArray &x = inv.inputs[0], &weight = inv.inputs[1], &bias = inv.inputs[2];
  nd::check_floating(op, x);
  nd::check_same_dtype(op, x, weight);
  if (!p.conv.no_bias) nd::check_same_dtype(op, x, bias);
  const int spatial = p.conv.window.spatial;
  if (x.ndim() != spatial + 2) {
    throw ShapeError(std::string(op) + ": data must be (batch, channels, " + std::to_string(spatial) +
                     " spatial axes) for the " + std::to_string(spatial) + "-D kernel " +
                     window_tuple(p.conv.window, p.conv.window.kernel) + ", got " + nd::describe(x));
  }
  const std::int64_t channels = x.shape()[1];
  if (channels % p.conv.num_group != 0) {
    throw ValueError(std::string(op) + ": num_group " + std::to_string(p.conv.num_group) + " must divide the data's " +
                     std::to_string(channels) + " channels; data " + nd::describe(x));
  }
  const Shape y = deconvolution_shape(p, x.shape());
  for (int d = 2; d < y.ndim(); ++d) {
    if (y[d] < 1) {
      throw ShapeError(std::string(op) + ": the " + window_text(p.conv) + " leave no output for data " +
                       nd::describe(x) + ": the padding removes more than the output has");
    }
  }
  std::vector<std::int64_t> w_dims{channels, p.conv.num_filter / p.conv.num_group};
  for (int d = 3 - spatial; d < 3; ++d) w_dims.push_back(p.conv.window.kernel[d]);
  if (weight.shape() != Shape(w_dims)) {
    throw ShapeError(std::string(op) + ": weight " + nd::describe(weight) + " does not fit data " + nd::describe(x) +
                     ", num_filter " + std::to_string(p.conv.num_filter) + ", num_group " +
                     std::to_string(p.conv.num_group) + " and kernel " +
                     window_tuple(p.conv.window, p.conv.window.kernel) + "; expected " + Shape(w_dims).tuple_str());
  }
  if (!p.conv.no_bias && bias.shape() != Shape{p.conv.num_filter}) {
    throw ShapeError(std::string(op) + ": bias " + nd::describe(bias) + " does not fit num_filter " +
                     std::to_string(p.conv.num_filter) + "; expected " + Shape{p.conv.num_filter}.tuple_str());
  }
  out = {{y, x.dtype()}};
}

void deconvolution_kernel(const ExecContext& ec, const Invocation& inv) {
  const DeconvolutionParams p = deconv_params(inv);
  const NDArray &x = inv.inputs[0], &y = inv.outputs[0];
  if (y.size() == 0) return;
  const ConvGeometry g = deconvolution_geometry(p, x.shape(), x.dtype());
  convolution_pass(ec, ConvPass::backward_data, g, x.data(), inv.inputs[1].data(), y.data());
  if (!p.conv.no_bias || p.conv.act) {
    bias_activation(ec, output_rows(g, p.conv.num_filter), y.data(), p.conv.no_bias ? nullptr : inv.inputs[2].data(),
                    p.conv.act);
  }
}

// dx = Convolution(dy, w); dw = the convolution's weight gradient with input dy and output
// gradient x; dbias = dy summed per filter. Each through the Convolution family's ops.
Grads deconvolution_gradient(const Invocation& inv, const Grads& out_grads) {
  const DeconvolutionParams p = deconv_params(inv);
  const NDArray &x = inv.inputs[0], &weight = inv.inputs[1], &y = inv.outputs[0];
  const NDArray dy = p.conv.act ? invoke1(unary_backward_op(*p.conv.act), {out_grads[0], y, y}) : out_grads[0];
  const ConvolutionParams c = adjoint_convolution(p, x.shape()[1]);
  Grads grads(3);
  if (p.conv.data_grad) grads[0] = invoke1(convolution_op(), {dy, weight, NDArray()}, c);
  if (p.conv.weight_grad) grads[1] = invoke1(backward_weight_op(), {x, dy, weight}, c);
  if (!p.conv.no_bias) grads[2] = invoke1(backward_bias_op(), {dy}, p.conv);
  return grads;
}

std::vector<std::pair<std::string, std::string>> deconvolution_attrs(const Params& params) {
  const auto& p = params.as<DeconvolutionParams>();
  std::vector<std::pair<std::string, std::string>> attrs = convolution_attrs(p.conv);
  attrs.emplace_back("adj", window_tuple(p.conv.window, p.adj));
  if (has_target(p)) attrs.emplace_back("target_shape", window_tuple(p.conv.window, p.target));
  return attrs;
}

// Deconvolution's attributes checked (mx::ValueError): the window, adj < stride, num_group dividing
// num_filter. target_shape is kept and resolved against the data when the op runs.
DeconvolutionParams deconvolution_params(const nd::DeconvolutionOptions& o) {
  const char* op = "Deconvolution";
  DeconvolutionParams p;
  p.conv = shared_conv_params(op, o);
  if (o.num_group < 1 || o.num_filter % o.num_group != 0) {
    throw ValueError(std::string(op) + ": num_group " + std::to_string(o.num_group) + " must divide num_filter " +
                     std::to_string(o.num_filter));
  }
  const Window& w = p.conv.window;
  const auto tuple = [&](const char* name, const std::vector<std::int64_t>& v, Dims3& into) {
    if (v.empty()) return;
    if (v.size() != static_cast<std::size_t>(w.spatial)) {
      throw ValueError(std::string(op) + ": " + name + " " + tuple_of(v) + " must have as many extents as kernel " +
                       tuple_of(o.kernel));
    }
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (v[i] < 0 || v[i] > std::numeric_limits<std::int32_t>::max()) {
        throw ValueError(std::string(op) + ": " + name + " " + tuple_of(v) + " must be non-negative");
      }
      into[3 - v.size() + i] = static_cast<std::int32_t>(v[i]);
    }
  };
  tuple("adj", o.adj, p.adj);
  tuple("target_shape", o.target_shape, p.target);
  if (!has_target(p)) check_adj(p);
  return p;
}

Params deconvolution_parse(const AttrList& attrs) {
  AttrReader a("Deconvolution", attrs);
  auto o = read_conv_options<nd::DeconvolutionOptions>(a, true);
  o.adj = a.tuple("adj", {});
  o.target_shape = a.tuple("target_shape", {});  // all zeros: none, as MXNet reads it
  a.finish();
  return deconvolution_params(o);
}

void deconvolution_input_grads(Params& params, const std::vector<bool>& needed) {
  DeconvolutionParams p = params.as<DeconvolutionParams>();
  p.conv.data_grad = needed.at(0);
  p.conv.weight_grad = needed.at(1);
  params = p;
}

const OpDef& deconvolution_op() {
  static const OpDef def{"Deconvolution", &deconvolution_infer, &deconvolution_kernel,
                         NDG_GPU_KERNEL(deconvolution_kernel), &deconvolution_gradient, &deconvolution_attrs,
                         &deconvolution_parse, false, nullptr, 3, false, &deconvolution_input_grads};
  static const OpDef& reg = register_op(def);
  return reg;
}

[[maybe_unused]] const bool conv_family_registered =
    (convolution_op(), backward_data_op(), backward_weight_op(), backward_bias_op(), deconvolution_op(), true);

}  // namespace

Window make_window(const char* op, const std::vector<std::int64_t>& kernel, const std::vector<std::int64_t>& stride,
                   const std::vector<std::int64_t>& dilate, const std::vector<std::int64_t>& pad) {
  const std::size_t n = kernel.size();
  if (n < 1 || n > 3) {
    throw ValueError(std::string(op) + ": kernel must have 1 to 3 extents (a 1-, 2- or 3-D window), got " +
                     tuple_of(kernel));
  }
  Window w;
  w.spatial = static_cast<int>(n);
  const auto fill = [&](const char* name, const std::vector<std::int64_t>& v, std::int64_t least, Dims3& into) {
    if (!v.empty() && v.size() != n) {
      throw ValueError(std::string(op) + ": " + name + " " + tuple_of(v) + " must have as many extents as kernel " +
                       tuple_of(kernel));
    }
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (v[i] < least || v[i] > std::numeric_limits<std::int32_t>::max()) {
        throw ValueError(std::string(op) + ": " + name + " " + tuple_of(v) + " must be " +
                         (least == 0 ? "non-negative" : "positive") + " along every axis");
      }
      into[3 - n + i] = static_cast<std::int32_t>(v[i]);
    }
  };
  fill("kernel", kernel, 1, w.kernel);
  fill("stride", stride, 1, w.stride);
  fill("dilate", dilate, 1, w.dilation);
  fill("pad", pad, 0, w.pad);
  return w;
}

std::string window_tuple(const Window& w, const Dims3& dims) {
  std::string s = "(";
  for (int d = 3 - w.spatial; d < 3; ++d) s += std::to_string(dims[d]) + (d < 2 ? ", " : "");
  return s + (w.spatial == 1 ? ",)" : ")");
}

ConvGeometry window_geometry(const Window& window, const Shape& x, DType dtype, bool ceil_mode) {
  ConvGeometry g;
  g.window = window;
  g.dtype = dtype;
  g.batch = x[0];
  g.in_channels = g.out_channels = g.groups = x[1];
  for (int d = 3 - window.spatial; d < 3; ++d) {
    const std::int64_t in = x[2 + d - (3 - window.spatial)];
    const std::int64_t span = in + 2 * window.pad[d] - std::int64_t{window.dilation[d]} * (window.kernel[d] - 1) - 1;
    std::int64_t steps = span < 0 ? -1 : ceil_mode ? (span + window.stride[d] - 1) / window.stride[d]
                                                   : span / window.stride[d];
    // Rounding up never starts a window in the right padding (Caffe's and PyTorch's rule), so that
    // every window holds an input element.
    if (ceil_mode && steps > 0 && steps * window.stride[d] >= in + window.pad[d]) --steps;
    g.in[d] = static_cast<std::int32_t>(in);
    g.out[d] = static_cast<std::int32_t>(steps + 1);
  }
  return g;
}

ConvGeometry conv_geometry(const ConvolutionParams& p, const Shape& x, DType dtype) {
  ConvGeometry g = window_geometry(p.window, x, dtype);
  g.out_channels = p.num_filter;
  g.groups = p.num_group;
  return g;
}

namespace {

// fn(o, at) for every output position o of one column row, with at the input offset (within the
// channel) under kernel tap k, or -1 in the padding. Incremental: no division per element.
template <class Fn>
void for_each_tap_position(const ConvGeometry& g, const std::int64_t (&k)[3], Fn&& fn) {
  const Window& w = g.window;
  std::int64_t o = 0;
  for (std::int64_t o0 = 0; o0 < g.out[0]; ++o0) {
    const std::int64_t at0 = o0 * w.stride[0] - w.pad[0] + k[0] * w.dilation[0];
    const bool in0 = at0 >= 0 && at0 < g.in[0];
    for (std::int64_t o1 = 0; o1 < g.out[1]; ++o1) {
      const std::int64_t at1 = o1 * w.stride[1] - w.pad[1] + k[1] * w.dilation[1];
      const bool in01 = in0 && at1 >= 0 && at1 < g.in[1];
      const std::int64_t base = (at0 * g.in[1] + at1) * g.in[2];
      for (std::int64_t o2 = 0; o2 < g.out[2]; ++o2, ++o) {
        const std::int64_t at2 = o2 * w.stride[2] - w.pad[2] + k[2] * w.dilation[2];
        fn(o, in01 && at2 >= 0 && at2 < g.in[2] ? base + at2 : std::int64_t{-1});
      }
    }
  }
}

// Row r of one sample's column matrix (channel r / taps under tap r % taps), and its adjoint: the
// row's values added into the channel's input gradient.
template <class T>
void im2col_row(const ConvGeometry& g, const T* x, std::int64_t r, T* dst) {
  std::int64_t k[3];
  unravel3(r % g.kernel_size(), g.window.kernel, k);
  const T* xc = x + r / g.kernel_size() * g.in_size();
  for_each_tap_position(g, k, [&](std::int64_t o, std::int64_t at) { dst[o] = at < 0 ? T(0) : xc[at]; });
}

template <class T>
void col2im_row_add(const ConvGeometry& g, const T* row, std::int64_t r, T* dx) {
  std::int64_t k[3];
  unravel3(r % g.kernel_size(), g.window.kernel, k);
  T* dxc = dx + r / g.kernel_size() * g.in_size();
  for_each_tap_position(g, k, [&](std::int64_t o, std::int64_t at) {
    if (at >= 0) dxc[at] += row[o];
  });
}

// The CPU's im2col + GEMM: a chunk of samples per OpenBLAS call. The chunk's column matrices lie
// side by side in col (rows, S·outs), and its dy or y is permuted to (filters, S·outs), so that one
// GEMM per group covers S samples: a few large products keep OpenBLAS's threads busy, where one
// small product per sample (LeNet: 256 of 6×25×784) costs more in overhead than in arithmetic.
template <class T>
void chunked_cpu_convolution(const ExecContext& ec, ConvPass pass, const ConvGeometry& g, const T* a, const T* b,
                             T* out) {
  const std::int64_t channels = g.in_channels, filters = g.out_channels, ins = g.in_size(), outs = g.out_size();
  const std::int64_t taps = g.kernel_size(), rows = channels * taps;
  const std::int64_t group_rows = rows / g.groups, group_filters = filters / g.groups;
  constexpr std::int64_t kChunkBytes = std::int64_t{64} << 20;  // col and the permuted dy/y of a chunk
  const std::int64_t per_sample = (rows + filters) * outs * static_cast<std::int64_t>(sizeof(T));
  const std::int64_t chunk = std::clamp<std::int64_t>(kChunkBytes / std::max<std::int64_t>(per_sample, 1), 1, g.batch);
  const Workspace col_space(ec, static_cast<std::size_t>(rows * chunk * outs) * sizeof(T));
  const Workspace perm_space(ec, static_cast<std::size_t>(filters * chunk * outs) * sizeof(T));
  T* col = col_space.as<T>();
  T* perm = perm_space.as<T>();

  for (std::int64_t n0 = 0; n0 < g.batch; n0 += chunk) {
    const std::int64_t s_count = std::min(chunk, g.batch - n0), width = s_count * outs;
    // col (rows, width): row r of sample s at col[r·width + s·outs].
    const auto fill_col = [&](const T* x) {
      parallel_for(rows * s_count, [&](std::int64_t rs) {
        const std::int64_t r = rs / s_count, s = rs % s_count;
        im2col_row(g, x + (n0 + s) * channels * ins, r, col + r * width + s * outs);
      }, rows * width);
    };
    // perm (filters, width) <-> (S, filters, outs) of the batch at n0.
    const auto permute = [&](const T* from, T* to, bool to_perm) {
      parallel_for(s_count * filters, [&](std::int64_t sf) {
        const std::int64_t s = sf / filters, f = sf % filters;
        T* p = perm + f * width + s * outs;
        const std::int64_t at = ((n0 + s) * filters + f) * outs;
        if (to_perm) std::copy(from + at, from + at + outs, p);
        else std::copy(p, p + outs, to + at);
      }, filters * width);
    };
    for (std::int64_t group = 0; group < g.groups; ++group) {
      const T* w_g = b + group * group_filters * group_rows;
      T* col_g = col + group * group_rows * width;
      T* perm_g = perm + group * group_filters * width;
      switch (pass) {
        case ConvPass::forward:  // y' (filters, width) = w (filters, rows) · col
          if (group == 0) fill_col(a);
          gemm(ec, g.dtype, {false, false, group_filters, width, group_rows}, w_g, col_g, perm_g);
          break;
        case ConvPass::backward_data:  // col = wᵀ · dy'
          if (group == 0) permute(a, nullptr, true);
          gemm(ec, g.dtype, {true, false, group_rows, width, group_filters}, w_g, perm_g, col_g);
          break;
        case ConvPass::backward_filter:  // dw (filters, rows) += dy' · colᵀ
          if (group == 0) {
            fill_col(a);
            permute(b, nullptr, true);
          }
          gemm(ec, g.dtype, {false, true, group_filters, group_rows, width, 1.0, n0 == 0 ? 0.0 : 1.0}, perm_g, col_g,
               out + group * group_filters * group_rows);
          break;
      }
    }
    if (pass == ConvPass::forward) permute(nullptr, out, false);
    if (pass == ConvPass::backward_data) {
      // dx of each sample: its column rows added into it (a sample per thread: rows of one
      // channel add into the same elements).
      parallel_for(s_count, [&](std::int64_t s) {
        T* dx = out + (n0 + s) * channels * ins;
        std::fill(dx, dx + channels * ins, T(0));
        for (std::int64_t r = 0; r < rows; ++r) col2im_row_add(g, col + r * width + s * outs, r, dx);
      }, rows * width);
    }
  }
}

}  // namespace

void im2col_convolution(const ExecContext& ec, ConvPass pass, const ConvGeometry& g, const void* a, const void* b,
                        void* out) {
  if (ec.ctx.is_cpu() && g.batch > 0) {
    return dispatch_floating(g.dtype, "Convolution", [&](auto tag) {
      using T = decltype(tag);
      chunked_cpu_convolution(ec, pass, g, static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(out));
    });
  }
  const std::size_t elt = dtype_size(g.dtype);
  const std::int64_t channels = g.in_channels, filters = g.out_channels, ins = g.in_size(), outs = g.out_size();
  const std::int64_t group_channels = channels / g.groups, group_filters = filters / g.groups;
  const std::int64_t rows = group_channels * g.kernel_size();  // of a group's column matrix
  const auto at = [elt](const void* base, std::int64_t offset) {
    return static_cast<char*>(const_cast<void*>(base)) + offset * static_cast<std::int64_t>(elt);
  };
  if (g.batch == 0) {  // dw of no samples is zero; the other passes have nothing to write
    if (pass == ConvPass::backward_filter) gemm(ec, g.dtype, {false, false, filters, rows, 0}, a, b, out);
    return;
  }
  const bool pointwise = is_pointwise(g);
  const Workspace scratch(ec, pointwise ? 0 : static_cast<std::size_t>(channels * g.kernel_size() * outs) * elt);
  for (std::int64_t n = 0; n < g.batch; ++n) {
    const void* x_n = at(a, n * channels * ins);  // forward, backward_filter
    const void* dy_n = pass == ConvPass::backward_data   ? at(a, n * filters * outs)
                       : pass == ConvPass::backward_filter ? at(b, n * filters * outs)
                                                           : nullptr;
    void* col = pointwise ? const_cast<void*>(x_n) : scratch.data();
    if (pass != ConvPass::backward_data && !pointwise) im2col(ec, g, x_n, col);
    if (pass == ConvPass::backward_data && pointwise) col = at(out, n * channels * ins);
    for (std::int64_t group = 0; group < g.groups; ++group) {
      void* col_g = at(col, group * rows * outs);
      switch (pass) {
        case ConvPass::forward:  // y (filters, outs) = w (filters, rows) · col (rows, outs)
          gemm(ec, g.dtype, {false, false, group_filters, outs, rows}, at(b, group * group_filters * rows), col_g,
               at(out, (n * filters + group * group_filters) * outs));
          break;
        case ConvPass::backward_data:  // col (rows, outs) = wᵀ · dy (filters, outs)
          gemm(ec, g.dtype, {true, false, rows, outs, group_filters}, at(b, group * group_filters * rows),
               at(dy_n, group * group_filters * outs), col_g);
          break;
        case ConvPass::backward_filter:  // dw (filters, rows) += dy (filters, outs) · colᵀ
          gemm(ec, g.dtype, {false, true, group_filters, rows, outs, 1.0, n == 0 ? 0.0 : 1.0},
               at(dy_n, group * group_filters * outs), col_g, at(out, group * group_filters * rows));
          break;
      }
    }
    if (pass == ConvPass::backward_data && !pointwise) col2im(ec, g, col, at(out, n * channels * ins));
  }
}

}  // namespace mx::op

namespace mx::nd {

NDArray Convolution(const NDArray& data, const NDArray& weight, const NDArray& bias, const ConvolutionOptions& o) {
  const char* op = "Convolution";
  detail::check_not_none(op, data);
  detail::check_not_none(op, weight);
  if (!o.no_bias) detail::check_not_none(op, bias);
  op::ConvolutionParams p = op::convolution_params(o);
  p.data_grad = data.autograd_node() != nullptr;
  p.weight_grad = weight.autograd_node() != nullptr;
  return op::invoke1(op::convolution_op(), {data, weight, o.no_bias ? NDArray() : bias}, p);
}

NDArray Deconvolution(const NDArray& data, const NDArray& weight, const NDArray& bias,
                      const DeconvolutionOptions& o) {
  const char* op = "Deconvolution";
  detail::check_not_none(op, data);
  detail::check_not_none(op, weight);
  if (!o.no_bias) detail::check_not_none(op, bias);
  op::DeconvolutionParams p = op::deconvolution_params(o);
  p.conv.data_grad = data.autograd_node() != nullptr;
  p.conv.weight_grad = weight.autograd_node() != nullptr;
  return op::invoke1(op::deconvolution_op(), {data, weight, o.no_bias ? NDArray() : bias}, p);
}

}  // namespace mx::nd
