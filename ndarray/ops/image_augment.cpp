// The image family's augmentation ops, what gluon::data::vision::transforms runs on one image or a
// batch, on any context: _image_to_tensor and _image_normalize (MXNet's ops), _image_crop_resize
// (a box per image resized, padded and mirrored: the crops, resizes and flips) and
// _image_adjust_colors (MXNet's brightness, contrast, saturation, hue and lighting steps, factors
// per image). The random draws are made by the caller and passed in as arrays, so that the same
// draws give the same images on cpu(0) and on a GPU. Here: the front ends, inference, gradients and
// CPU loops; the element functions are in ndarray/ops/image_kernels.hpp, the launches in
// cuda/ops/image.cu.
#include <cmath>
#include <string>
#include <vector>

#include "ndarray/core/checks.hpp"
#include "ndarray/ops/attrs.hpp"
#include "ndarray/ops/image.hpp"
#include "ndarray/ops/image_kernels.hpp"
#include "ndarray/ops/parallel.hpp"

namespace mx::op {
namespace {

using nd::NDArray;

constexpr const char* kToTensor = "_image_to_tensor";
constexpr const char* kNormalize = "_image_normalize";
constexpr const char* kCropResize = "_image_crop_resize";
constexpr const char* kAdjustColors = "_image_adjust_colors";

// An image (h, w, c) or a batch of them (n, h, w, c) (to_tensor), or a tensor (c, h, w) or
// (n, c, h, w) (normalize): mx::ShapeError naming the op otherwise.
void check_image_rank(const char* op, const NDArray& x, const char* layout) {
  if (x.ndim() != 3 && x.ndim() != 4) {
    throw ShapeError(std::string(op) + ": data must be " + layout + " or a batch of them, got " + nd::describe(x));
  }
}

// --- _image_to_tensor ----------------------------------------------------------------------------

void to_tensor_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray& x = inv.inputs[0];
  check_image_rank(kToTensor, x, "an image (height, width, channels)");
  const Shape& s = x.shape();
  out = {{x.ndim() == 3 ? Shape{s[2], s[0], s[1]} : Shape{s[0], s[3], s[1], s[2]}, DType::float32}};
}

void to_tensor_cpu(const ExecContext&, const Invocation& inv) {
  const NDArray &x = inv.inputs[0], &y = inv.outputs[0];
  const Shape& s = x.shape();
  const int d = x.ndim();
  const std::int64_t c = s[d - 1], pixels = s[d - 3] * s[d - 2];
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(x.data());
    float* out = static_cast<float*>(y.data());
    parallel_for(y.size(), [&](std::int64_t i) { out[i] = to_tensor_element(in, pixels, c, i); }, y.size());
  });
}

const OpDef& to_tensor_op() {
  static const OpDef def{kToTensor, &to_tensor_infer, &to_tensor_cpu, NDG_GPU_KERNEL(gpu::to_tensor), nullptr};
  static const OpDef& reg = register_op(def);
  return reg;
}

// --- _image_normalize ----------------------------------------------------------------------------

const NormalizeParams& normalize_params(const Invocation& inv) { return inv.params.as<NormalizeParams>(); }

void normalize_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray& x = inv.inputs[0];
  nd::check_floating(kNormalize, x);
  check_image_rank(kNormalize, x, "a tensor (channels, height, width)");
  const std::int64_t c = x.shape()[x.ndim() - 3];
  const std::int32_t count = normalize_params(inv).count;
  if (count != 1 && count != c) {
    throw ShapeError(std::string(kNormalize) + ": mean and std have " + std::to_string(count) +
                     " values, but the data " + nd::describe(x) + " has " + std::to_string(c) +
                     " channels; give one value, or one per channel");
  }
  out = {{x.shape(), x.dtype()}};
}

// The data's channels and pixels per channel.
std::pair<std::int64_t, std::int64_t> channels_and_pixels(const NDArray& x) {
  const Shape& s = x.shape();
  const int d = x.ndim();
  return {s[d - 3], s[d - 2] * s[d - 1]};
}

