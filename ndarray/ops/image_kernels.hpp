#pragma once
// The image family's attributes, element functions and device entry points: BilinearResize2D
// (ndarray/ops/image.cpp: op, gradient, CPU loops), the augmentation ops (_image_to_tensor,
// _image_normalize, _image_crop_resize, _image_adjust_colors: ndarray/ops/image_augment.cpp) and
// their launches (cuda/ops/image.cu). The element functions are written once for the CPU loops and
// the CUDA kernels. Internal.
#include <cmath>
#include <cstdint>
#include <type_traits>

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


// ---- The augmentation ops: images (n, height, width, channels), one sample per leading index ----

// A float value stored as T: uint8 rounded to nearest and clamped to [0, 255] (OpenCV's
// saturate_cast; MXNet's colour ops truncate instead, which darkens each step by half a level on
// average and makes exact values such as a hue turn's preserved extremes fall one level at random),
// other integers rounded, floating types cast.
template <class T>
NDG_HD T store_pixel(float v) {
  if constexpr (std::is_same_v<T, std::uint8_t>) {
    v = v < 0.0f ? 0.0f : (v > 255.0f ? 255.0f : v);
    return static_cast<T>(v + 0.5f);
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(::rintf(v));
  } else {
    return static_cast<T>(v);
  }
}

// _image_to_tensor: output element i of (n, c, h, w) float32 from x (n, h, w, c), divided in float
// as MXNet's ToTensor (x / 255.0f).
template <class T>
NDG_HD float to_tensor_element(const T* x, std::int64_t pixels, std::int64_t c, std::int64_t i) {
  const std::int64_t p = i % pixels, ch = i / pixels % c, n = i / (pixels * c);
  return static_cast<float>(x[(n * pixels + p) * c + ch]) / 255.0f;
}

// _image_normalize's attributes: one mean and deviation for every channel (count 1) or one per
// channel (count = channels <= kMaxNormalizeChannels), as MXNet's NormalizeParam.
constexpr int kMaxNormalizeChannels = 4;
struct NormalizeParams {
  std::int32_t count = 1;
  float mean[kMaxNormalizeChannels] = {0, 0, 0, 0};
  float std[kMaxNormalizeChannels] = {1, 1, 1, 1};
};

// Output element i of x (n, c, pixels): (x - mean[c]) / std[c], in float.
template <class T>
NDG_HD T normalize_element(const NormalizeParams& p, const T* x, std::int64_t pixels, std::int64_t c, std::int64_t i) {
  const std::int64_t ch = p.count == 1 ? 0 : i / pixels % c;
  return static_cast<T>((static_cast<float>(x[i]) - p.mean[ch]) / p.std[ch]);
}

// _image_crop_resize: from each image n, the box boxes[n] = (x0, y0, width, height) (int32 pixels;
// it may reach outside the image, whose missing pixels read `fill`) resized to height x width,
// mirrored where flips[n] has bit 0 (left-right) or bit 1 (top-bottom). interp 0: nearest
// (OpenCV's INTER_NEAREST, src = floor(dst * scale)); 1: bilinear with pixel centres aligned
// (INTER_LINEAR, clamped at the box's edges as a resize of the cropped image is). A box of the
// output's size reads its pixels exactly: crops, pads and flips move values unchanged.
struct CropResizeParams {
  std::int64_t height = 1, width = 1;
  std::int32_t interp = 1;
  float fill = 0;
};

struct CropGeometry {
  std::int64_t in_h, in_w, c, out_h, out_w;
  std::int32_t interp;
  float fill;
};

// Along one axis: the two box positions output position dst mixes and the second one's weight.
struct CropTap {
  std::int64_t first, second;
  float weight;
};

NDG_HD CropTap crop_tap(std::int64_t start, std::int64_t extent, std::int64_t out, std::int64_t dst,
                               bool linear) {
  const float scale = static_cast<float>(extent) / static_cast<float>(out);
  if (!linear) {
    std::int64_t s = static_cast<std::int64_t>(::floorf(static_cast<float>(dst) * scale));
    if (s > extent - 1) s = extent - 1;
    return {start + s, start + s, 0.0f};
  }
  float src = (static_cast<float>(dst) + 0.5f) * scale - 0.5f;
  if (src < 0.0f) src = 0.0f;
  std::int64_t first = static_cast<std::int64_t>(src);
  if (first > extent - 1) first = extent - 1;
  const std::int64_t second = first < extent - 1 ? first + 1 : first;
  return {start + first, start + second, src - static_cast<float>(first)};
}

