#pragma once
// Initializers, as mx.init: Uniform, Normal, Xavier, Zero, One, Constant.
// Values are generated on each target context (cuRAND on GPUs), and every copy of one parameter
// gets the same values: all contexts draw at one position of their generators.
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "ndarray/core/array.hpp"

namespace mx::init {

class Initializer {
 public:
  virtual ~Initializer() = default;
  // Fills every array (one per context, one shape) with the same values.
  virtual void fill(const std::vector<nd::NDArray>& arrays) const = 0;
  // MXNet's default-initializer dispatch on the parameter name: names ending in "bias" or "beta"
  // get zeros, "gamma" ones, and everything else fill().
  void fill_by_name(const std::string& name, const std::vector<nd::NDArray>& arrays) const;
  virtual std::string str() const = 0;  // "Uniform(0.07)"
  virtual std::shared_ptr<const Initializer> clone() const = 0;
};

// Implements clone() for an initializer class.
template <class Derived, class Base = Initializer>
class Cloneable : public Base {
 public:
  using Base::Base;
  std::shared_ptr<const Initializer> clone() const override {
    return std::make_shared<Derived>(static_cast<const Derived&>(*this));
  }
};

// Uniform on (-scale, scale]. MXNet's default initializer is Uniform(0.07).
class Uniform : public Cloneable<Uniform> {
 public:
  explicit Uniform(double scale = 0.07) : scale_(scale) {}
  void fill(const std::vector<nd::NDArray>& arrays) const override;
  std::string str() const override;

 private:
  double scale_;
};

// Normal with mean 0 and deviation sigma.
class Normal : public Cloneable<Normal> {
 public:
  explicit Normal(double sigma = 0.01) : sigma_(sigma) {}
  void fill(const std::vector<nd::NDArray>& arrays) const override;
  std::string str() const override;

 private:
  double sigma_;
};

// Xavier/Glorot: scale = sqrt(magnitude / factor), factor from fan_in = shape[1] * receptive field
// and fan_out = shape[0] * receptive field ("avg": their mean, "in", "out"); values uniform on
// (-scale, scale] or normal with deviation scale.
class Xavier : public Cloneable<Xavier> {
 public:
  explicit Xavier(std::string rnd_type = "uniform", std::string factor_type = "avg", double magnitude = 3.0);
  void fill(const std::vector<nd::NDArray>& arrays) const override;
  std::string str() const override;

 private:
  std::string rnd_type_, factor_type_;
  double magnitude_;
};

class Constant : public Cloneable<Constant> {
 public:
  explicit Constant(double value) : value_(value) {}
  void fill(const std::vector<nd::NDArray>& arrays) const override;
  std::string str() const override;

 private:
  double value_;
};

class Zero : public Cloneable<Zero, Constant> {
 public:
  Zero() : Cloneable(0.0) {}
  std::string str() const override { return "Zero()"; }
};

class One : public Cloneable<One, Constant> {
 public:
  One() : Cloneable(1.0) {}
  std::string str() const override { return "One()"; }
};

// A shared, immutable initializer; built implicitly from any initializer value, so that
// `Dense(10, "", true, 0, mx::init::Normal(0.01))` reads like Python. Empty means "the default".
class InitializerRef {
 public:
  InitializerRef() = default;
  InitializerRef(std::nullptr_t) {}
  template <class I, class = std::enable_if_t<std::is_base_of_v<Initializer, I>>>
  InitializerRef(const I& init) : init_(init.clone()) {}

  const Initializer* get() const { return init_.get(); }
  explicit operator bool() const { return init_ != nullptr; }
  const Initializer& operator*() const { return *init_; }

 private:
  std::shared_ptr<const Initializer> init_;
};

}  // namespace mx::init
