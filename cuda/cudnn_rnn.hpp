#pragma once
// The cuDNN path of the RNN op (built with the cudnn option): cuDNN's RNN API (cudnnRNNForward,
// cudnnRNNBackwardData_v8, cudnnRNNBackwardWeights_v8), one call for the whole layer stack.
// Internal to cuda/.
#include <cstdint>

#include "ndarray/ops/rnn_kernels.hpp"

namespace mx::cuda {

// The bytes of cuDNN's reserve space for an RNN call on gpu(device), or -1 where cuDNN does not run
// the case: state clipping (see cudnn_rnn.cpp), or a case cuDNN refuses (checked once per case and
// cached). Calls that drop out between layers (op::rnn_drops_out) run here in prediction
// only.
std::int64_t cudnn_rnn_reserve_bytes(int device, const op::RNNParams& p, const op::RNNDims& dims, DType dtype);

// RNN / _backward_RNN through cuDNN on ec's stream; false, with nothing queued, where
// cudnn_rnn_reserve_bytes is -1 or the call drops out between layers.
bool cudnn_rnn_forward(const op::ExecContext& ec, const op::Invocation& inv);
bool cudnn_rnn_backward(const op::ExecContext& ec, const op::Invocation& inv);

// out[0..n) = value on ec's stream (cuDNN's device copy of the sequence lengths).
void fill_int32(const op::ExecContext& ec, std::int32_t* out, std::int64_t n, std::int32_t value);

}  // namespace mx::cuda
