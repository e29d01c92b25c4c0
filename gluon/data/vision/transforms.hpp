#pragma once
// mx::gluon::data::vision::transforms: MXNet's image transforms (mxnet.gluon.data.vision.transforms),
// with its names, arguments and semantics, on one image or a batch, on any context:
//
//   namespace T = mx::gluon::data::vision::transforms;
//   T::Compose train(T::RandomResizedCrop(224), T::RandomFlipLeftRight(),
//                    T::RandomColorJitter(0.4, 0.4, 0.4), T::RandomLighting(0.1), T::ToTensor(),
//                    T::Normalize({0.485, 0.456, 0.406}, {0.229, 0.224, 0.225}));
//   auto x = train(image);        // (height, width, 3) uint8 -> (3, 224, 224) float32
//   auto b = train(batch);        // (n, height, width, 3) -> (n, 3, 224, 224), each image its own draws
//
// Images are (height, width, channels), uint8 or floating, values on the 0-255 scale; tensors
// (ToTensor's output, Normalize's input) are (channels, height, width); a 4-D array is a batch of
// them, on cpu(0) or a GPU, and runs as one op per transform there. Random transforms draw each
// sample's parameters from its own generator (Note [per-sample random draws], sample_random.hpp):
// in a DataLoader an epoch gives the same images for one seed whatever the workers, and on a GPU
// the same crops and flips as on cpu(0).
//
// In a DataLoader, per sample on the workers (MXNet's dataset.transform_first), or per batch:
//
//   gdata::DataLoader loader(gdata::transform_first(images, train), 256, true, "discard", 8);
//   gdata::DataLoader gpu_loader(cifar_train, 256, true, "discard");
//   gpu_loader.transform_on(mx::gpu(0), train);   // the batch copied to gpu(0) and transformed there
#include <concepts>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "gluon/data/sample_random.hpp"
#include "ndarray/core/array.hpp"

namespace mx::gluon::data::vision::transforms {

namespace detail {
// The crops, pads, resizes and flips of a batch as one nd::image::crop_resize: per image a box
// (x0, y0, width, height) and flip bits, and the output's size, interpolation and fill.
struct CropPlan {
  std::vector<std::int32_t> boxes, flips;
  std::int64_t width = 0, height = 0;
  int interpolation = 1;
  double fill = 0;
};
}  // namespace detail

class Transform {
 public:
  virtual ~Transform() = default;
  // An image (3-D) or a batch (4-D); the keys are those of the DataLoader's samples when it calls,
  // else fresh ones (sample_keys). Another rank is an mx::ShapeError naming the transform.
  nd::NDArray operator()(const nd::NDArray& x) const;
  // A batch (n, ...) with one key per sample.
  virtual nd::NDArray forward(const nd::NDArray& batch, std::span<const SampleKey> keys) const = 0;
  virtual const char* name() const = 0;  // MXNet's class name, for errors

 protected:
  friend class Compose;
  // The geometric transforms describe their work as a plan, so that Compose runs a crop and the
  // flips after it as one op (the same values as one after the other): plan() fills it (true) for
  // a batch of images; add_flips() adds a flip's bits to the plan of the transform before it.
  virtual bool plan(const nd::NDArray& batch, std::span<const SampleKey> keys, detail::CropPlan& plan) const;
  virtual bool add_flips(std::span<const SampleKey> keys, detail::CropPlan& plan) const;
};

using TransformPtr = std::shared_ptr<const Transform>;

// The transforms in order, each drawing with its own stream of the sample's key.
class Compose : public Transform {
 public:
  template <class... T>
    requires(std::derived_from<T, Transform> && ...)
  explicit Compose(T... transforms) : steps_{std::make_shared<const T>(std::move(transforms))...} {}
  explicit Compose(std::vector<TransformPtr> transforms);
  nd::NDArray forward(const nd::NDArray& batch, std::span<const SampleKey> keys) const override;
  const char* name() const override { return "Compose"; }

