#pragma once
// Shape: the extent of each axis, built from {2, 3}. It is a container of extents, as MXNet's TShape:
// size() and ndim() count the axes, numel() multiplies the extents (1 for a 0-dimensional shape).
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <vector>

namespace mx {

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<std::int64_t> dims) : dims_(std::move(dims)) {}

  int ndim() const { return static_cast<int>(dims_.size()); }
  std::size_t size() const { return dims_.size(); }  // the number of axes, as std::vector's size()
  bool empty() const { return dims_.empty(); }
  std::int64_t numel() const;  // product of the extents
  std::int64_t operator[](int axis) const { return dims_[static_cast<std::size_t>(axis)]; }
  std::int64_t& operator[](int axis) { return dims_[static_cast<std::size_t>(axis)]; }
  const std::vector<std::int64_t>& dims() const { return dims_; }
  auto begin() const { return dims_.begin(); }
  auto end() const { return dims_.end(); }

  std::string str() const;        // "2x3", as MXNet prints it after an array
  std::string tuple_str() const;  // "(2, 3)", as in Python

  friend bool operator==(const Shape& a, const Shape& b) { return a.dims_ == b.dims_; }
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }

 private:
  std::vector<std::int64_t> dims_;
};

std::ostream& operator<<(std::ostream& os, const Shape& shape);  // (2, 3)

// Normalises a possibly negative axis for an array of ndim dimensions; throws mx::IndexError
// naming op and shape when it is out of range.
int normalize_axis(const char* op, int axis, const Shape& shape);

}  // namespace mx
