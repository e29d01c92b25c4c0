#include "gluon/init.hpp"

#include <cmath>
#include <sstream>

#include "context/error.hpp"
#include "ndarray/ops/random.hpp"

namespace mx::init {

namespace {
std::string format(const char* name, double value) {
  std::ostringstream os;
  os << name << "(" << value << ")";
  return os.str();
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

void Initializer::fill_by_name(const std::string& name, const std::vector<nd::NDArray>& arrays) const {
  if (ends_with(name, "bias") || ends_with(name, "beta")) return Zero().fill(arrays);
  if (ends_with(name, "gamma")) return One().fill(arrays);
  fill(arrays);
}

void Uniform::fill(const std::vector<nd::NDArray>& arrays) const { nd::random::fill_uniform(arrays, -scale_, scale_); }
std::string Uniform::str() const { return format("Uniform", scale_); }

void Normal::fill(const std::vector<nd::NDArray>& arrays) const { nd::random::fill_normal(arrays, 0.0, sigma_); }
std::string Normal::str() const { return format("Normal", sigma_); }

void Constant::fill(const std::vector<nd::NDArray>& arrays) const {
  for (nd::NDArray a : arrays) a.fill(value_);
}
std::string Constant::str() const { return format("Constant", value_); }

Xavier::Xavier(std::string rnd_type, std::string factor_type, double magnitude)
    : rnd_type_(std::move(rnd_type)), factor_type_(std::move(factor_type)), magnitude_(magnitude) {
  if (rnd_type_ != "uniform" && rnd_type_ != "gaussian") {
    throw ValueError("Xavier: rnd_type must be \"uniform\" or \"gaussian\", not \"" + rnd_type_ + "\"");
  }
  if (factor_type_ != "avg" && factor_type_ != "in" && factor_type_ != "out") {
    throw ValueError("Xavier: factor_type must be \"avg\", \"in\" or \"out\", not \"" + factor_type_ + "\"");
  }
}

void Xavier::fill(const std::vector<nd::NDArray>& arrays) const {
  if (arrays.empty()) return;
  const Shape& shape = arrays[0].shape();
  if (shape.ndim() < 2) {
    throw ShapeError("Xavier initializer needs a weight of at least 2 dimensions, got shape " + shape.tuple_str());
  }
  double receptive = 1;
  for (int d = 2; d < shape.ndim(); ++d) receptive *= static_cast<double>(shape[d]);
  const double fan_in = static_cast<double>(shape[1]) * receptive, fan_out = static_cast<double>(shape[0]) * receptive;
  const double factor = factor_type_ == "avg" ? (fan_in + fan_out) / 2 : factor_type_ == "in" ? fan_in : fan_out;
  const double scale = std::sqrt(magnitude_ / factor);
  if (rnd_type_ == "uniform") nd::random::fill_uniform(arrays, -scale, scale);
  else nd::random::fill_normal(arrays, 0.0, scale);
}

std::string Xavier::str() const {
  std::ostringstream os;
  os << "Xavier(rnd_type=" << rnd_type_ << ", factor_type=" << factor_type_ << ", magnitude=" << magnitude_ << ")";
  return os.str();
}

}  // namespace mx::init
