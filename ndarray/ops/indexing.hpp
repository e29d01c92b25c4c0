#pragma once
// Indexing and selection, as MXNet's: take, Embedding, where, clip and the sequence ops
// (SequenceMask, SequenceLast, SequenceReverse). Indices and sequence lengths may have any dtype:
// floats are truncated toward zero, as MXNet casts them. Gradients flow to the data (and to where's
// x and y), never to indices, lengths or conditions.
#include <cstdint>
#include <string>

#include "ndarray/core/array.hpp"

namespace mx::nd {

// a's slices at `indices` along axis, as mx.nd.take: a (d_0, ..., d_axis, ..., d_n) and indices of
// any shape I give a.shape[:axis] + I + a.shape[axis + 1:], in a's dtype. mode "clip" clips the
// indices to [0, d_axis - 1], "wrap" takes them modulo d_axis, "raise" throws mx::IndexError
// naming the first index out of [0, d_axis - 1] (on cpu(0); a GPU clips instead, as MXNet's GPU
// kernel does). The gradient of a sums the output gradient's slices into the taken positions.
NDArray take(const NDArray& a, const NDArray& indices, int axis = 0, const std::string& mode = "clip");

// weight's rows at data's indices, as mx.nd.Embedding: data of any shape D (indices, clipped to
// [0, input_dim - 1]) and weight (input_dim, output_dim) give D + (output_dim,) in weight's dtype.
// weight's gradient is dense (the output gradient's rows summed per index, in float32 for 16-bit
// weights), also with sparse_grad=true, which is accepted for MXNet's sake. dtype is MXNet's
// attribute for the weight's dtype; the weight given decides.
NDArray Embedding(const NDArray& data, const NDArray& weight, std::int64_t input_dim, std::int64_t output_dim,
                  DType dtype = DType::float32, bool sparse_grad = false);

// x where condition is non-zero, else y, as mx.nd.where: x and y of one shape and dtype;
// condition of their shape, or 1-D of length x.shape[0] (selecting whole rows), in any dtype.
NDArray where(const NDArray& condition, const NDArray& x, const NDArray& y);

// data limited to [a_min, a_max], as mx.nd.clip (the bounds rounded to data's dtype). The
// gradient passes where a_min <= data <= a_max, zero elsewhere, as MXNet's.
NDArray clip(const NDArray& data, double a_min, double a_max);

// The sequence ops read data as (T, N, ...) (axis 0: time first) or (N, T, ...) (axis 1), and,
// with use_sequence_length, a length per sequence in sequence_length (N,) of any dtype; without
// it, every sequence has T steps and sequence_length must be a none array (MXNet's op then has one
// input). Lengths are clipped to [0, T].

// data with the steps past each sequence's length set to value, as mx.nd.SequenceMask.
NDArray SequenceMask(const NDArray& data, const NDArray& sequence_length = {}, bool use_sequence_length = false,
                     double value = 0, int axis = 0);
// Each sequence's last step (its length - 1; the first step for a length of 0), as
// mx.nd.SequenceLast: data's shape without the time axis.
NDArray SequenceLast(const NDArray& data, const NDArray& sequence_length = {}, bool use_sequence_length = false,
                     int axis = 0);
// The first length steps of each sequence in reverse order, the others kept, as
// mx.nd.SequenceReverse; axis 0 only, as MXNet's.
NDArray SequenceReverse(const NDArray& data, const NDArray& sequence_length = {}, bool use_sequence_length = false,
                        int axis = 0);

}  // namespace mx::nd
