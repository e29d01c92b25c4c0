#include "gluon/data/vision/transforms.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "ndarray/ndarray.hpp"

namespace mx::gluon::data::vision::transforms {
namespace {

using nd::NDArray;

// A batch of images (n, height, width, channels), one key per image: mx::ShapeError otherwise.
void check_images(const Transform& t, const NDArray& batch, std::span<const SampleKey> keys) {
  nd::check_not_none(t.name(), batch);
  if (batch.ndim() != 4) {
    throw ShapeError(std::string(t.name()) + ": expected images (height, width, channels) or a batch of them, got " +
                     nd::describe(batch));
  }
  if (static_cast<std::int64_t>(keys.size()) != batch.shape()[0]) {
    throw ValueError(std::string(t.name()) + ": " + std::to_string(keys.size()) + " sample keys for a batch of " +
                     std::to_string(batch.shape()[0]));
  }
}

void check_interpolation(const char* name, int interpolation) {
  if (interpolation != 0 && interpolation != 1) {
    throw ValueError(std::string(name) + ": interpolation " + std::to_string(interpolation) +
                     " is not supported; 0 (nearest) and 1 (bilinear) are");
  }
}

Size checked_size(const char* name, Size size) {
  if (size.width < 1 || size.height < 1) {
    throw ValueError(std::string(name) + ": the size must be at least 1 x 1, got (" + std::to_string(size.width) +
                     ", " + std::to_string(size.height) + ")");
  }
  return size;
}

double checked_amount(const char* name, const char* what, double amount) {
  if (!(amount >= 0) || !std::isfinite(amount)) {
    throw ValueError(std::string(name) + ": " + what + " must be >= 0 and finite, got " + std::to_string(amount));
  }
  return amount;
}

double checked_probability(const char* name, double p) {
  if (!(p >= 0 && p <= 1)) throw ValueError(std::string(name) + ": p must be in [0, 1], got " + std::to_string(p));
  return p;
}

using detail::CropPlan;

// A plan of n images, each box unset and unflipped, for an output of width x height.
CropPlan make_plan(std::size_t n, std::int64_t width, std::int64_t height, int interpolation, double fill = 0) {
  CropPlan p;
  p.boxes.assign(4 * n, 0);
  p.flips.assign(n, 0);
  p.width = width;
  p.height = height;
  p.interpolation = interpolation;
  p.fill = fill;
  return p;
}

void set_box(CropPlan& p, std::size_t i, std::int64_t x0, std::int64_t y0, std::int64_t w, std::int64_t h) {
  p.boxes[4 * i] = static_cast<std::int32_t>(x0);
  p.boxes[4 * i + 1] = static_cast<std::int32_t>(y0);
  p.boxes[4 * i + 2] = static_cast<std::int32_t>(w);
  p.boxes[4 * i + 3] = static_cast<std::int32_t>(h);
}

NDArray run_plan(const NDArray& batch, const CropPlan& p) {
  const auto n = static_cast<std::int64_t>(p.flips.size());
  const Context ctx = batch.context();
  return nd::image::crop_resize(batch, nd::array(p.boxes, {n, 4}, ctx), nd::array(p.flips, {n}, ctx), p.height,
                                p.width, p.interpolation, p.fill);
}

// mx.image.scale_down: size shrunk, aspect kept, to fit in (src_w, src_h).
std::pair<std::int64_t, std::int64_t> scale_down(std::int64_t src_w, std::int64_t src_h, Size size) {
  double w = static_cast<double>(size.width), h = static_cast<double>(size.height);
  if (static_cast<double>(src_h) < h) {
    w = w * static_cast<double>(src_h) / h;
    h = static_cast<double>(src_h);
  }
  if (static_cast<double>(src_w) < w) {
    h = h * static_cast<double>(src_w) / w;
    w = static_cast<double>(src_w);
  }
  return {std::max<std::int64_t>(1, static_cast<std::int64_t>(w)), std::max<std::int64_t>(1, static_cast<std::int64_t>(h))};
}

// The centred box of mx.image.center_crop in a w x h image.
void center_box(CropPlan& p, std::size_t i, std::int64_t w, std::int64_t h, Size size) {
  const auto [cw, ch] = scale_down(w, h, size);
  set_box(p, i, (w - cw) / 2, (h - ch) / 2, cw, ch);
}

// One image's colour steps: a row of _image_adjust_colors' factors.
struct ColorRow {
  std::array<float, 12> v{1, 1, 1, 0, 0, 0, 0, -1, -1, -1, -1, -1};
  int steps = 0;
  void add(int step, double alpha) {
    if (step < 4) v[static_cast<std::size_t>(step)] = static_cast<float>(alpha);
    v[static_cast<std::size_t>(7 + steps++)] = static_cast<float>(step);
  }
};

NDArray adjust(const NDArray& batch, const std::vector<ColorRow>& rows) {
  std::vector<float> factors;
  factors.reserve(rows.size() * 12);
  for (const ColorRow& r : rows) factors.insert(factors.end(), r.v.begin(), r.v.end());
  const auto n = static_cast<std::int64_t>(rows.size());
  return nd::image::adjust_colors(batch, nd::array(factors, {n, 12}, batch.context()));
}

// One random colour step per image: its factor drawn by draw(rng).
template <class Draw>
NDArray one_step(const Transform& t, const NDArray& batch, std::span<const SampleKey> keys, int step, Draw draw) {
  check_images(t, batch, keys);
  std::vector<ColorRow> rows(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    SampleRng rng(keys[i]);
    rows[i].add(step, draw(rng));
  }
  return adjust(batch, rows);
}

// AlexNet's PCA lighting: eigenvalues times eigenvectors of ImageNet's RGB covariance, as MXNet's
// AdjustLightingImpl.
constexpr double kEig[3][3] = {{55.46 * -0.5675, 4.794 * 0.7192, 1.148 * 0.4009},
                               {55.46 * -0.5808, 4.794 * -0.0045, 1.148 * -0.8140},
                               {55.46 * -0.5836, 4.794 * -0.6948, 1.148 * 0.4203}};

}  // namespace

NDArray Transform::operator()(const NDArray& x) const {
  nd::check_not_none(name(), x);
  if (x.ndim() == 4) return forward(x, sample_keys(x.shape()[0]));
  if (x.ndim() != 3) {
    throw ShapeError(std::string(name()) + ": expected an image (3-D) or a batch of them (4-D), got " + nd::describe(x));
  }
  const Shape& s = x.shape();
  const NDArray out = forward(x.contiguous().reshape({1, s[0], s[1], s[2]}), sample_keys(1));
  const Shape& o = out.shape();
  return out.reshape({o[1], o[2], o[3]});
}

bool Transform::plan(const NDArray&, std::span<const SampleKey>, CropPlan&) const { return false; }
bool Transform::add_flips(std::span<const SampleKey>, CropPlan&) const { return false; }

Compose::Compose(std::vector<TransformPtr> transforms) : steps_(std::move(transforms)) {
  for (const TransformPtr& t : steps_) {
    if (!t) throw ValueError("Compose: a transform is null");
  }
}

// A geometric step and the flips right after it run as one crop_resize: the flips mirror the
// crop's output, which is what setting the plan's flip bits does.
NDArray Compose::forward(const NDArray& batch, std::span<const SampleKey> keys) const {
  NDArray x = batch;
  const auto keys_of = [&](std::size_t s) {
    std::vector<SampleKey> k(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) k[i] = sub_key(keys[i], s);
    return k;
  };
  for (std::size_t s = 0; s < steps_.size(); ++s) {
    CropPlan p;
    if (x.ndim() == 4 && steps_[s]->plan(x, keys_of(s), p)) {
      while (s + 1 < steps_.size() && steps_[s + 1]->add_flips(keys_of(s + 1), p)) ++s;
      x = run_plan(x, p);
    } else {
      x = steps_[s]->forward(x, keys_of(s));
    }
  }
  return x;
}

NDArray ToTensor::forward(const NDArray& batch, std::span<const SampleKey> keys) const {
  check_images(*this, batch, keys);
  return nd::image::to_tensor(batch);
}

Normalize::Normalize(std::vector<float> mean, std::vector<float> std) : mean_(std::move(mean)), std_(std::move(std)) {
  // The same checks as the op's, at construction (a one-pixel tensor of as many channels).
  const std::size_t c = std::max(mean_.size(), std_.size());
  nd::image::normalize(nd::zeros({static_cast<std::int64_t>(std::max<std::size_t>(c, 1)), 1, 1}, cpu()), mean_, std_);
}

NDArray Normalize::forward(const NDArray& batch, std::span<const SampleKey> keys) const {
  nd::check_not_none(name(), batch);
  if (batch.ndim() != 4) {
    throw ShapeError("Normalize: expected a tensor (channels, height, width) or a batch of them, got " +
                     nd::describe(batch));
  }
  (void)keys;
  return nd::image::normalize(batch, mean_, std_);
}

NDArray Cast::forward(const NDArray& batch, std::span<const SampleKey>) const {
  nd::check_not_none(name(), batch);
  return batch.astype(dtype_);
}

Resize::Resize(Size size, bool keep_ratio, int interpolation)
    : size_(checked_size("Resize", size)), keep_ratio_(keep_ratio), interpolation_(interpolation) {
  check_interpolation(name(), interpolation);
}

NDArray Resize::forward(const NDArray& batch, std::span<const SampleKey> keys) const {
  CropPlan p;
  plan(batch, keys, p);
  return run_plan(batch, p);
}

bool Resize::plan(const NDArray& batch, std::span<const SampleKey> keys, CropPlan& p) const {
  check_images(*this, batch, keys);
  const std::int64_t h = batch.shape()[1], w = batch.shape()[2];
  std::int64_t out_w = size_.width, out_h = size_.height;
  if (keep_ratio_ && size_.square && h > 0 && w > 0) {  // MXNet: the shorter side becomes size
    if (h > w) {
      out_h = std::max<std::int64_t>(1, h * size_.width / w);
    } else {
      out_w = std::max<std::int64_t>(1, w * size_.height / h);
    }
  }
  p = make_plan(keys.size(), out_w, out_h, interpolation_);
  for (std::size_t i = 0; i < keys.size(); ++i) set_box(p, i, 0, 0, w, h);
  return true;
}

CenterCrop::CenterCrop(Size size, int interpolation) : size_(checked_size("CenterCrop", size)), interpolation_(interpolation) {
  check_interpolation(name(), interpolation);
}

NDArray CenterCrop::forward(const NDArray& batch, std::span<const SampleKey> keys) const {
  CropPlan p;
  plan(batch, keys, p);
  return run_plan(batch, p);
}

bool CenterCrop::plan(const NDArray& batch, std::span<const SampleKey> keys, CropPlan& p) const {
  check_images(*this, batch, keys);
  p = make_plan(keys.size(), size_.width, size_.height, interpolation_);
  for (std::size_t i = 0; i < keys.size(); ++i) center_box(p, i, batch.shape()[2], batch.shape()[1], size_);
  return true;
}

RandomResizedCrop::RandomResizedCrop(Size size, std::pair<double, double> scale, std::pair<double, double> ratio,
                                     int interpolation)
    : size_(checked_size("RandomResizedCrop", size)), scale_(scale), ratio_(ratio), interpolation_(interpolation) {
  check_interpolation(name(), interpolation);
  if (!(scale.first > 0 && scale.first <= scale.second && scale.second <= 1)) {
    throw ValueError("RandomResizedCrop: scale must satisfy 0 < low <= high <= 1, got (" + std::to_string(scale.first) +
                     ", " + std::to_string(scale.second) + ")");
  }
  if (!(ratio.first > 0 && ratio.first <= ratio.second)) {
    throw ValueError("RandomResizedCrop: ratio must satisfy 0 < low <= high, got (" + std::to_string(ratio.first) +
                     ", " + std::to_string(ratio.second) + ")");
  }
}

NDArray RandomResizedCrop::forward(const NDArray& batch, std::span<const SampleKey> keys) const {
  CropPlan p;
  plan(batch, keys, p);
  return run_plan(batch, p);
}

bool RandomResizedCrop::plan(const NDArray& batch, std::span<const SampleKey> keys, CropPlan& p) const {
  check_images(*this, batch, keys);
  const std::int64_t h = batch.shape()[1], w = batch.shape()[2];
  const double area = static_cast<double>(h * w);
  const double log_low = std::log(ratio_.first), log_high = std::log(ratio_.second);
  p = make_plan(keys.size(), size_.width, size_.height, interpolation_);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    SampleRng rng(keys[i]);
    bool found = false;
    for (int attempt = 0; attempt < 10 && !found; ++attempt) {  // mx.image.random_size_crop
      const double target = rng.uniform(scale_.first, scale_.second) * area;
      const double aspect = std::exp(rng.uniform(log_low, log_high));
      const auto cw = static_cast<std::int64_t>(std::lround(std::sqrt(target * aspect)));
      const auto ch = static_cast<std::int64_t>(std::lround(std::sqrt(target / aspect)));
      if (cw >= 1 && ch >= 1 && cw <= w && ch <= h) {
        const std::int64_t x0 = rng.integer(0, w - cw), y0 = rng.integer(0, h - ch);
        set_box(p, i, x0, y0, cw, ch);
        found = true;
      }
    }
    if (!found) center_box(p, i, w, h, size_);
  }
  return true;
}

