#pragma once
// The indexing family's attributes, element functions and GPU launches (ndarray/ops/indexing.cpp
// defines the ops and the CPU loops; cuda/ops/indexing.cu the launches). Each element function is
// written once for the CPU loops and the CUDA kernels. Internal.
#include <cstdint>

#include "ndarray/core/host_device.hpp"
#include "ndarray/ops/manipulation_kernels.hpp"
#include "ndarray/ops/op.hpp"
#include "ndarray/ops/op_kinds.hpp"

namespace mx::op {

// take's mode: out-of-range indices clipped to [0, n - 1], wrapped modulo n, or an error (raise:
// checked on cpu(0); a GPU clips, see Note [take's raise mode on a GPU] in indexing.cpp).
enum class TakeMode : std::uint8_t { clip, wrap, raise };

// take, _backward_take and Embedding (take along axis 0 of the weight, clipped). ndim and length,
// the data's number of axes and extent along the axis, are set for _backward_take only (which sees
// the output gradient and the indices, not the data).
struct TakeParams {
  int axis = 0;
  TakeMode mode = TakeMode::clip;
  int ndim = 0;
  std::int64_t length = 0;
};

struct EmbeddingParams {
  std::int64_t input_dim = 0, output_dim = 0;
  DType dtype = DType::float32;  // the weight's, as MXNet's attribute (inference takes the weight's own)
  bool sparse_grad = false;      // accepted; the gradient is dense (Note [Embedding's sparse_grad])
};

struct ClipParams {
  double a_min = 0, a_max = 0;
};

// SequenceMask, SequenceLast, SequenceReverse and _backward_SequenceLast. steps, the data's extent
// along the time axis, is set for _backward_SequenceLast only.
struct SequenceParams {
  bool use_sequence_length = false;
  double value = 0;  // SequenceMask's
  int axis = 0;      // the time axis: 0 for (T, N, ...), 1 for (N, T, ...)
  std::int64_t steps = 0;
};

// take's data as (outer, length, inner) around the axis and its indices' count: the output is
// (outer, count, inner).
struct TakeShape {
  std::int64_t outer = 1, length = 1, inner = 1, count = 0;
};

// Output element i of take: out[o, j, in] = data[o, position(index[j]), in].
template <class T, class I>
NDG_HD T take_element(const T* data, const I* index, TakeShape s, bool wrap, std::int64_t i) {
  const std::int64_t in = i % s.inner, j = (i / s.inner) % s.count, o = i / (s.inner * s.count);
  return data[(o * s.length + pick_position(index[j], s.length, wrap)) * s.inner + in];
}

// where with a condition of the data's shape (rows == 0) or one value per row of `row_size`
// elements (a 1-D condition along the first axis).
struct WhereShape {
  std::int64_t rows = 0, row_size = 1;
};

template <class C>
NDG_HD bool where_takes_x(const C* condition, WhereShape s, std::int64_t i) {
  return static_cast<bool>(condition[s.rows ? i / s.row_size : i] != C(0));
}

// clip as MXNet's mshadow_op::clip: above a_max gives a_max, else below a_min gives a_min (NaN
// passes through); the bounds are first rounded to T, as MXNet's DType(a_min).
template <class T>
NDG_HD T clip_element(T x, T lo, T hi) {
  using C = ComputeType<T>;
  const C v = C(x);
  return v > C(hi) ? hi : v < C(lo) ? lo : x;
}

// _backward_clip: the gradient passes where a_min <= x <= a_max, as MXNet's clip_grad.
template <class T>
NDG_HD T clip_gradient_element(T g, T x, T lo, T hi) {
  using C = ComputeType<T>;
  const C v = C(x);
  return v > C(hi) || v < C(lo) ? T(0) : g;
}

// The data of a Sequence op as (steps, batch, rest) (axis 0) or (batch, steps, rest) (axis 1).
struct SequenceShape {
  std::int64_t steps = 1, batch = 1, rest = 1;
  bool batch_first = false;  // axis 1
  NDG_HD std::int64_t time_of(std::int64_t i) const {
    return batch_first ? (i / rest) % steps : i / (batch * rest);
  }
  NDG_HD std::int64_t batch_of(std::int64_t i) const {
    return batch_first ? i / (steps * rest) : (i / rest) % batch;
  }
  // The element at time t of the sequence of element i.
  NDG_HD std::int64_t at_time(std::int64_t i, std::int64_t t) const {
    const std::int64_t r = i % rest, b = batch_of(i);
    return batch_first ? (b * steps + t) * rest + r : (t * batch + b) * rest + r;
  }
};

// Sequence b's length: its entry of `lengths` truncated toward zero (NaN: 0) and clipped to
// [0, steps]; every step when there are no lengths.
template <class I>
NDG_HD std::int64_t sequence_length(const I* lengths, std::int64_t b, std::int64_t steps) {
  if (!lengths) return steps;
  const double v = static_cast<double>(lengths[b]);
  return !(v > 0) ? 0 : v >= static_cast<double>(steps) ? steps : static_cast<std::int64_t>(v);
}

// SequenceMask element i: data where its step is within its sequence's length, else value.
template <class T, class I>
NDG_HD T sequence_mask_element(const T* data, const I* lengths, SequenceShape s, T value, std::int64_t i) {
  return s.time_of(i) < sequence_length(lengths, s.batch_of(i), s.steps) ? data[i] : value;
}

// SequenceReverse element i: the first `length` steps of each sequence reversed, the rest kept.
template <class T, class I>
NDG_HD T sequence_reverse_element(const T* data, const I* lengths, SequenceShape s, std::int64_t i) {
  const std::int64_t t = s.time_of(i), n = sequence_length(lengths, s.batch_of(i), s.steps);
  return data[s.at_time(i, t < n ? n - 1 - t : t)];
}

// The step SequenceLast reads for sequence b: its last, length - 1, clipped to [0, steps - 1] (a
// sequence of length 0 gives its first step; MXNet reads out of bounds there).
template <class I>
NDG_HD std::int64_t sequence_last_step(const I* lengths, std::int64_t b, std::int64_t steps) {
  const std::int64_t n = sequence_length(lengths, b, steps);
  return n > 0 ? n - 1 : 0;
}

// SequenceLast output element i of (batch, rest).
template <class T, class I>
NDG_HD T sequence_last_element(const T* data, const I* lengths, SequenceShape s, std::int64_t i) {
  const std::int64_t b = i / s.rest, r = i % s.rest, t = sequence_last_step(lengths, b, s.steps);
  return data[s.batch_first ? (b * s.steps + t) * s.rest + r : (t * s.batch + b) * s.rest + r];
}

// _backward_SequenceLast element i of the data's gradient: the output gradient at each sequence's
// last step, else 0.
template <class T, class I>
NDG_HD T sequence_last_gradient_element(const T* grad, const I* lengths, SequenceShape s, std::int64_t i) {
  const std::int64_t b = s.batch_of(i);
  return s.time_of(i) == sequence_last_step(lengths, b, s.steps) ? grad[b * s.rest + i % s.rest] : T(0);
}

// fn(T{}, I{}) with T the dtype of inv's input `data` and I that of input `index` (int32 when that
// input is absent: the kernels then get a null pointer): the dispatch of the CPU loops and the
// launches.
template <class Fn>
void dispatch_data_index(const Invocation& inv, std::size_t data, std::size_t index, Fn&& fn) {
  const nd::NDArray& idx = inv.inputs[index];
  dispatch_dtype(inv.inputs[data].dtype(), [&](auto data_tag) {
    dispatch_dtype(idx.is_none() ? DType::int32 : idx.dtype(), [&](auto index_tag) { fn(data_tag, index_tag); });
  });
}

// Input i's elements, or null for an absent input.
template <class T>
const T* input_of(const Invocation& inv, std::size_t i) {
  return inv.inputs[i].is_none() ? nullptr : static_cast<const T*>(inv.inputs[i].data());
}

// The sequence ops' elements as functors of the output index, for the CPU loops and the kernels
// alike: data (or the output gradient) and the lengths (null: every step) of a sequence op.
template <class T, class I>
struct SequenceOperands {
  const T* data;
  const I* lengths;
  SequenceShape s;
  T value;  // SequenceMask's
};
template <class T, class I>
struct SequenceMaskAt : SequenceOperands<T, I> {
  NDG_HD T operator()(std::int64_t i) const { return sequence_mask_element(this->data, this->lengths, this->s, this->value, i); }
};
template <class T, class I>
struct SequenceReverseAt : SequenceOperands<T, I> {
  NDG_HD T operator()(std::int64_t i) const { return sequence_reverse_element(this->data, this->lengths, this->s, i); }
};
template <class T, class I>
struct SequenceLastAt : SequenceOperands<T, I> {
  NDG_HD T operator()(std::int64_t i) const { return sequence_last_element(this->data, this->lengths, this->s, i); }
};
template <class T, class I>
struct SequenceLastGradientAt : SequenceOperands<T, I> {
  NDG_HD T operator()(std::int64_t i) const { return sequence_last_gradient_element(this->data, this->lengths, this->s, i); }
};

SequenceShape sequence_shape(const Invocation& inv);

// run(At<T, I>{...}) for a sequence op's invocation: T its data's dtype, I its lengths'.
template <template <class, class> class At, class Run>
void dispatch_sequence(const Invocation& inv, Run&& run) {
  const SequenceShape s = sequence_shape(inv);
  const double value = inv.params.as<SequenceParams>().value;
  dispatch_data_index(inv, 0, 1, [&](auto data_tag, auto length_tag) {
    using T = decltype(data_tag);
    using I = decltype(length_tag);
    run(At<T, I>{{input_of<T>(inv, 0), input_of<I>(inv, 1), s, static_cast<T>(value)}});
  });
}

// The shapes the kernels need, from an invocation of the op (shared by the CPU loops and the
// launches).
TakeShape take_shape(const Invocation& inv);
// Which of take's (or Embedding's) inputs is the data and which the indices, and whether indices
// wrap (else they are clipped; raise mode checks them first on cpu(0)).
struct TakeOperands {
  std::size_t data = 0, index = 1;
  bool wrap = false;
};
TakeOperands take_operands(const Invocation& inv);
WhereShape where_shape(const Invocation& inv);

namespace gpu {
void take(const ExecContext& ec, const Invocation& inv);
void take_backward(const ExecContext& ec, const Invocation& inv);
void where(const ExecContext& ec, const Invocation& inv);
void where_backward(const ExecContext& ec, const Invocation& inv);
void clip(const ExecContext& ec, const Invocation& inv);
void clip_backward(const ExecContext& ec, const Invocation& inv);
void sequence_mask(const ExecContext& ec, const Invocation& inv);
void sequence_reverse(const ExecContext& ec, const Invocation& inv);
void sequence_last(const ExecContext& ec, const Invocation& inv);
void sequence_last_backward(const ExecContext& ec, const Invocation& inv);
}  // namespace gpu

}  // namespace mx::op