void normalize_cpu(const ExecContext&, const Invocation& inv) {
  const NDArray &x = inv.inputs[0], &y = inv.outputs[0];
  const std::int64_t c = channels_and_pixels(x).first, pixels = channels_and_pixels(x).second;
  const NormalizeParams& p = normalize_params(inv);
  dispatch_floating(x.dtype(), kNormalize, [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(x.data());
    T* out = static_cast<T*>(y.data());
    parallel_for(y.size(), [&](std::int64_t i) { out[i] = normalize_element(p, in, pixels, c, i); }, y.size());
  });
}

const OpDef& normalize_op();

// d/dx (x - mean) / std = 1 / std: the same op with the means at 0.
std::vector<NDArray> normalize_gradient(const Invocation& inv, const std::vector<NDArray>& out_grads) {
  NormalizeParams p = normalize_params(inv);
  for (float& m : p.mean) m = 0;
  return {invoke1(normalize_op(), {out_grads[0]}, p)};
}

std::string real_tuple(const float* v, std::int32_t count) {
  std::string t = "(";
  for (std::int32_t i = 0; i < count; ++i) t += (i ? ", " : "") + format_real(v[i]);
  return t + (count == 1 ? ",)" : ")");
}

std::vector<std::pair<std::string, std::string>> normalize_attrs(const Params& params) {
  const auto& p = params.as<NormalizeParams>();
  return {{"mean", real_tuple(p.mean, p.count)}, {"std", real_tuple(p.std, p.count)}};
}

// mean and std: both one value, or both one per channel (at most kMaxNormalizeChannels); every std
// > 0. mx::ValueError naming the op otherwise.
NormalizeParams checked_normalize(const std::vector<float>& mean, const std::vector<float>& std) {
  const auto bad = [](const std::string& what) { return ValueError(std::string(kNormalize) + ": " + what); };
  if (mean.empty() || std.empty()) throw bad("mean and std need at least one value each");
  if (mean.size() > static_cast<std::size_t>(kMaxNormalizeChannels) ||
      std.size() > static_cast<std::size_t>(kMaxNormalizeChannels)) {
    throw bad("mean and std take at most " + std::to_string(kMaxNormalizeChannels) + " values, got " +
              std::to_string(mean.size()) + " and " + std::to_string(std.size()));
  }
  NormalizeParams p;
  const std::size_t count = std::max(mean.size(), std.size());
  if ((mean.size() != 1 && mean.size() != count) || (std.size() != 1 && std.size() != count)) {
    throw bad("mean has " + std::to_string(mean.size()) + " values and std " + std::to_string(std.size()) +
              "; give one value or one per channel for each");
  }
  p.count = static_cast<std::int32_t>(count);
  for (std::size_t i = 0; i < count; ++i) {
    p.mean[i] = mean[mean.size() == 1 ? 0 : i];
    p.std[i] = std[std.size() == 1 ? 0 : i];
    if (!(p.std[i] > 0) || !std::isfinite(p.std[i])) {
      throw bad("std must be positive and finite, got " + format_real(p.std[i]) + " for channel " + std::to_string(i));
    }
  }
  return p;
}

// MXNet's defaults: mean 0, std 1.
Params normalize_parse(const AttrList& attrs) {
  AttrReader a(kNormalize, attrs);
  const auto floats = [&](const char* name, double fallback) {
    std::vector<float> v;
    for (const double d : a.real_tuple(name, {fallback})) v.push_back(static_cast<float>(d));
    return v;
  };
  const std::vector<float> mean = floats("mean", 0), std = floats("std", 1);
  a.finish();
  return checked_normalize(mean, std);
}

const OpDef& normalize_op() {
  static const OpDef def{kNormalize, &normalize_infer, &normalize_cpu, NDG_GPU_KERNEL(gpu::normalize),
                         &normalize_gradient, &normalize_attrs, &normalize_parse};
  static const OpDef& reg = register_op(def);
  return reg;
}

// --- _image_crop_resize --------------------------------------------------------------------------

const CropResizeParams& crop_params(const Invocation& inv) { return inv.params.as<CropResizeParams>(); }

