#pragma once
// All-reduce over the copies of a tensor on several contexts: the gradient sum of data-parallel
// training (Trainer::step does it; MXNet's kvstore push/pull of one key).
//
//   std::vector<nd::NDArray> copies = param.list_grad();   // on gpu(0), gpu(1), ...
//   nd::all_reduce({copies});                              // each copy now holds the sum
#include <vector>

#include "ndarray/array.hpp"

namespace mx::nd {

enum class ReduceAlgo {
  automatic,  // NCCL when the build has it and every copy sits on its own GPU; else peer
  nccl,       // NCCL only: mx::ValueError when the build has no NCCL or a copy is on cpu(0)
  peer,       // sum on one context through copies (GPU peer access where the pair allows), then copy back
};
bool built_with_nccl();

// Each group holds one tensor's copies: the same shape and dtype, each on a different context.
// Every copy becomes the elementwise sum of its group, in place (every handle sees it). The work is
// queued on the contexts' streams and the call returns without waiting; groups that share their
// contexts are reduced in one fused NCCL launch. Throws mx::ShapeError, mx::DTypeError or
// mx::ContextMismatch, naming the group and its arrays, before anything is changed.
void all_reduce(const std::vector<std::vector<NDArray>>& groups, ReduceAlgo algo = ReduceAlgo::automatic);

}  // namespace mx::nd
