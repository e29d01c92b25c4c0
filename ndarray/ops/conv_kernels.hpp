#pragma once
// The convolution family's attributes, shared element functions and device entry points:
// Convolution and Pooling (1-, 2- and 3-D: NCW, NCHW, NCDHW) and BatchNorm. ndarray/ops/conv.cpp,
// pool.cpp and batch_norm.cpp define the ops, their gradients and the CPU loops; cuda/ops/conv.cu,
// pool.cu and batch_norm.cu the launches; cuda/cudnn_conv.cpp the cuDNN path of the convolution.
// The element functions below are written once for the CPU loops and the CUDA kernels. Internal.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ndarray/core/host_device.hpp"
#include "ndarray/ops/op.hpp"
#include "ndarray/ops/op_kinds.hpp"

namespace mx::op {

// Spatial extents are kept as 3-D: a 1-D op uses the last entry (W), a 2-D op the last two (H, W),
// with extent 1, stride 1, pad 0 and dilation 1 in the unused leading entries. One loop then
// serves every dimensionality.
using Dims3 = std::array<std::int32_t, 3>;

// An N-d window over the padded input, as Convolution and Pooling share it.
struct Window {
  int spatial = 2;  // 1, 2 or 3
  Dims3 kernel{1, 1, 1}, stride{1, 1, 1}, pad{0, 0, 0}, dilation{1, 1, 1};
};

// A Window from MXNet's tuples (kernel, stride, dilate, pad: 1 to 3 entries each; stride, dilate
// and pad may be empty for 1, 1, 0). mx::ValueError naming op for a kernel of another length, a
// tuple whose length differs from the kernel's, kernel/stride/dilate < 1 or pad < 0.
Window make_window(const char* op, const std::vector<std::int64_t>& kernel, const std::vector<std::int64_t>& stride,
                   const std::vector<std::int64_t>& dilate, const std::vector<std::int64_t>& pad);
// "(3, 3)", MXNet's tuple attribute, of the window's used entries of dims.
std::string window_tuple(const Window& w, const Dims3& dims);

struct ConvolutionParams {
  Window window;
  std::int64_t num_filter = 0;
  std::int32_t num_group = 1;
  bool no_bias = false;
  std::optional<UnaryOp> act;  // fused after the bias, as FullyConnected's; none: identity
  // Whether data and weight lead to a variable (the recorded inputs are detached): backward skips
  // what no variable needs.
  bool data_grad = true, weight_grad = true;
  // MXNet's layout NWC / NHWC / NDHWC: data (batch, spatial..., channels), weight (num_filter,
  // kernel..., channels / num_group), output (batch, out..., num_filter).
  bool channels_last = false;
};

// The sizes of one convolution or pooling, from its operands: x (batch, in_channels, in...),
// weight (out_channels, in_channels / groups, kernel...), y (batch, out_channels, out...). Pooling
// has out_channels = in_channels and one group per channel.
struct ConvGeometry {
  Window window;
  std::int64_t batch = 0, in_channels = 0, out_channels = 0, groups = 1;
  Dims3 in{1, 1, 1}, out{1, 1, 1};
  DType dtype = DType::float32;
  bool channels_last = false;  // the operands stored channels last (cuDNN reads them so)