// data (n, h, w, c) uint8 or floating, boxes (n, 4) int32, flips (n,) int32.
void crop_resize_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray &x = inv.inputs[0], &boxes = inv.inputs[1], &flips = inv.inputs[2];
  if (x.dtype() != DType::uint8) nd::check_floating(kCropResize, x);
  if (x.ndim() != 4) {
    throw ShapeError(std::string(kCropResize) + ": data must be images (batch, height, width, channels), got " +
                     nd::describe(x));
  }
  const std::int64_t n = x.shape()[0];
  if (boxes.dtype() != DType::int32 || boxes.shape() != Shape{n, 4} || flips.dtype() != DType::int32 ||
      flips.shape() != Shape{n}) {
    throw ShapeError(std::string(kCropResize) + ": boxes must be (" + std::to_string(n) + ", 4) int32 and flips (" +
                     std::to_string(n) + ",) int32 for data " + nd::describe(x) + ", got " + nd::describe(boxes) +
                     " and " + nd::describe(flips));
  }
  const CropResizeParams& p = crop_params(inv);
  out = {{Shape{n, p.height, p.width, x.shape()[3]}, x.dtype()}};
}

void crop_resize_cpu(const ExecContext&, const Invocation& inv) {
  const NDArray &x = inv.inputs[0], &y = inv.outputs[0];
  const CropGeometry g = crop_geometry(crop_params(inv), x.shape());
  if (g.c == 0) return;
  const auto* boxes = static_cast<const std::int32_t*>(inv.inputs[1].data());
  const auto* flips = static_cast<const std::int32_t*>(inv.inputs[2].data());
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(x.data());
    T* out = static_cast<T*>(y.data());
    // A row of output pixels at a time: its tap along y once, the taps along x from a table per image.
    const std::int64_t n = x.shape()[0];
    parallel_for(n * g.out_h, [&](std::int64_t row) {
      const std::int64_t s = row / g.out_h;
      const std::int32_t* box = boxes + 4 * s;
      thread_local std::vector<CropTap> taps;
      taps.resize(static_cast<std::size_t>(g.out_w));
      for (std::int64_t ox = 0; ox < g.out_w; ++ox) taps[static_cast<std::size_t>(ox)] = crop_tap_x(g, box, flips[s], ox);
      const CropTap ty = crop_tap_y(g, box, flips[s], row % g.out_h);
      const T* image = in + s * g.in_h * g.in_w * g.c;
      T* o = out + row * g.out_w * g.c;
      for (std::int64_t ox = 0; ox < g.out_w; ++ox) blend_taps(g, image, ty, taps[static_cast<std::size_t>(ox)], o + ox * g.c);
    }, y.size() * 8);
  });
}

std::vector<std::pair<std::string, std::string>> crop_resize_attrs(const Params& params) {
  const auto& p = params.as<CropResizeParams>();
  return {{"height", std::to_string(p.height)},
          {"width", std::to_string(p.width)},
          {"interp", std::to_string(p.interp)},
          {"fill", format_real(p.fill)}};
}

CropResizeParams checked_crop(std::int64_t height, std::int64_t width, int interp, double fill) {
  if (height < 1 || width < 1) {
    throw ValueError(std::string(kCropResize) + ": the output must be at least 1 x 1, got " + std::to_string(height) +
                     " x " + std::to_string(width));
  }
  if (interp != 0 && interp != 1) {
    throw ValueError(std::string(kCropResize) + ": interpolation " + std::to_string(interp) +
                     " is not supported; 0 (nearest) and 1 (bilinear) are");
  }
  return {height, width, interp, static_cast<float>(fill)};
}

Params crop_resize_parse(const AttrList& attrs) {
  AttrReader a(kCropResize, attrs);
  const std::int64_t height = a.integer("height"), width = a.integer("width");
  const int interp = static_cast<int>(a.integer("interp", 1));
  const double fill = a.real("fill", 0);
  a.finish();
  return checked_crop(height, width, interp, fill);
}

const OpDef& crop_resize_op() {
  static const OpDef def{kCropResize, &crop_resize_infer, &crop_resize_cpu, NDG_GPU_KERNEL(gpu::crop_resize), nullptr,
                         &crop_resize_attrs, &crop_resize_parse};
  static const OpDef& reg = register_op(def);
  return reg;
}

// --- _image_adjust_colors ------------------------------------------------------------------------

