#pragma once
// All-reduce over the copies of a tensor on several contexts: the gradient sum of data-parallel
// training (Trainer::step does it; MXNet's kvstore push/pull of one key).
//
//   std::vector<nd::NDArray> copies = param.list_grad();   // on gpu(0), gpu(1), ...
//   nd::all_reduce({copies});                              // each copy now holds the sum
#include <vector>

#include "ndarray/core/array.hpp"

namespace mx::nd {

enum class ReduceAlgo {
  automatic,  // NCCL when the build has it and every copy sits on its own GPU (the GPUs' copy
              // engines for floating dtypes from 1 MiB a call, where every pair has peer access:
              // Note [copy-engine all-reduce] in cuda/peer_reduce.hpp); else peer
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

// Sums overlapped with the GPUs' work, as DDP's gradient buckets (gluon::Trainer uses them):
//
//   nd::overlap::mark(gpu(0), 3);  ...              // after the ops that wrote bucket 3 on gpu(0)
//   nd::overlap::all_reduce({copies, ...}, 3);      // runs after each GPU's mark 3, beside later work
//   nd::overlap::join(gpu(0));                      // gpu(0)'s later work sees the sums
//
// mark(ctx, slot) notes the point ctx's queue has reached; all_reduce(groups, slot, algo) sums like
// nd::all_reduce (automatic or nccl) on each GPU's communication stream, after that GPU's mark for the
// slot (or, for a slot never marked on it, after everything queued there now) and beside whatever
// was queued since. Until join(ctx), work queued on ctx must neither read nor write the groups'
// arrays. join(ctx, slot) orders ctx's later work after the slot's latest sum and the sums started
// before it only. defer_join(ctx) leaves join(ctx) to whatever is next queued on ctx (an op, a
// copy, a wait): a Trainer's backward ends so, and its update, having taken the join back with
// cancel_deferred_join(ctx), waits for each bucket's sum just before it updates that bucket's
// parameters. Slots are small integers >= 0 (an index of a bucket); marking a slot again replaces
// its point. For GPU groups, each copy on its own GPU, in a build with NCCL (built_with_nccl());
// mx::ValueError otherwise, naming the group, before anything is queued. No effect on cpu(0).
namespace overlap {
void mark(Context ctx, int slot);
void all_reduce(const std::vector<std::vector<NDArray>>& groups, int slot, ReduceAlgo algo = ReduceAlgo::automatic);
void join(Context ctx);
void join(Context ctx, int slot);
void defer_join(Context ctx);
void cancel_deferred_join(Context ctx);
// Whether automatic sums over these GPUs use their copy engines, which wait for the GPUs' work
// without taking SMs from it.
bool copy_engines(const std::vector<Context>& contexts);
// Whether all_reduce takes this group: every copy on its own GPU, contiguous, NCCL in the build.
bool can_reduce(const std::vector<NDArray>& group);
}  // namespace overlap

}  // namespace mx::nd
