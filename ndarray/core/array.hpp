#pragma once
// mx::nd::NDArray: a handle to an n-dimensional array on a context (cpu(0) or gpu(i)).
//
// A copy of the handle shares the storage, as in Python; copy() and copyto() are deep copies.
// reshape, operator[], slice, T(), transpose, swapaxes and broadcast_to are views of the same
// storage: a shape, element strides and an offset. Writing through a view writes the base, as in
// NumPy. Kernels read contiguous memory; a strided view is made contiguous on demand.
// GPU work is queued and returns at once; reading the values (asscalar, asxtensor, printing,
// wait_to_read) waits for it.
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "context/context.hpp"
#include "ndarray/core/dtype.hpp"
#include "ndarray/core/shape.hpp"
#include "ndarray/core/storage.hpp"

namespace mx::autograd {
struct Node;
struct NodeAccess;  // the library's access to set_autograd_node (ndarray/autograd/autograd_access.hpp)
}
namespace mx::nd::detail {
struct BufferAccess;  // the graph executor's typed views of raw buffers (ndarray/graph/buffer_access.hpp)
}

namespace mx::nd {

class NDArray {
 public:
  NDArray() = default;  // a null handle: is_none() is true
  // Uninitialised storage of the given shape (nd::empty).
  explicit NDArray(const Shape& shape, Context ctx = current_context(), DType dtype = DType::float32);

  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  Context context() const { return storage_ ? storage_->context() : current_context(); }
  int ndim() const { return shape_.ndim(); }
  std::int64_t size() const { return shape_.numel(); }
  bool is_none() const { return storage_ == nullptr; }
  // Element strides per axis (row-major ones for a contiguous array).
  std::vector<std::int64_t> strides() const;
  // Row-major without gaps, as a new array is. Views with permuted axes, broadcast axes (stride 0)
  // or steps are not.
  bool is_contiguous() const { return strides_.empty(); }
  // Same storage, offset, shape, strides and dtype: the same array (Python's `is`).
  bool is(const NDArray& other) const;
  // Views of one storage whose byte spans overlap (numpy.may_share_memory: for strided views the
  // span from the first to the last element, so interleaved views such as x[0::2] and x[1::2]
  // count as sharing).
  bool shares_memory(const NDArray& other) const;

  // Deep copies. copyto(ctx) always allocates; copyto(dst) writes into dst (same shape and dtype,
  // any context; a view's elements of its base) and returns dst; as_in_context returns *this when
  // already on ctx. The copies are contiguous.
  NDArray copyto(Context ctx) const;
  NDArray copyto(NDArray& dst) const;
  NDArray copy() const;
  NDArray as_in_context(Context ctx) const;
  NDArray astype(DType dtype) const;
  // *this when contiguous, else a contiguous copy (numpy.ascontiguousarray).
  NDArray contiguous() const;

  // Views of the same storage. reshape takes at most one -1; it copies first (as NumPy) when a
  // strided view cannot be reshaped in place. x[i] and slice index the first axis (x[i] of a 1-D
  // array has shape (1,), as in MXNet 1.x); slice(begin, end, step) takes every step-th row of
  // [begin, end) (step >= 1; negative begin and end count from the end).
  NDArray reshape(const Shape& shape) const;
  NDArray operator[](std::int64_t i) const;
  NDArray slice(std::int64_t begin, std::int64_t end) const;
  NDArray slice(std::int64_t begin, std::int64_t end, std::int64_t step) const;
  // Reversed axes, a view (x.T in NumPy).
  NDArray T() const;
  // Permuted axes (default: reversed), a view. (mx.nd.transpose copies; here, as NumPy, it does not.)
  NDArray transpose(const std::vector<int>& axes = {}) const;
  NDArray swapaxes(int axis1, int axis2) const;  // a view
  NDArray flatten() const;  // (d0, d1, ...) -> (d0, d1 * ...)
  // A view of the same storage with the given shape and element strides (>= 0), starting
  // `offset` elements after this array's first element (numpy.lib.stride_tricks.as_strided, but
  // checked to stay inside the storage). Not recorded by autograd: the view ops above are.
  NDArray as_strided(const Shape& shape, const std::vector<std::int64_t>& strides, std::int64_t offset = 0) const;