RandomCrop::RandomCrop(Size size, std::int64_t pad, double pad_value, int interpolation)
    : size_(checked_size("RandomCrop", size)), pad_(pad), pad_value_(pad_value), interpolation_(interpolation) {
  check_interpolation(name(), interpolation);
  if (pad < 0) throw ValueError("RandomCrop: pad must be >= 0, got " + std::to_string(pad));
}

NDArray RandomCrop::forward(const NDArray& batch, std::span<const SampleKey> keys) const {
  CropPlan p;
  plan(batch, keys, p);
  return run_plan(batch, p);
}

bool RandomCrop::plan(const NDArray& batch, std::span<const SampleKey> keys, CropPlan& p) const {
  check_images(*this, batch, keys);
  const std::int64_t pw = batch.shape()[2] + 2 * pad_, ph = batch.shape()[1] + 2 * pad_;
  p = make_plan(keys.size(), size_.width, size_.height, interpolation_, pad_value_);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    SampleRng rng(keys[i]);
    const auto [cw, ch] = pw >= size_.width && ph >= size_.height ? std::pair{size_.width, size_.height}
                                                                   : scale_down(pw, ph, size_);
    set_box(p, i, rng.integer(0, pw - cw) - pad_, rng.integer(0, ph - ch) - pad_, cw, ch);
  }
  return true;
}