 private:
  std::vector<TransformPtr> steps_;
};

// An output size: one number for a square, or Size(width, height) as MXNet's size tuples
// (CenterCrop(Size(8, 6)) for MXNet's CenterCrop((8, 6))).
struct Size {
  Size(std::int64_t side) : width(side), height(side), square(true) {}  // NOLINT: Resize(224) reads as MXNet
  Size(std::int64_t w, std::int64_t h) : width(w), height(h) {}
  std::int64_t width, height;
  bool square = false;  // given as one number (what Resize's keep_ratio reads)
};

// Images (any dtype) to float32 tensors (channels, height, width) / 255: mx.nd.image.to_tensor.
class ToTensor : public Transform {
 public:
  nd::NDArray forward(const nd::NDArray& batch, std::span<const SampleKey> keys) const override;
  const char* name() const override { return "ToTensor"; }
};

// Tensors normalized per channel, (x - mean[c]) / std[c]; one value for every channel or one per
// channel (at most 4).
class Normalize : public Transform {
 public:
  explicit Normalize(std::vector<float> mean = {0.0f}, std::vector<float> std = {1.0f});
  nd::NDArray forward(const nd::NDArray& batch, std::span<const SampleKey> keys) const override;
  const char* name() const override { return "Normalize"; }

 private:
  std::vector<float> mean_, std_;
};

// The values as dtype (default float32).
class Cast : public Transform {
 public:
  explicit Cast(DType dtype = DType::float32) : dtype_(dtype) {}
  nd::NDArray forward(const nd::NDArray& batch, std::span<const SampleKey> keys) const override;
  const char* name() const override { return "Cast"; }

 private:
  DType dtype_;
};

// interpolation 0 (nearest) or 1 (bilinear, MXNet's default) for every transform that resizes;
// another value is an mx::ValueError.

// Resized to size; with keep_ratio and one number, the shorter side becomes size and the other
// keeps the aspect ratio (MXNet's Resize(size, keep_ratio, interpolation)).
class Resize : public Transform {
 public:
  explicit Resize(Size size, bool keep_ratio = false, int interpolation = 1);
  nd::NDArray forward(const nd::NDArray& batch, std::span<const SampleKey> keys) const override;
  const char* name() const override { return "Resize"; }

 protected:
  bool plan(const nd::NDArray& batch, std::span<const SampleKey> keys, detail::CropPlan& plan) const override;

 private:
  Size size_;
  bool keep_ratio_;
  int interpolation_;
};

// The centre: the largest centred box of size's aspect ratio that fits, at most size, resized to
// size (an image at least as large as size is cropped, not resized), as mx.image.center_crop.
class CenterCrop : public Transform {
 public:
  explicit CenterCrop(Size size, int interpolation = 1);
  nd::NDArray forward(const nd::NDArray& batch, std::span<const SampleKey> keys) const override;
  const char* name() const override { return "CenterCrop"; }

 protected:
  bool plan(const nd::NDArray& batch, std::span<const SampleKey> keys, detail::CropPlan& plan) const override;

 private:
  Size size_;
  int interpolation_;
};

// A box of a random area (scale of the image's) and aspect ratio (log-uniform in ratio) resized to
// size: MXNet's random_size_crop, ten tries, then the centre crop.
class RandomResizedCrop : public Transform {
 public:
  explicit RandomResizedCrop(Size size, std::pair<double, double> scale = {0.08, 1.0},
                             std::pair<double, double> ratio = {3.0 / 4.0, 4.0 / 3.0}, int interpolation = 1);
  nd::NDArray forward(const nd::NDArray& batch, std::span<const SampleKey> keys) const override;
  const char* name() const override { return "RandomResizedCrop"; }

 protected:
  bool plan(const nd::NDArray& batch, std::span<const SampleKey> keys, detail::CropPlan& plan) const override;

 private:
  Size size_;
  std::pair<double, double> scale_, ratio_;
  int interpolation_;
};

// A random box of size from the image padded by pad pixels of pad_value on every side (CIFAR's
// "pad 4, crop 32"); an image smaller than size (after padding) gives its largest box of size's
// aspect ratio, resized.
class RandomCrop : public Transform {
 public:
  explicit RandomCrop(Size size, std::int64_t pad = 0, double pad_value = 0, int interpolation = 1);
  nd::NDArray forward(const nd::NDArray& batch, std::span<const SampleKey> keys) const override;
  const char* name() const override { return "RandomCrop"; }