// One output pixel of an image (all its channels, into out[0, c)) from its taps along y and x: the
// four source pixels blended, those outside the image reading fill.
template <class T>
NDG_HD void blend_taps(const CropGeometry& g, const T* image, const CropTap& ty, const CropTap& tx, T* out) {
  const auto at = [&](std::int64_t y, std::int64_t xx) -> const T* {
    return y < 0 || y >= g.in_h || xx < 0 || xx >= g.in_w ? nullptr : image + (y * g.in_w + xx) * g.c;
  };
  const T *a = at(ty.first, tx.first), *b = at(ty.first, tx.second), *c = at(ty.second, tx.first),
          *d = at(ty.second, tx.second);
  const float wx = tx.weight, wy = ty.weight;
  for (std::int64_t ch = 0; ch < g.c; ++ch) {
    const float va = a ? static_cast<float>(a[ch]) : g.fill, vb = b ? static_cast<float>(b[ch]) : g.fill;
    const float vc = c ? static_cast<float>(c[ch]) : g.fill, vd = d ? static_cast<float>(d[ch]) : g.fill;
    const float top = (1.0f - wx) * va + wx * vb, bottom = (1.0f - wx) * vc + wx * vd;
    out[ch] = store_pixel<T>((1.0f - wy) * top + wy * bottom);
  }
}

// The tap along y of output row oy of image n, and along x of output column ox (flips applied).
NDG_HD CropTap crop_tap_y(const CropGeometry& g, const std::int32_t* box, std::int32_t flip, std::int64_t oy) {
  return crop_tap(box[1], box[3], g.out_h, (flip & 2) ? g.out_h - 1 - oy : oy, g.interp == 1);
}
NDG_HD CropTap crop_tap_x(const CropGeometry& g, const std::int32_t* box, std::int32_t flip, std::int64_t ox) {
  return crop_tap(box[0], box[2], g.out_w, (flip & 1) ? g.out_w - 1 - ox : ox, g.interp == 1);
}

// Output pixel p of the batch, p = (n * out_h + oy) * out_w + ox (a GPU thread's work).
template <class T>
NDG_HD void crop_resize_pixel(const CropGeometry& g, const T* x, const std::int32_t* boxes, const std::int32_t* flips,
                              std::int64_t p, T* out) {
  const std::int64_t ox = p % g.out_w, oy = p / g.out_w % g.out_h, n = p / (g.out_w * g.out_h);
  const std::int32_t* box = boxes + 4 * n;
  blend_taps(g, x + n * g.in_h * g.in_w * g.c, crop_tap_y(g, box, flips[n], oy), crop_tap_x(g, box, flips[n], ox), out);
}

// _image_adjust_colors: per image, a row of kColorColumns float32 factors: the alphas of
// brightness, contrast, saturation and hue (columns 0-3), the lighting offsets added to r, g, b
// (4-6), then the steps to apply in order (7-11: ColorStep values, -1 ends the list). Each step is
// MXNet's (src/operator/image/image_random-inl.h), its result stored in the image's dtype before
// the next (store_pixel), as MXNet's RandomColorJitter chains its ops:
//   brightness  v * a
//   contrast    v * a + (1 - a) * mean gray of the image entering the step (gray = 0.299 r +
//               0.587 g + 0.114 b; one channel: the value)
//   saturation  gray * (1 - a) + v * a, gray of this pixel (MXNet 1.9's loop keeps only the blue
//               term of its gray, a slip; here the whole sum, as intended and as torchvision)
//   hue         h += a * 360 in HLS (values on the 0-255 scale)
//   lighting    v + offset[channel] (AlexNet's PCA noise, offsets from RandomLighting)
// Saturation, hue and lighting leave one-channel images unchanged.
constexpr int kColorColumns = 12;
constexpr int kColorMaxSteps = 5;
enum ColorStep : int { kColorBrightness = 0, kColorContrast = 1, kColorSaturation = 2, kColorHue = 3, kColorLighting = 4 };

NDG_HD float color_gray(const float* v, std::int64_t c) {
  return c == 3 ? 0.299f * v[0] + 0.587f * v[1] + 0.114f * v[2] : v[0];
}

