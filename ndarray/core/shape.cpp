#include "ndarray/core/shape.hpp"

#include <ostream>

#include "context/error.hpp"

namespace mx {

std::string Shape::str() const {
  std::string out;
  for (int i = 0; i < ndim(); ++i) {
    if (i) out += 'x';
    out += std::to_string((*this)[i]);
  }
  return out;
}

std::string Shape::tuple_str() const {
  std::string out = "(";
  for (int i = 0; i < ndim(); ++i) {
    if (i) out += ", ";
    out += std::to_string((*this)[i]);
  }
  return out + (ndim() == 1 ? ",)" : ")");
}

std::ostream& operator<<(std::ostream& os, const Shape& shape) { return os << shape.tuple_str(); }

int normalize_axis(const char* op, int axis, const Shape& shape) {
  const int ndim = shape.ndim();
  if (axis < -ndim || axis >= ndim) {
    throw IndexError(std::string(op) + ": axis " + std::to_string(axis) +
                     " is out of range for an array of shape " + shape.tuple_str() + " (ndim " +
                     std::to_string(ndim) + ")");
  }
  return axis < 0 ? axis + ndim : axis;
}

}  // namespace mx