  NDG_HD std::int64_t in_size() const { return std::int64_t{in[0]} * in[1] * in[2]; }
  NDG_HD std::int64_t out_size() const { return std::int64_t{out[0]} * out[1] * out[2]; }
  NDG_HD std::int64_t kernel_size() const {
    return std::int64_t{window.kernel[0]} * window.kernel[1] * window.kernel[2];
  }
};

// The geometry of x (batch, channels, in...) under window; out from the window (floor, or ceil
// for Pooling's "full" convention). Extents can come out < 1: inference checks them.
ConvGeometry window_geometry(const Window& window, const Shape& x, DType dtype, bool ceil_mode = false);
// A Convolution's: window_geometry with out_channels = num_filter and groups = num_group.
ConvGeometry conv_geometry(const ConvolutionParams& p, const Shape& x, DType dtype);

// The three passes of a convolution: forward y = x ⊛ w; backward_data dx from dy and w;
// backward_filter dw from x and dy.
enum class ConvPass { forward, backward_data, backward_filter };

// One pass on ec's device by im2col + GEMM (OpenBLAS or cuBLAS); out is overwritten.
//   forward:          a = x,  b = w,  out = y
//   backward_data:    a = dy, b = w,  out = dx
//   backward_filter:  a = x,  b = dy, out = dw
void im2col_convolution(const ExecContext& ec, ConvPass pass, const ConvGeometry& g, const void* a, const void* b,
                        void* out);

struct PoolingParams {
  Window window;
  bool max = true;               // pool_type "max", else "avg"
  bool global_pool = false;
  bool full_convention = false;  // pooling_convention "full" (ceil), else "valid" (floor)
  bool count_include_pad = true;
};

// A Pooling's geometry over x: its window, or for global_pool one covering every position.
ConvGeometry pool_geometry(const PoolingParams& p, const Shape& x, DType dtype);

struct BatchNormParams {
  double eps = 1e-3, momentum = 0.9;
  int axis = 1;
  bool fix_gamma = true;
  bool use_global_stats = false;
  // Batch statistics (and the running ones updated) or the running ones alone: decided by the front
  // end when the op runs (autograd::is_training() and not use_global_stats), so a replay repeats it.
  bool training = true;
};

// The dtype of BatchNorm's parameters and statistics for data of dtype x: float32 for float16 and
// bfloat16 data, x's own otherwise.
constexpr DType batch_norm_param_dtype(DType x) { return is_half(x) ? DType::float32 : x; }

// _contrib_SyncBatchNorm: BatchNorm on axis 1 whose batch statistics (and the sums its data
// gradient needs) are taken over the ndev GPUs that run it with the same key at each step.
struct SyncBatchNormParams {
  BatchNormParams bn;
  int ndev = 1;
  char key[80] = {};  // MXNet's key: the layer's name (NUL-terminated)
};

// --- element functions shared by the CPU loops and the CUDA kernels ------------------------------

// i's coordinates in a 3-D extent. I is the index type: the GPU kernels use 32 bits where every
// index fits, as 64-bit division costs several times more.
template <class I>
NDG_HD void unravel3(I i, const Dims3& extent, I (&c)[3]) {
  c[2] = i % extent[2];
  i /= extent[2];
  c[1] = i % extent[1];
  c[0] = i / extent[1];
}

// Element i of the column matrix of one sample, (channels * kernel positions, out positions): the
// input under kernel position r % K of output position i % out, or 0 in the padding.
template <class T>
NDG_HD T im2col_element(const ConvGeometry& g, const T* x, std::int64_t i) {
  const std::int64_t outs = g.out_size(), taps = g.kernel_size();
  const std::int64_t row = i / outs;
  std::int64_t o[3], k[3];
  unravel3(i % outs, g.out, o);
  unravel3(row % taps, g.window.kernel, k);
  std::int64_t offset = row / taps;  // the channel, then each coordinate
  for (int d = 0; d < 3; ++d) {
    const std::int64_t at = o[d] * g.window.stride[d] - g.window.pad[d] + k[d] * g.window.dilation[d];
    if (at < 0 || at >= g.in[d]) return T(0);
    offset = offset * g.in[d] + at;
  }
  return x[offset];
}

// Input element i of one sample (channels * in positions) summed from the column matrix: the
// adjoint of im2col, as a gather (no atomics, deterministic).
template <class T>
NDG_HD T col2im_element(const ConvGeometry& g, const T* col, std::int64_t i) {
  const Window& w = g.window;
  const std::int64_t outs = g.out_size(), taps = g.kernel_size();
  const std::int64_t channel = i / g.in_size();
  std::int64_t at[3];
  unravel3(i % g.in_size(), g.in, at);
  ComputeType<T> sum = 0;
  for (int k0 = 0; k0 < w.kernel[0]; ++k0) {
    const std::int64_t t0 = at[0] + w.pad[0] - std::int64_t{k0} * w.dilation[0];
    if (t0 < 0 || t0 % w.stride[0] != 0 || t0 / w.stride[0] >= g.out[0]) continue;
    for (int k1 = 0; k1 < w.kernel[1]; ++k1) {
      const std::int64_t t1 = at[1] + w.pad[1] - std::int64_t{k1} * w.dilation[1];
      if (t1 < 0 || t1 % w.stride[1] != 0 || t1 / w.stride[1] >= g.out[1]) continue;
      for (int k2 = 0; k2 < w.kernel[2]; ++k2) {
        const std::int64_t t2 = at[2] + w.pad[2] - std::int64_t{k2} * w.dilation[2];
        if (t2 < 0 || t2 % w.stride[2] != 0 || t2 / w.stride[2] >= g.out[2]) continue;
        const std::int64_t tap = (std::int64_t{k0} * w.kernel[1] + k1) * w.kernel[2] + k2;
        const std::int64_t pos = ((t0 / w.stride[0]) * g.out[1] + t1 / w.stride[1]) * g.out[2] + t2 / w.stride[2];
        sum += col[(channel * taps + tap) * outs + pos];
      }
    }
  }
  return static_cast<T>(sum);
}

// One pooling window along dimension d for output coordinate o: [begin, end) over the input, and
// the extent it has within the padded input (avg's divisor with count_include_pad).
template <class I>
struct Span {
  I begin, end, padded;
};
template <class I>
NDG_HD Span<I> pool_span(const ConvGeometry& g, int d, I o) {
  const I start = o * g.window.stride[d] - g.window.pad[d];
  const I limit = g.in[d] + g.window.pad[d];
  const I stop = start + g.window.kernel[d] < limit ? start + g.window.kernel[d] : limit;
  return {start > 0 ? start : I(0), stop < g.in[d] ? stop : I(g.in[d]), stop - start};
}

// avg's divisor for output position o: the window's elements inside the padded input
// (count_include_pad, MXNet's and PyTorch's rule) or inside the input.
template <class I>
NDG_HD I pool_divisor(const ConvGeometry& g, bool include_pad, const I (&o)[3]) {
  I n = 1;
  for (int d = 0; d < 3; ++d) {
    const Span<I> s = pool_span(g, d, o[d]);
    n *= include_pad ? s.padded : s.end - s.begin;
  }
  return n;
}

// Output element i of (batch * channels, out positions): the window's max (and, through argmax,
// its position in the plane) or mean. Every window holds an input element: Pooling's pad is
// smaller than its kernel, and "full" starts no window in the right padding.
template <class T, class I>
NDG_HD T pool_element(const ConvGeometry& g, const PoolingParams& p, const T* x, I i, std::int32_t* argmax) {
  const I outs = static_cast<I>(g.out_size()), ins = static_cast<I>(g.in_size());
  const I plane = i / outs;
  I o[3];
  unravel3(i - plane * outs, g.out, o);
  const Span<I> s0 = pool_span(g, 0, o[0]), s1 = pool_span(g, 1, o[1]), s2 = pool_span(g, 2, o[2]);
  const T* in = x + static_cast<std::int64_t>(plane) * ins;
  T best = T(0);
  ComputeType<T> sum = 0;  // float for float16 and bfloat16
  I best_at = -1;
  for (I a = s0.begin; a < s0.end; ++a) {
    for (I b = s1.begin; b < s1.end; ++b) {
      for (I c = s2.begin; c < s2.end; ++c) {
        const I at = (a * g.in[1] + b) * g.in[2] + c;
        const T v = in[at];
        sum += v;
        if (best_at < 0 || v > best || v != v) {  // NaN propagates, as in PyTorch
          best = v;
          best_at = at;
        }
      }
    }
  }
  if (p.max) {
    argmax[i] = static_cast<std::int32_t>(best_at);
    return best;
  }
  return static_cast<T>(sum / static_cast<ComputeType<T>>(pool_divisor(g, p.count_include_pad, o)));
}

// The outputs along dimension d whose window holds input coordinate at: [first, last].
template <class I>
NDG_HD void covering_outputs(const ConvGeometry& g, int d, I at, I& first, I& last) {
  const I s = g.window.stride[d], from = at + g.window.pad[d] - g.window.kernel[d] + 1;
  first = from <= 0 ? I(0) : (from + s - 1) / s;
  last = (at + g.window.pad[d]) / s;
  if (last > g.out[d] - 1) last = g.out[d] - 1;
}

// Input element i's gradient, a gather over the windows that hold it: dy where it was the max, or
// dy / divisor for avg.
template <class T, class I>
NDG_HD T pool_backward_element(const ConvGeometry& g, const PoolingParams& p, const T* dy, const std::int32_t* argmax,
                               I i) {
  const I outs = static_cast<I>(g.out_size()), ins = static_cast<I>(g.in_size());
  const I plane = i / ins, pos = i - plane * ins;
  I at[3], lo[3], hi[3];
  unravel3(pos, g.in, at);
  for (int d = 0; d < 3; ++d) covering_outputs(g, d, at[d], lo[d], hi[d]);
  const I base = plane * outs;
  ComputeType<T> sum = 0;
  for (I a = lo[0]; a <= hi[0]; ++a) {
    for (I b = lo[1]; b <= hi[1]; ++b) {
      for (I c = lo[2]; c <= hi[2]; ++c) {
        const I o = base + (a * g.out[1] + b) * g.out[2] + c;
        if (p.max) {
          if (argmax[o] == pos) sum += dy[o];
        } else {
          const I oc[3] = {a, b, c};
          sum += dy[o] / static_cast<ComputeType<T>>(pool_divisor(g, p.count_include_pad, oc));
        }
      }
    }
  }
  return static_cast<T>(sum);
}

// Windows that do not overlap (stride >= kernel along every axis): backward then goes one thread
// per output, writing its window (pool_backward_window), a quarter of the threads of the gather
// for 2x2 windows and no search for the covering outputs.
inline bool windows_disjoint(const ConvGeometry& g) {
  for (int d = 0; d < 3; ++d) {
    if (g.window.stride[d] < g.window.kernel[d]) return false;
  }
  return true;
}

// Whether disjoint windows also cover every input element, so that writing the windows writes all
// of dx (no zeroing first): stride == kernel, no padding, and the windows reach the end.
inline bool windows_tile(const ConvGeometry& g) {
  for (int d = 0; d < 3; ++d) {
    const Window& w = g.window;
    if (w.stride[d] != w.kernel[d] || w.pad[d] != 0 || static_cast<std::int64_t>(g.out[d]) * w.stride[d] < g.in[d]) {
      return false;
    }
  }
  return true;
}

// Output i's share of dx, for disjoint windows: dy at the window's max and 0 at its other elements,
// or dy / divisor at each element for avg.
template <class T, class I>
NDG_HD void pool_backward_window(const ConvGeometry& g, const PoolingParams& p, const T* dy, const std::int32_t* argmax,
                                 T* dx, I i) {
  const I outs = static_cast<I>(g.out_size()), ins = static_cast<I>(g.in_size());
  const I plane = i / outs;
  I o[3];
  unravel3(i - plane * outs, g.out, o);
  const Span<I> s0 = pool_span(g, 0, o[0]), s1 = pool_span(g, 1, o[1]), s2 = pool_span(g, 2, o[2]);
  T* out = dx + static_cast<std::int64_t>(plane) * ins;
  const T v = p.max ? dy[i] : static_cast<T>(dy[i] / static_cast<ComputeType<T>>(pool_divisor(g, p.count_include_pad, o)));
  const I best = p.max ? static_cast<I>(argmax[i]) : I(-1);
  for (I a = s0.begin; a < s0.end; ++a) {
    for (I b = s1.begin; b < s1.end; ++b) {
      for (I c = s2.begin; c < s2.end; ++c) {
        const I at = (a * g.in[1] + b) * g.in[2] + c;
        out[at] = !p.max || at == best ? v : T(0);
      }
    }
  }
}

// Whether every index of a pooling over x (and its output) fits in 32 bits.
inline bool fits_int32(const ConvGeometry& g) {
  const std::int64_t limit = std::int64_t{1} << 31;
  return g.batch * g.in_channels * g.in_size() < limit && g.batch * g.in_channels * g.out_size() < limit;
}

namespace gpu {
void im2col(const ExecContext& ec, const ConvGeometry& g, const void* x, void* col);
void col2im(const ExecContext& ec, const ConvGeometry& g, const void* col, void* dx);
// y (batch, channels, positions) = act(y + bias[channel]); bias may be null, act none.
void bias_activation(const ExecContext& ec, const ConvGeometry& g, void* y, const void* bias, std::optional<UnaryOp> act);
// One convolution pass through cuDNN (cuda/cudnn_conv.hpp); false, with nothing queued, in a build
// without cuDNN or for a geometry it has no engine for.
bool cudnn_pass(const ExecContext& ec, ConvPass pass, const ConvGeometry& g, const void* a, const void* b, void* out);
// out (channels,) = x (outer, channels, inner) summed over outer and inner.
void channel_sum(const ExecContext& ec, const ReduceShape& s, DType dtype, const void* x, void* out);
void pooling(const ExecContext& ec, const Invocation& inv);
void pooling_backward(const ExecContext& ec, const Invocation& inv);
void batch_norm(const ExecContext& ec, const Invocation& inv);
void batch_norm_backward(const ExecContext& ec, const Invocation& inv);
void sync_batch_norm(const ExecContext& ec, const Invocation& inv);
void sync_batch_norm_backward(const ExecContext& ec, const Invocation& inv);
}  // namespace gpu

}  // namespace mx::op