// v (0-255 r, g, b) rotated by degrees of hue through HLS, as OpenCV's and MXNet's conversions.
NDG_HD void rotate_hue(float* v, float degrees) {
  const float r = v[0] / 255.0f, g = v[1] / 255.0f, b = v[2] / 255.0f;
  const float vmax = ::fmaxf(r, ::fmaxf(g, b)), vmin = ::fminf(r, ::fminf(g, b));
  const float diff = vmax - vmin, l = (vmax + vmin) * 0.5f;
  if (!(diff > 1.1920929e-7f)) return;  // gray: no hue to turn (FLT_EPSILON, as MXNet)
  const float s = l < 0.5f ? diff / (vmax + vmin) : diff / (2.0f - vmax - vmin);
  float h = vmax == r ? (g - b) * 60.0f / diff
                      : (vmax == g ? (b - r) * 60.0f / diff + 120.0f : (r - g) * 60.0f / diff + 240.0f);
  if (h < 0.0f) h += 360.0f;
  h = (h + degrees) / 60.0f;
  h -= 6.0f * ::floorf(h / 6.0f);  // into [0, 6)
  if (h >= 6.0f) h = 0.0f;
  const int sector = static_cast<int>(h);
  const float f = h - static_cast<float>(sector);
  const float p2 = l <= 0.5f ? l * (1.0f + s) : l + s - l * s, p1 = 2.0f * l - p2;
  const float tab[4] = {p2, p1, p1 + (p2 - p1) * (1.0f - f), p1 + (p2 - p1) * f};
  // Which of tab the b, g, r of each 60-degree sector take (OpenCV's c_HlsSectorData).
  constexpr int sectors[6][3] = {{1, 3, 0}, {1, 0, 2}, {3, 0, 1}, {0, 2, 1}, {0, 1, 3}, {2, 1, 0}};
  v[2] = tab[sectors[sector][0]] * 255.0f;
  v[1] = tab[sectors[sector][1]] * 255.0f;
  v[0] = tab[sectors[sector][2]] * 255.0f;
}

// Applies the steps of row f before step `upto` (all: kColorMaxSteps) to one pixel v[0, c), the
// contrast step with the image's gray mean `mean`.
template <class T>
NDG_HD void color_steps(const float* f, int upto, float mean, std::int64_t c, float* v) {
  for (int k = 0; k < upto; ++k) {
    const int step = static_cast<int>(f[7 + k]);
    if (step < 0) return;
    if (c != 3 && step >= kColorSaturation) continue;
    const float a = step < kColorLighting ? f[step] : 0.0f;
    if (step == kColorBrightness) {
      for (std::int64_t j = 0; j < c; ++j) v[j] *= a;
    } else if (step == kColorContrast) {
      for (std::int64_t j = 0; j < c; ++j) v[j] = v[j] * a + (1.0f - a) * mean;
    } else if (step == kColorSaturation) {
      const float gray = color_gray(v, 3) * (1.0f - a);
      for (int j = 0; j < 3; ++j) v[j] = gray + v[j] * a;
    } else if (step == kColorHue) {
      rotate_hue(v, a * 360.0f);
    } else {
      for (int j = 0; j < 3; ++j) v[j] += f[4 + j];
    }
    for (std::int64_t j = 0; j < c; ++j) v[j] = static_cast<float>(store_pixel<T>(v[j]));
  }
}

// The position of the contrast step in row f (kColorMaxSteps: none).
NDG_HD int contrast_position(const float* f) {
  for (int k = 0; k < kColorMaxSteps; ++k) {
    const int step = static_cast<int>(f[7 + k]);
    if (step < 0) break;
    if (step == kColorContrast) return k;
  }
  return kColorMaxSteps;
}

// Pixel p of image x (its c values, c <= 3) as floats.
template <class T>
NDG_HD void load_pixel(const T* x, std::int64_t p, std::int64_t c, float* v) {
  for (std::int64_t j = 0; j < c; ++j) v[j] = static_cast<float>(x[p * c + j]);
}

ResizeGeometry resize_geometry(const BilinearResizeParams& p, const Shape& x);
CropGeometry crop_geometry(const CropResizeParams& p, const Shape& x);

namespace gpu {
void bilinear_resize(const ExecContext& ec, const Invocation& inv);
void bilinear_resize_backward(const ExecContext& ec, const Invocation& inv);
void to_tensor(const ExecContext& ec, const Invocation& inv);
void normalize(const ExecContext& ec, const Invocation& inv);
void crop_resize(const ExecContext& ec, const Invocation& inv);
void adjust_colors(const ExecContext& ec, const Invocation& inv);
}  // namespace gpu

}  // namespace mx::op