 protected:
  bool plan(const nd::NDArray& batch, std::span<const SampleKey> keys, detail::CropPlan& plan) const override;

 private:
  Size size_;
  std::int64_t pad_;
  double pad_value_;
  int interpolation_;
};

// Mirrored left-right (top-bottom) with probability p.
class RandomFlipLeftRight : public Transform {
 public:
  explicit RandomFlipLeftRight(double p = 0.5);
  nd::NDArray forward(const nd::NDArray& batch, std::span<const SampleKey> keys) const override;
  const char* name() const override { return "RandomFlipLeftRight"; }

 protected:
  bool plan(const nd::NDArray& batch, std::span<const SampleKey> keys, detail::CropPlan& plan) const override;
  bool add_flips(std::span<const SampleKey> keys, detail::CropPlan& plan) const override;

 private:
  double p_;
};

class RandomFlipTopBottom : public Transform {
 public:
  explicit RandomFlipTopBottom(double p = 0.5);
  nd::NDArray forward(const nd::NDArray& batch, std::span<const SampleKey> keys) const override;
  const char* name() const override { return "RandomFlipTopBottom"; }

 protected:
  bool plan(const nd::NDArray& batch, std::span<const SampleKey> keys, detail::CropPlan& plan) const override;
  bool add_flips(std::span<const SampleKey> keys, detail::CropPlan& plan) const override;

 private:
  double p_;
};

// The colour transforms (images, 1 or 3 channels; saturation, hue and lighting leave one channel
// alone). Factors as MXNet draws them: brightness, contrast and saturation multiply by a factor
// uniform in [max(0, 1 - b), 1 + b]; hue turns by uniform(-h, h) x 360 degrees; RandomColorJitter
// applies those whose amount is > 0 in a random order, each factor 1 + uniform(-a, a) (hue
// uniform(-h, h)); RandomLighting adds AlexNet's PCA noise with deviation alpha. Amounts must be
// >= 0 (mx::ValueError).
class RandomBrightness : public Transform {
 public:
  explicit RandomBrightness(double brightness);
  nd::NDArray forward(const nd::NDArray& batch, std::span<const SampleKey> keys) const override;
  const char* name() const override { return "RandomBrightness"; }

 private:
  double amount_;
};

class RandomContrast : public Transform {
 public:
  explicit RandomContrast(double contrast);
  nd::NDArray forward(const nd::NDArray& batch, std::span<const SampleKey> keys) const override;
  const char* name() const override { return "RandomContrast"; }

 private:
  double amount_;
};

class RandomSaturation : public Transform {
 public:
  explicit RandomSaturation(double saturation);
  nd::NDArray forward(const nd::NDArray& batch, std::span<const SampleKey> keys) const override;
  const char* name() const override { return "RandomSaturation"; }

 private:
  double amount_;
};

class RandomHue : public Transform {
 public:
  explicit RandomHue(double hue);
  nd::NDArray forward(const nd::NDArray& batch, std::span<const SampleKey> keys) const override;
  const char* name() const override { return "RandomHue"; }

 private:
  double amount_;
};

class RandomColorJitter : public Transform {
 public:
  explicit RandomColorJitter(double brightness = 0, double contrast = 0, double saturation = 0, double hue = 0);
  nd::NDArray forward(const nd::NDArray& batch, std::span<const SampleKey> keys) const override;
  const char* name() const override { return "RandomColorJitter"; }

 private:
  double brightness_, contrast_, saturation_, hue_;
};

class RandomLighting : public Transform {
 public:
  explicit RandomLighting(double alpha);
  nd::NDArray forward(const nd::NDArray& batch, std::span<const SampleKey> keys) const override;
  const char* name() const override { return "RandomLighting"; }

 private:
  double alpha_;
};

}  // namespace mx::gluon::data::vision::transforms