namespace {

// Sets `bit` in the flips of the images whose draw says so; whether any was.
bool draw_flips(std::span<const SampleKey> keys, double p, std::int32_t bit, std::vector<std::int32_t>& flips) {
  bool any = false;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    SampleRng rng(keys[i]);
    if (rng.bernoulli(p)) {
      flips[i] ^= bit;
      any = true;
    }
  }
  return any;
}

// A flip alone: the whole image, mirrored where drawn (nearest: each pixel copied).
bool flip_plan(const Transform& t, const NDArray& batch, std::span<const SampleKey> keys, double p, std::int32_t bit,
               CropPlan& plan) {
  check_images(t, batch, keys);
  const std::int64_t h = batch.shape()[1], w = batch.shape()[2];
  plan = make_plan(keys.size(), w, h, 0);
  for (std::size_t i = 0; i < keys.size(); ++i) set_box(plan, i, 0, 0, w, h);
  draw_flips(keys, p, bit, plan.flips);
  return true;
}

// The batch itself when no image is mirrored.
NDArray flip_forward(const Transform& t, const NDArray& batch, std::span<const SampleKey> keys, double p,
                     std::int32_t bit) {
  CropPlan plan;
  flip_plan(t, batch, keys, p, bit, plan);
  const bool any = std::any_of(plan.flips.begin(), plan.flips.end(), [](std::int32_t f) { return f != 0; });
  return any ? run_plan(batch, plan) : batch;
}

}  // namespace

