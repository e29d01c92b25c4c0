#pragma once
// The image family's attributes, element functions and device entry points: BilinearResize2D
// (ndarray/ops/image.cpp: op, gradient, CPU loops; cuda/ops/image.cu: the launches). The element
// functions are written once for the CPU loops and the CUDA kernels. Internal.
#include <cstdint>

#include "ndarray/core/half.hpp"
#include "ndarray/core/host_device.hpp"
#include "ndarray/ops/op.hpp"

namespace mx::op {

// _contrib_BilinearResize2D's attributes (MXNet's; mode "size": the output is height x width,
// or the input's extents times scale_height / scale_width where those are given, > 0).
struct BilinearResizeParams {
  std::int64_t height = 1, width = 1;
  double scale_height = 0, scale_width = 0;  // 0: not given
  bool align_corners = true;
};

// One resize of data (planes = batch x channels, in_h, in_w) to (planes, out_h, out_w).
struct ResizeGeometry {
  std::int64_t planes, in_h, in_w, out_h, out_w;
  bool align_corners;
};

// Where output position dst reads along an axis of `in` -> `out` positions (PyTorch's and MXNet
// 1.9's area_pixel_compute_source_index): the corners of input and output aligned, or the centres
// of their pixels (OpenCV's INTER_LINEAR, MXNet's image.resize), clamped at 0.
template <class A>
NDG_HD A resize_source(std::int64_t in, std::int64_t out, std::int64_t dst, bool align_corners) {
  if (align_corners) return out > 1 ? static_cast<A>(in - 1) / static_cast<A>(out - 1) * static_cast<A>(dst) : A(0);
  const A src = static_cast<A>(in) / static_cast<A>(out) * (static_cast<A>(dst) + A(0.5)) - A(0.5);
  return src < A(0) ? A(0) : src;
}

// The two input positions an output position mixes, and the weight of the second.
template <class A>
struct ResizeTap {
  std::int64_t first, second;
  A weight;  // of second; first gets 1 - weight
};

template <class A>
NDG_HD ResizeTap<A> resize_tap(std::int64_t in, std::int64_t out, std::int64_t dst, bool align_corners) {
  const A src = resize_source<A>(in, out, dst, align_corners);
  std::int64_t first = static_cast<std::int64_t>(src);
  if (first > in - 1) first = in - 1;
  const std::int64_t second = first < in - 1 ? first + 1 : first;
  return {first, second, src - static_cast<A>(first)};
}

// Output element i of the resize of x.
template <class T>
NDG_HD T resize_element(const ResizeGeometry& g, const T* x, std::int64_t i) {
  using A = ComputeType<T>;
  const std::int64_t ow = i % g.out_w, oh = i / g.out_w % g.out_h, plane = i / (g.out_w * g.out_h);
  const ResizeTap<A> h = resize_tap<A>(g.in_h, g.out_h, oh, g.align_corners);
  const ResizeTap<A> w = resize_tap<A>(g.in_w, g.out_w, ow, g.align_corners);
  const T* p = x + plane * g.in_h * g.in_w;
  const A top = (A(1) - w.weight) * static_cast<A>(p[h.first * g.in_w + w.first]) +
                w.weight * static_cast<A>(p[h.first * g.in_w + w.second]);
  const A bottom = (A(1) - w.weight) * static_cast<A>(p[h.second * g.in_w + w.first]) +
                   w.weight * static_cast<A>(p[h.second * g.in_w + w.second]);
  return static_cast<T>((A(1) - h.weight) * top + h.weight * bottom);
}

// The four (input position, weight) pairs output element i's gradient dy goes to, through add(j, v).
template <class A, class Add>
NDG_HD void resize_scatter(const ResizeGeometry& g, std::int64_t i, A dy, Add&& add) {
  const std::int64_t ow = i % g.out_w, oh = i / g.out_w % g.out_h, plane = i / (g.out_w * g.out_h);
  const ResizeTap<A> h = resize_tap<A>(g.in_h, g.out_h, oh, g.align_corners);
  const ResizeTap<A> w = resize_tap<A>(g.in_w, g.out_w, ow, g.align_corners);
  const std::int64_t base = plane * g.in_h * g.in_w;
  add(base + h.first * g.in_w + w.first, (A(1) - h.weight) * (A(1) - w.weight) * dy);
  add(base + h.first * g.in_w + w.second, (A(1) - h.weight) * w.weight * dy);
  add(base + h.second * g.in_w + w.first, h.weight * (A(1) - w.weight) * dy);
  add(base + h.second * g.in_w + w.second, h.weight * w.weight * dy);
}

ResizeGeometry resize_geometry(const BilinearResizeParams& p, const Shape& x);

namespace gpu {
void bilinear_resize(const ExecContext& ec, const Invocation& inv);
void bilinear_resize_backward(const ExecContext& ec, const Invocation& inv);
}  // namespace gpu

}  // namespace mx::op