// data (n, h, w, c) uint8 or floating with c 1 or 3, factors (n, kColorColumns) float32.
void adjust_colors_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray &x = inv.inputs[0], &f = inv.inputs[1];
  if (x.dtype() != DType::uint8) nd::check_floating(kAdjustColors, x);
  if (x.ndim() != 4 || (x.shape()[3] != 1 && x.shape()[3] != 3)) {
    throw ShapeError(std::string(kAdjustColors) +
                     ": data must be images (batch, height, width, channels) of 1 or 3 channels, got " + nd::describe(x));
  }
  if (f.dtype() != DType::float32 || f.shape() != Shape{x.shape()[0], kColorColumns}) {
    throw ShapeError(std::string(kAdjustColors) + ": factors must be (" + std::to_string(x.shape()[0]) + ", " +
                     std::to_string(kColorColumns) + ") float32 for data " + nd::describe(x) + ", got " +
                     nd::describe(f));
  }
  out = {{x.shape(), x.dtype()}};
}

void adjust_colors_cpu(const ExecContext&, const Invocation& inv) {
  const NDArray &x = inv.inputs[0], &y = inv.outputs[0];
  const auto* factors = static_cast<const float*>(inv.inputs[1].data());
  const std::int64_t n = x.shape()[0], c = x.shape()[3], pixels = x.shape()[1] * x.shape()[2];
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    parallel_for(n, [&](std::int64_t s) {
      const T* in = static_cast<const T*>(x.data()) + s * pixels * c;
      T* out = static_cast<T*>(y.data()) + s * pixels * c;
      const float* f = factors + s * kColorColumns;
      float v[3];
      // The gray mean of the image as the contrast step finds it, in double.
      float mean = 0;
      if (const int at = contrast_position(f); at < kColorMaxSteps) {
        double sum = 0;
        for (std::int64_t p = 0; p < pixels; ++p) {
          load_pixel(in, p, c, v);
          color_steps<T>(f, at, 0.0f, c, v);
          sum += color_gray(v, c);
        }
        mean = static_cast<float>(sum / static_cast<double>(pixels));
      }
      for (std::int64_t p = 0; p < pixels; ++p) {
        load_pixel(in, p, c, v);
        color_steps<T>(f, kColorMaxSteps, mean, c, v);
        for (std::int64_t j = 0; j < c; ++j) out[p * c + j] = static_cast<T>(v[j]);
      }
    }, x.size() * 8);
  });
}

const OpDef& adjust_colors_op() {
  static const OpDef def{kAdjustColors, &adjust_colors_infer, &adjust_colors_cpu, NDG_GPU_KERNEL(gpu::adjust_colors),
                         nullptr};
  static const OpDef& reg = register_op(def);
  return reg;
}

[[maybe_unused]] const bool image_augment_family_registered =
    (to_tensor_op(), normalize_op(), crop_resize_op(), adjust_colors_op(), true);

}  // namespace

CropGeometry crop_geometry(const CropResizeParams& p, const Shape& x) {
  return {x[1], x[2], x[3], p.height, p.width, p.interp, p.fill};
}
}  // namespace mx::op

namespace mx::nd::image {

NDArray to_tensor(const NDArray& data) {
  detail::check_not_none(op::kToTensor, data);
  return op::invoke1(op::to_tensor_op(), {data}, op::Params{});
}

NDArray normalize(const NDArray& data, const std::vector<float>& mean, const std::vector<float>& std) {
  detail::check_not_none(op::kNormalize, data);
  return op::invoke1(op::normalize_op(), {data}, op::checked_normalize(mean, std));
}

NDArray crop_resize(const NDArray& data, const NDArray& boxes, const NDArray& flips, std::int64_t height,
                    std::int64_t width, int interp, double fill) {
  for (const NDArray* a : {&data, &boxes, &flips}) detail::check_not_none(op::kCropResize, *a);
  return op::invoke1(op::crop_resize_op(), {data, boxes, flips}, op::checked_crop(height, width, interp, fill));
}

NDArray adjust_colors(const NDArray& data, const NDArray& factors) {
  detail::check_not_none(op::kAdjustColors, data);
  detail::check_not_none(op::kAdjustColors, factors);
  return op::invoke1(op::adjust_colors_op(), {data, factors}, op::Params{});
}

}  // namespace mx::nd::image
