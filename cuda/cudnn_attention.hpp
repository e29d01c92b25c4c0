#pragma once
// The cuDNN path of _sdpa_fused and _backward_sdpa_fused (ndarray/ops/attention.cpp, which declares
// the same three functions): flash attention forward and backward as cuDNN 9 operation graphs
// (Note [fused attention graphs] in cuda/cudnn_attention.cpp). Built with the cudnn option.
#include <cstdint>

#include "ndarray/ops/op.hpp"

namespace mx::op::gpu {

// Whether cuDNN runs the forward and the backward for these extents on gpu(device): float16 or
// bfloat16, d a multiple of 8 up to 128, Tq and Tk multiples of 128, no key padding (see
// cudnn_attention.cpp), compute capability 8.0 or newer, and both plans built (cached, failures
// too). padded: per-batch key lengths; dropout: the probability in force (0 in prediction).
bool cudnn_sdpa_supported(int device, DType dtype, std::int64_t batch, std::int64_t heads, std::int64_t tq,
                          std::int64_t tk, std::int64_t d, bool causal, bool padded, double dropout);

// _sdpa_fused on ec's stream: inputs q (B, H, Tq, d), k, v (B, H, Tk, d), key lengths (B,) int32 in
// [1, Tk] or none; outputs o (B, H, Tq, d), the float32 log-sum-exp of each query's scores
// (B, H, Tq, 1), and (seed, offset) of the dropout mask, int64 (2,), drawn from gpu(device)'s
// generator position when dropout > 0 (zeros otherwise).
void cudnn_sdpa_forward(const ExecContext& ec, const Invocation& inv, double scale, double dropout, bool causal);

// _backward_sdpa_fused: inputs do, q, k, v, o, stats, (seed, offset), key lengths or none (the
// forward's); outputs dq, dk, dv. The same dropout mask as the forward, regenerated.
void cudnn_sdpa_backward(const ExecContext& ec, const Invocation& inv, double scale, double dropout, bool causal);

}  // namespace mx::op::gpu
