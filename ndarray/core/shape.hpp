#pragma once
// Shape: the extent of each axis, built from {2, 3}. It is a container of extents, as MXNet's TShape:
// size() and ndim() count the axes, numel() multiplies the extents (1 for a 0-dimensional shape).
#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <vector>

namespace mx {

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims) { assign(dims.begin(), dims.size()); }
  explicit Shape(const std::vector<std::int64_t>& dims) { assign(dims.data(), dims.size()); }
  // Copies copy the axes in use only: every array handle and op copies shapes.
  Shape(const Shape& other) { assign(other.data(), other.ndim_); }
  Shape& operator=(const Shape& other) {
    if (this != &other) assign(other.data(), other.ndim_);
    return *this;
  }
  Shape(Shape&& other) noexcept = default;
  Shape& operator=(Shape&& other) noexcept = default;

  int ndim() const { return static_cast<int>(ndim_); }
  std::size_t size() const { return ndim_; }  // the number of axes, as std::vector's size()
  bool empty() const { return ndim_ == 0; }
  std::int64_t numel() const {  // product of the extents
    std::int64_t n = 1;
    for (std::int64_t d : *this) n *= d;
    return n;
  }
  std::int64_t operator[](int axis) const { return data()[axis]; }
  std::int64_t& operator[](int axis) { return data()[axis]; }
  std::vector<std::int64_t> dims() const { return {begin(), end()}; }
  const std::int64_t* begin() const { return data(); }
  const std::int64_t* end() const { return data() + ndim_; }

  std::string str() const;        // "2x3", as MXNet prints it after an array
  std::string tuple_str() const;  // "(2, 3)", as in Python

  friend bool operator==(const Shape& a, const Shape& b) {
    if (a.ndim_ != b.ndim_) return false;
    for (std::size_t i = 0; i < a.ndim_; ++i) {  // a loop: std::equal calls memcmp, slower for a few axes
      if (a.data()[i] != b.data()[i]) return false;
    }
    return true;
  }
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }

 private:
  // Up to kInline axes are stored in the object itself, so that copying a shape (every array
  // handle and op does) allocates nothing; more axes go to the heap.
  static constexpr std::size_t kInline = 8;
  void assign(const std::int64_t* dims, std::size_t n) {
    ndim_ = n;
    if (n > kInline) heap_.assign(dims, dims + n);
    else for (std::size_t i = 0; i < n && i < kInline; ++i) inline_[i] = dims[i];
    // (inline_ beyond ndim_ is never read, so a copy leaves it as it was)
  }
  const std::int64_t* data() const { return ndim_ > kInline ? heap_.data() : inline_.data(); }
  std::int64_t* data() { return ndim_ > kInline ? heap_.data() : inline_.data(); }

  std::size_t ndim_ = 0;
  std::array<std::int64_t, kInline> inline_{};
  std::vector<std::int64_t> heap_;
};

std::ostream& operator<<(std::ostream& os, const Shape& shape);  // (2, 3)

// Normalises a possibly negative axis for an array of ndim dimensions; throws mx::IndexError
// naming op and shape when it is out of range.
int normalize_axis(const char* op, int axis, const Shape& shape);

}  // namespace mx