  // Reductions over every element (result shape (1,)) or along an axis.
  NDArray sum(std::optional<int> axis = {}, bool keepdims = false) const;
  NDArray mean(std::optional<int> axis = {}, bool keepdims = false) const;
  NDArray max(std::optional<int> axis = {}, bool keepdims = false) const;
  NDArray min(std::optional<int> axis = {}, bool keepdims = false) const;
  NDArray argmax(std::optional<int> axis = {}, bool keepdims = false) const;
  NDArray argmin(std::optional<int> axis = {}, bool keepdims = false) const;
  NDArray norm() const;  // L2 norm of all elements, shape (1,)

  // Elementwise, as methods (x.exp() like MXNet's NDArray methods).
  NDArray exp() const;
  NDArray log() const;
  NDArray sqrt() const;
  NDArray abs() const;
  NDArray square() const;
  NDArray relu() const;
  NDArray sigmoid() const;
  NDArray tanh() const;

  // In place: write into this array's storage, seen by every handle that shares it (through a
  // view, the view's elements of the base). A broadcast_to view is read-only.
  NDArray& operator+=(const NDArray& rhs);
  NDArray& operator-=(const NDArray& rhs);
  NDArray& operator*=(const NDArray& rhs);
  NDArray& operator/=(const NDArray& rhs);
  NDArray& operator+=(double rhs);
  NDArray& operator-=(double rhs);
  NDArray& operator*=(double rhs);
  NDArray& operator/=(double rhs);
  NDArray& fill(double value);  // every element = value (x[:] = value)

  // Host access: waits for queued work, then copies to the host (converting to T).
  template <class T> T asscalar() const;
  template <class T = float> std::vector<T> asvector() const;
  // An xt::xarray<T> of this shape. Defined in ndarray/core/xtensor.hpp (which ndarray/ndarray.hpp
  // includes), so that xtensor stays out of this header.
  template <class T = float> auto asxtensor() const;
  void wait_to_read() const;

  // The first element's address on the array's context (for backends and interop). The elements
  // are at data() + strides() · index: contiguous only when is_contiguous().
  void* data() const;

  // Autograd (see ndarray/autograd/autograd.hpp). attach_grad gives this array a zero gradient buffer;
  // ops on it inside autograd::record() are recorded, and backward() fills grad().
  void attach_grad(const std::string& grad_req = "write");
  NDArray grad() const;  // throws mx::Error unless attach_grad was called
  void backward() const;                           // head gradient: ones
  void backward(const NDArray& head_grad) const;
  // The same values without the recorded history (a handle to the same storage).
  NDArray detach() const;
  const std::shared_ptr<autograd::Node>& autograd_node() const { return node_; }

 private:
  friend struct autograd::NodeAccess;
  friend struct detail::BufferAccess;
  void set_autograd_node(std::shared_ptr<autograd::Node> node) { node_ = std::move(node); }

  // Copies the elements to host memory as dtype `as` (converting if needed).
  void copy_to_host(void* dst, DType as) const;

  std::shared_ptr<Storage> storage_;
  Shape shape_;
  DType dtype_ = DType::float32;
  std::size_t offset_ = 0;  // bytes from the start of storage_
  std::vector<std::int64_t> strides_;  // element strides; empty when contiguous
  std::shared_ptr<autograd::Node> node_;  // how this array was computed, when recorded
};

template <class T>
T NDArray::asscalar() const {
  if (size() != 1) {
    throw ShapeError("asscalar: the array must have exactly one element, but its shape is " +
                     shape_.tuple_str());
  }
  T value;
  copy_to_host(&value, dtype_of<T>);
  return value;
}

template <class T>
std::vector<T> NDArray::asvector() const {
  std::vector<T> values(static_cast<std::size_t>(size()));
  copy_to_host(values.data(), dtype_of<T>);
  return values;
}

}  // namespace mx::nd