RandomFlipLeftRight::RandomFlipLeftRight(double p) : p_(checked_probability("RandomFlipLeftRight", p)) {}

NDArray RandomFlipLeftRight::forward(const NDArray& batch, std::span<const SampleKey> keys) const {
  return flip_forward(*this, batch, keys, p_, 1);
}

bool RandomFlipLeftRight::plan(const NDArray& batch, std::span<const SampleKey> keys, CropPlan& plan) const {
  return flip_plan(*this, batch, keys, p_, 1, plan);
}

bool RandomFlipLeftRight::add_flips(std::span<const SampleKey> keys, CropPlan& plan) const {
  draw_flips(keys, p_, 1, plan.flips);
  return true;
}

RandomFlipTopBottom::RandomFlipTopBottom(double p) : p_(checked_probability("RandomFlipTopBottom", p)) {}

NDArray RandomFlipTopBottom::forward(const NDArray& batch, std::span<const SampleKey> keys) const {
  return flip_forward(*this, batch, keys, p_, 2);
}

bool RandomFlipTopBottom::plan(const NDArray& batch, std::span<const SampleKey> keys, CropPlan& plan) const {
  return flip_plan(*this, batch, keys, p_, 2, plan);
}

bool RandomFlipTopBottom::add_flips(std::span<const SampleKey> keys, CropPlan& plan) const {
  draw_flips(keys, p_, 2, plan.flips);
  return true;
}

