#include "ndarray/core/array.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "ndarray/autograd/autograd.hpp"
#include "ndarray/backend/backend.hpp"
#include "ndarray/core/checks.hpp"
#include "ndarray/core/contiguous.hpp"
#include "ndarray/ops/creation.hpp"
#include "ndarray/ops/creation_kernels.hpp"
#include "ndarray/ops/elementwise.hpp"
#include "ndarray/ops/elementwise_kernels.hpp"
#include "ndarray/ops/manipulation.hpp"
#include "ndarray/ops/reduce.hpp"

namespace mx::nd {

namespace {

std::size_t byte_size(const Shape& shape, DType dtype) {
  detail::check_shape("NDArray", shape, dtype);
  // At least one byte, so that empty arrays still own distinct storage.
  return std::max<std::size_t>(1, static_cast<std::size_t>(shape.numel()) * dtype_size(dtype));
}

// Row-major without gaps: each axis of extent > 1 steps over the extents after it.
bool is_row_major(const Shape& shape, const std::vector<std::int64_t>& strides) {
  std::int64_t expected = 1;
  for (int d = shape.ndim() - 1; d >= 0; --d) {
    if (shape[d] != 1 && strides[static_cast<std::size_t>(d)] != expected) return false;
    expected *= shape[d];
  }
  return true;
}

// Elements from the first to the last of a non-empty view, inclusive.
std::int64_t element_span(const Shape& shape, const std::vector<std::int64_t>& strides) {
  std::int64_t span = 1;
  for (int d = 0; d < shape.ndim(); ++d) span += (shape[d] - 1) * strides[static_cast<std::size_t>(d)];
  return span;
}

}  // namespace

namespace detail {

GatherIndex view_index(const char* op, const NDArray& x) { return make_view_index(op, x.shape(), x.strides()); }

NDArray dense(const NDArray& x) {
  if (x.is_none() || x.is_contiguous()) return x;
  NDArray out(x.shape(), x.context(), x.dtype());
  backend(x.context()).gather(x.context(), x.dtype(), view_index("copy", x), x.data(), out.data());
  return out;
}

void write_into(const NDArray& src, const NDArray& dst) {
  if (dst.is_contiguous()) {
    backend(dst.context()).copy(dst.context(), dst.data(), src.data(),
                                static_cast<std::size_t>(dst.size()) * dtype_size(dst.dtype()));
    return;
  }
  backend(dst.context()).scatter(dst.context(), dst.dtype(), view_index("copyto", dst), src.data(), dst.data());
}

void check_writable(const char* op, const NDArray& dst) {
  if (dst.is_contiguous()) return;
  const std::vector<std::int64_t> strides = dst.strides();
  for (int d = 0; d < dst.ndim(); ++d) {
    if (dst.shape()[d] > 1 && strides[static_cast<std::size_t>(d)] == 0) {
      throw ValueError(std::string(op) + ": " + describe(dst) +
                       " is a broadcast view (its axis " + std::to_string(d) +
                       " repeats one element) and is read-only; write into a copy");
    }
  }
}

}  // namespace detail

NDArray::NDArray(const Shape& shape, Context ctx, DType dtype)
    : storage_(std::make_shared<Storage>(ctx, byte_size(shape, dtype))), shape_(shape), dtype_(dtype) {}

std::vector<std::int64_t> NDArray::strides() const {
  return strides_.empty() ? contiguous_strides(shape_) : strides_;
}

bool NDArray::is(const NDArray& other) const {
  return storage_ == other.storage_ && offset_ == other.offset_ && shape_ == other.shape_ &&
         strides_ == other.strides_ && dtype_ == other.dtype_;
}

bool NDArray::shares_memory(const NDArray& other) const {
  if (storage_ == nullptr || storage_ != other.storage_ || size() == 0 || other.size() == 0) return false;
  const std::size_t end = offset_ + static_cast<std::size_t>(element_span(shape_, strides())) * dtype_size(dtype_);
  const std::size_t other_end =
      other.offset_ + static_cast<std::size_t>(element_span(other.shape_, other.strides())) * dtype_size(other.dtype_);
  return offset_ < other_end && other.offset_ < end;
}

NDArray NDArray::as_strided(const Shape& shape, const std::vector<std::int64_t>& strides, std::int64_t offset) const {
  detail::check_not_none("as_strided", *this);
  detail::check_shape("as_strided", shape, dtype_);
  if (strides.size() != shape.size()) {
    throw ShapeError("as_strided: " + std::to_string(strides.size()) + " strides for shape " + shape.tuple_str());
  }
  const std::size_t item = dtype_size(dtype_);
  if (shape.numel() > 0) {
    // The last element must lie inside the storage (strides and offset >= 0, so the first does).
    bool bad = offset < 0;
    std::int64_t last = offset;  // in elements from data()
    for (int d = 0; d < shape.ndim() && !bad; ++d) {
      const std::int64_t stride = strides[static_cast<std::size_t>(d)];
      std::int64_t step = 0;
      bad = stride < 0 || __builtin_mul_overflow(shape[d] - 1, stride, &step) ||
            __builtin_add_overflow(last, step, &last);
    }
    if (bad || offset_ + (static_cast<std::size_t>(last) + 1) * item > storage_->bytes()) {
      throw ValueError("as_strided: shape " + shape.tuple_str() + " with the given strides and offset " +
                       std::to_string(offset) + " reaches outside the storage of " + detail::describe(*this));
    }
  }
  NDArray view = *this;
  view.shape_ = shape;
  view.offset_ = offset_ + static_cast<std::size_t>(offset) * item;
  view.strides_ = shape.numel() == 0 || is_row_major(shape, strides) ? std::vector<std::int64_t>{} : strides;
  view.node_.reset();
  return view;
}

void* NDArray::data() const { return static_cast<char*>(storage_->data()) + offset_; }

NDArray NDArray::copyto(Context ctx) const {
  detail::check_not_none("copyto", *this);
  if (ctx == context()) return copy();
  NDArray out;
  {
    const UploadScope upload(context(), ctx);  // from the host: a destination that need not wait
    out = NDArray(shape_, ctx, dtype_);
    copyto(out);
  }
  if (autograd::needs_record({this})) {
    // The gradient goes back to where the source lives: backward runs on the forward's contexts.
    autograd::record_op("copyto", out, {this}, [src = context()](const NDArray& g) {
      return std::vector<NDArray>{g.copyto(src)};
    });
  }
  return out;
}

NDArray NDArray::copyto(NDArray& dst) const {
  detail::check_not_none("copyto", *this);
  detail::check_not_none("copyto", dst);
  if (dst.shape_ != shape_ || dst.dtype_ != dtype_) {
    throw ShapeError("copyto: destination " + detail::describe(dst) + " does not match source " +
                     detail::describe(*this) + "; shapes and dtypes must be equal");
  }
  if (is(dst)) return dst;
  detail::check_writable("copyto", dst);
  if (size() == 0) return dst;
  const std::size_t bytes = static_cast<std::size_t>(size()) * dtype_size(dtype_);
  if (!is_contiguous() && dst.is_contiguous() && dst.context() == context() && !shares_memory(dst)) {
    // A strided source into a contiguous destination beside it: one gather.
    backend(context()).gather(context(), dtype_, detail::view_index("copyto", *this), data(), dst.data());
    return dst;
  }
  // The source's values in contiguous memory: a strided one gathered into a fresh array, one that
  // overlaps dst (memcpy's undefined case) copied first.
  NDArray src = *this;
  if (!is_contiguous()) src = detail::dense(*this);
  else if (shares_memory(dst)) src = detach().copy();
  if (dst.is_contiguous()) {
    copy_across(dst.context(), dst.data(), context(), src.data(), bytes);
    return dst;
  }
  // A strided destination: the values on dst's context, then written into its elements.
  NDArray staged = src;
  if (context() != dst.context()) {
    staged = NDArray(shape_, dst.context(), dtype_);
    copy_across(dst.context(), staged.data(), context(), src.data(), bytes);
  }
  detail::write_into(staged, dst);
  return dst;
}

NDArray NDArray::copy() const {
  detail::check_not_none("copy", *this);
  return op::invoke1(op::copy_op(), {*this});
}

NDArray NDArray::contiguous() const {
  detail::check_not_none("contiguous", *this);
  return is_contiguous() ? *this : copy();
}

NDArray NDArray::as_in_context(Context ctx) const {
  detail::check_not_none("as_in_context", *this);
  return ctx == context() ? *this : copyto(ctx);
}

NDArray NDArray::astype(DType dtype) const {
  detail::check_not_none("astype", *this);
  return cast(*this, dtype);
}

NDArray NDArray::reshape(const Shape& shape) const {
  detail::check_not_none("reshape", *this);
  std::vector<std::int64_t> dims(shape.begin(), shape.end());
  int unknown = -1;
  std::int64_t known = 1;  // the product of the given extents
  bool overflow = false;   // it exceeds int64: more elements than any array has
  for (int d = 0; d < shape.ndim(); ++d) {
    if (dims[static_cast<std::size_t>(d)] == -1 && unknown < 0) {
      unknown = d;
    } else if (dims[static_cast<std::size_t>(d)] < 0) {
      throw ShapeError("reshape: bad target shape " + shape.tuple_str() +
                       " (at most one -1, other extents >= 0)");
    } else {
      overflow = overflow || __builtin_mul_overflow(known, dims[static_cast<std::size_t>(d)], &known);
    }
  }
  if (!overflow && unknown >= 0 && known > 0 && size() % known == 0) {
    dims[static_cast<std::size_t>(unknown)] = size() / known;
  }
  Shape target(dims);
  if (overflow || (unknown >= 0 && (known == 0 || size() % known != 0)) || target.numel() != size()) {
    throw ShapeError("reshape: cannot reshape array of shape " + shape_.tuple_str() + " (" +
                     std::to_string(size()) + " elements) into shape " + shape.tuple_str());
  }
  // A strided view keeps its layout when only extent-1 axes come or go (x.T()[0]); any other
  // reshape of it copies first, as NumPy's.
  std::vector<std::int64_t> strides;
  if (!is_contiguous()) {
    const std::vector<std::int64_t> from = this->strides();
    std::vector<std::int64_t> kept_dims, kept_strides, target_dims;  // extents > 1 only
    for (int d = 0; d < ndim(); ++d) {
      if (shape_[d] == 1) continue;
      kept_dims.push_back(shape_[d]);
      kept_strides.push_back(from[static_cast<std::size_t>(d)]);
    }
    for (std::int64_t extent : target) {
      if (extent != 1) target_dims.push_back(extent);
    }
    if (kept_dims != target_dims) return contiguous().reshape(target);
    std::size_t next = 0;
    for (std::int64_t extent : target) strides.push_back(extent == 1 ? 0 : kept_strides[next++]);
  }
  NDArray view = strides.empty() ? *this : as_strided(target, strides);
  view.shape_ = target;
  view.node_.reset();
  if (autograd::needs_record({this})) {
    autograd::record_op("reshape", view, {this}, [from = shape_](const NDArray& g) {
      return std::vector<NDArray>{g.reshape(from)};
    });
  }
  return view;
}

NDArray NDArray::slice(std::int64_t begin, std::int64_t end) const { return slice(begin, end, 1); }

NDArray NDArray::slice(std::int64_t begin, std::int64_t end, std::int64_t step) const {
  detail::check_not_none("slice", *this);
  if (step < 1) throw ValueError("slice: step must be >= 1, got " + std::to_string(step));
  if (ndim() == 0) throw IndexError("slice: cannot slice a 0-dimensional array");
  const std::int64_t n = shape_[0];
  if (begin < 0) begin += n;
  if (end < 0) end += n;
  if (begin < 0 || end > n || begin > end) {
    throw IndexError("slice: range [" + std::to_string(begin) + ", " + std::to_string(end) +
                     ") is out of range for axis 0 of shape " + shape_.tuple_str());
  }
  // Rows begin, begin + step, ... before end: axis 0's stride times step.
  std::vector<std::int64_t> dims(shape_.begin(), shape_.end()), strides = this->strides();
  dims[0] = (end - begin + step - 1) / step;
  const std::int64_t first = begin * strides[0];
  strides[0] *= step;
  NDArray view = as_strided(Shape(dims), strides, first);
  if (autograd::needs_record({this})) {
    // The gradient of the selected rows is g; of the other rows, 0.
    autograd::record_op("slice", view, {this}, [shape = shape_, begin, end, step](const NDArray& g) {
      NDArray full = zeros(shape, g.context(), g.dtype());
      NDArray rows = full.slice(begin, end, step);
      g.copyto(rows);
      return std::vector<NDArray>{full};
    });
  }
  return view;
}

NDArray NDArray::operator[](std::int64_t i) const {
  detail::check_not_none("operator[]", *this);
  if (ndim() == 0) throw IndexError("operator[]: cannot index a 0-dimensional array");
  const std::int64_t n = shape_[0];
  if (i < -n || i >= n) {
    throw IndexError("operator[]: index " + std::to_string(i) + " is out of range for axis 0 of shape " +
                     shape_.tuple_str());
  }
  NDArray row = slice(i < 0 ? i + n : i, (i < 0 ? i + n : i) + 1);
  if (ndim() == 1) return row;  // shape (1,), as MXNet 1.x
  return row.reshape(Shape(std::vector<std::int64_t>(shape_.begin() + 1, shape_.end())));
}

NDArray NDArray::T() const { return nd::transpose(*this); }

NDArray NDArray::transpose(const std::vector<int>& axes) const { return nd::transpose(*this, axes); }

NDArray NDArray::swapaxes(int axis1, int axis2) const { return nd::swapaxes(*this, axis1, axis2); }

NDArray NDArray::flatten() const {
  detail::check_not_none("flatten", *this);
  if (ndim() == 0) return reshape({1, 1});
  std::int64_t rest = 1;  // d1 * d2 * ..., also when d0 is 0
  for (int d = 1; d < ndim(); ++d) rest *= shape_[d];
  return reshape({shape_[0], rest});
}

NDArray NDArray::sum(std::optional<int> axis, bool keepdims) const { return nd::sum(*this, axis, keepdims); }
NDArray NDArray::mean(std::optional<int> axis, bool keepdims) const { return nd::mean(*this, axis, keepdims); }
NDArray NDArray::max(std::optional<int> axis, bool keepdims) const { return nd::max(*this, axis, keepdims); }
NDArray NDArray::min(std::optional<int> axis, bool keepdims) const { return nd::min(*this, axis, keepdims); }
NDArray NDArray::argmax(std::optional<int> axis, bool keepdims) const { return nd::argmax(*this, axis, keepdims); }
NDArray NDArray::argmin(std::optional<int> axis, bool keepdims) const { return nd::argmin(*this, axis, keepdims); }
NDArray NDArray::norm() const { return nd::norm(*this); }

NDArray NDArray::exp() const { return nd::exp(*this); }
NDArray NDArray::log() const { return nd::log(*this); }
NDArray NDArray::sqrt() const { return nd::sqrt(*this); }
NDArray NDArray::abs() const { return nd::abs(*this); }
NDArray NDArray::square() const { return nd::square(*this); }
NDArray NDArray::relu() const { return nd::relu(*this); }
NDArray NDArray::sigmoid() const { return nd::sigmoid(*this); }
NDArray NDArray::tanh() const { return nd::tanh(*this); }

namespace {

// a op= b: b broadcasts to a's shape and the result is written into a's storage.
// In-place updates would corrupt the values a recorded op saved for its backward, as in MXNet.
void check_not_recorded(const char* op, const NDArray& a) {
  if (autograd::is_recording() && a.autograd_node()) {
    throw Error(std::string(op) + " (in place) on " + detail::describe(a) +
                " while autograd is recording: in-place updates of recorded arrays are not supported; "
                "write `a = a + b` instead");
  }
}

void update_in_place(BinaryOp op, NDArray& a, const NDArray& b) {
  const char* name = op_name(op);
  check_not_recorded(name, a);
  detail::check_same_context(name, a, b);
  detail::check_same_dtype(name, a, b);
  const Shape out = broadcast_shapes(name, a.shape(), b.shape());
  if (out != a.shape()) {
    throw ShapeError(std::string(name) + " (in place): rhs " + detail::describe(b) +
                     " would broadcast lhs " + detail::describe(a) + " to " + out.tuple_str() +
                     "; an in-place result must keep the lhs shape");
  }
  // An rhs that overlaps a other than element for element (x += x[0]) would be read after it was
  // written: it is copied first, as NumPy does.
  const bool aligned = a.is(b);
  const NDArray rhs = !aligned && a.shares_memory(b) ? b.copy() : b;
  op::invoke_into(op::binary_op(op), {a, rhs}, {a});
}

void update_in_place(BinaryOp op, NDArray& a, double b) {
  detail::check_not_none(op_name(op), a);
  check_not_recorded(op_name(op), a);
  op::invoke_into(op::scalar_op(op), {a}, {a}, op::ScalarParams{b, false});
}

}  // namespace

NDArray& NDArray::operator+=(const NDArray& rhs) { update_in_place(BinaryOp::add, *this, rhs); return *this; }
NDArray& NDArray::operator-=(const NDArray& rhs) { update_in_place(BinaryOp::subtract, *this, rhs); return *this; }
NDArray& NDArray::operator*=(const NDArray& rhs) { update_in_place(BinaryOp::multiply, *this, rhs); return *this; }
NDArray& NDArray::operator/=(const NDArray& rhs) { update_in_place(BinaryOp::divide, *this, rhs); return *this; }
NDArray& NDArray::operator+=(double rhs) { update_in_place(BinaryOp::add, *this, rhs); return *this; }
NDArray& NDArray::operator-=(double rhs) { update_in_place(BinaryOp::subtract, *this, rhs); return *this; }
NDArray& NDArray::operator*=(double rhs) { update_in_place(BinaryOp::multiply, *this, rhs); return *this; }
NDArray& NDArray::operator/=(double rhs) { update_in_place(BinaryOp::divide, *this, rhs); return *this; }

NDArray& NDArray::fill(double value) {
  detail::check_not_none("fill", *this);
  detail::check_writable("fill", *this);
  op::invoke_into(op::full_op(), {}, {*this}, op::fill_params(value, shape_, dtype_));
  return *this;
}

void NDArray::attach_grad(const std::string& grad_req) {
  detail::check_not_none("attach_grad", *this);
  autograd::mark_variable(*this, zeros(shape_, context(), dtype_), grad_req);
}

NDArray NDArray::grad() const {
  if (!node_ || !node_->leaf) {
    throw Error("grad: " + detail::describe(*this) + " has no gradient; call attach_grad() on it before recording");
  }
  return node_->grad;
}

void NDArray::backward() const { autograd::backward(*this); }
void NDArray::backward(const NDArray& head_grad) const { autograd::backward(*this, head_grad); }

NDArray NDArray::detach() const {
  NDArray out = *this;
  out.node_.reset();
  return out;
}

void NDArray::wait_to_read() const {
  if (!is_none()) backend(context()).synchronize(context());
}

void NDArray::copy_to_host(void* dst, DType as) const {
  detail::check_not_none("asnumpy", *this);
  const NDArray source = as == dtype_ ? detail::dense(*this) : astype(as);
  const std::size_t bytes = static_cast<std::size_t>(size()) * dtype_size(as);
  copy_across(cpu(0), dst, context(), source.data(), bytes);
}

}  // namespace mx::nd