RandomBrightness::RandomBrightness(double brightness)
    : amount_(checked_amount("RandomBrightness", "brightness", brightness)) {}

NDArray RandomBrightness::forward(const NDArray& batch, std::span<const SampleKey> keys) const {
  return one_step(*this, batch, keys, 0, [&](SampleRng& r) { return r.uniform(std::max(0.0, 1 - amount_), 1 + amount_); });
}

RandomContrast::RandomContrast(double contrast) : amount_(checked_amount("RandomContrast", "contrast", contrast)) {}

NDArray RandomContrast::forward(const NDArray& batch, std::span<const SampleKey> keys) const {
  return one_step(*this, batch, keys, 1, [&](SampleRng& r) { return r.uniform(std::max(0.0, 1 - amount_), 1 + amount_); });
}

RandomSaturation::RandomSaturation(double saturation)
    : amount_(checked_amount("RandomSaturation", "saturation", saturation)) {}

NDArray RandomSaturation::forward(const NDArray& batch, std::span<const SampleKey> keys) const {
  return one_step(*this, batch, keys, 2, [&](SampleRng& r) { return r.uniform(std::max(0.0, 1 - amount_), 1 + amount_); });
}

RandomHue::RandomHue(double hue) : amount_(checked_amount("RandomHue", "hue", hue)) {}

NDArray RandomHue::forward(const NDArray& batch, std::span<const SampleKey> keys) const {
  return one_step(*this, batch, keys, 3, [&](SampleRng& r) { return r.uniform(-amount_, amount_); });
}

RandomColorJitter::RandomColorJitter(double brightness, double contrast, double saturation, double hue)
    : brightness_(checked_amount("RandomColorJitter", "brightness", brightness)),
      contrast_(checked_amount("RandomColorJitter", "contrast", contrast)),
      saturation_(checked_amount("RandomColorJitter", "saturation", saturation)),
      hue_(checked_amount("RandomColorJitter", "hue", hue)) {}

NDArray RandomColorJitter::forward(const NDArray& batch, std::span<const SampleKey> keys) const {
  check_images(*this, batch, keys);
  const std::array<double, 4> amounts{brightness_, contrast_, saturation_, hue_};
  if (std::all_of(amounts.begin(), amounts.end(), [](double a) { return a == 0; })) return batch;
  std::vector<ColorRow> rows(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    SampleRng rng(keys[i]);
    std::array<int, 4> order{0, 1, 2, 3};
    for (int k = 3; k > 0; --k) std::swap(order[static_cast<std::size_t>(k)], order[static_cast<std::size_t>(rng.integer(0, k))]);
    for (const int step : order) {
      const double a = amounts[static_cast<std::size_t>(step)];
      if (a > 0) rows[i].add(step, step == 3 ? rng.uniform(-a, a) : 1 + rng.uniform(-a, a));
    }
  }
  return adjust(batch, rows);
}

RandomLighting::RandomLighting(double alpha) : alpha_(checked_amount("RandomLighting", "alpha", alpha)) {}

NDArray RandomLighting::forward(const NDArray& batch, std::span<const SampleKey> keys) const {
  check_images(*this, batch, keys);
  if (alpha_ == 0) return batch;
  std::vector<ColorRow> rows(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    SampleRng rng(keys[i]);
    const double a[3] = {rng.normal(0, alpha_), rng.normal(0, alpha_), rng.normal(0, alpha_)};
    for (int c = 0; c < 3; ++c) {
      rows[i].v[static_cast<std::size_t>(4 + c)] = static_cast<float>(kEig[c][0] * a[0] + kEig[c][1] * a[1] + kEig[c][2] * a[2]);
    }
    rows[i].add(4, 0);
  }
  return adjust(batch, rows);
}

}  // namespace mx::gluon::data::vision::transforms
