#include "ndarray/dist/collective.hpp"

#include <map>
#include <set>

#include "context/error.hpp"
#include "ndarray/autograd/autograd.hpp"
#include "ndarray/backend/backend.hpp"
#include "ndarray/core/checks.hpp"
#include "ndarray/ops/elementwise.hpp"

namespace mx::nd {
namespace {

std::string describe_group(const std::vector<NDArray>& group) {
  std::string out;
  for (const NDArray& x : group) out += (out.empty() ? "" : ", ") + detail::describe(x);
  return "[" + out + "]";
}

void check_group(std::size_t index, const std::vector<NDArray>& group) {
  const std::string where = "all_reduce: group " + std::to_string(index) + " " + describe_group(group);
  std::set<Context> seen;
  for (const NDArray& x : group) {
    if (x.is_none()) throw ValueError(where + " holds a null array");
    if (x.shape() != group[0].shape()) throw ShapeError(where + ": every copy must have one shape");
    if (x.dtype() != group[0].dtype()) throw DTypeError(where + ": every copy must have one dtype");
    if (!seen.insert(x.context()).second) {
      throw ContextMismatch(where + ": two copies on " + x.context().str() + "; each copy needs its own context");
    }
  }
}

std::vector<Context> contexts_of(const std::vector<NDArray>& group) {
  std::vector<Context> out;
  for (const NDArray& x : group) out.push_back(x.context());
  return out;
}

bool all_on_gpus(const std::vector<NDArray>& group) {
  for (const NDArray& x : group) {
    if (!x.context().is_gpu()) return false;
  }
  return true;
}

// NCCL sums raw buffers: strided views go through the peer algorithm, which writes through them.
bool all_contiguous(const std::vector<NDArray>& group) {
  for (const NDArray& x : group) {
    if (!x.is_contiguous()) return false;
  }
  return true;
}

// Groups with the same context list go to NCCL together, in one fused launch; with copy_engines,
// those of a floating dtype may be summed by the GPUs' copy engines instead (ndarray/backend/backend.hpp).
void reduce_nccl(const std::vector<const std::vector<NDArray>*>& groups, int slot, bool copy_engines) {
  std::map<std::vector<Context>, std::vector<AllReduceItem>> by_contexts;
  for (const std::vector<NDArray>* group : groups) {
    AllReduceItem item{(*group)[0].dtype(), (*group)[0].size(), {}};
    for (const NDArray& x : *group) item.buffers.push_back(x.data());
    by_contexts[contexts_of(*group)].push_back(std::move(item));
  }
  for (const auto& [contexts, items] : by_contexts) {
    std::vector<int> devices;
    for (Context ctx : contexts) devices.push_back(ctx.device_id());
    nccl_collectives()->all_reduce_sum(devices, items, slot, copy_engines);
  }
}

// Sums the group on the copy at `root` (a copy from every other context, added in), then writes
// the sum back into the other copies. Different groups use different roots, spreading the work
// over the GPUs as MXNet's device kvstore does.
void reduce_peer(const std::vector<NDArray>& group, std::size_t root) {
  NDArray total = group[root];
  for (std::size_t i = 0; i < group.size(); ++i) {
    if (i != root) total += group[i].copyto(total.context());
  }
  for (std::size_t i = 0; i < group.size(); ++i) {
    NDArray dst = group[i];
    if (i != root) total.copyto(dst);
  }
}

}  // namespace

bool built_with_nccl() { return nccl_collectives() != nullptr; }

void all_reduce(const std::vector<std::vector<NDArray>>& groups, ReduceAlgo algo) {
  for (std::size_t i = 0; i < groups.size(); ++i) check_group(i, groups[i]);
  if (algo == ReduceAlgo::nccl) {
    if (!built_with_nccl()) {
      throw ValueError("all_reduce: NCCL requested, but this build has none (reconfigure with -Dnccl=enabled "
                       "where NCCL is installed, or use the peer algorithm)");
    }
    for (std::size_t i = 0; i < groups.size(); ++i) {
      if (!all_on_gpus(groups[i])) {
        throw ContextMismatch("all_reduce: NCCL reduces GPU arrays only, but group " + std::to_string(i) + " is " +
                              describe_group(groups[i]));
      }
      if (!all_contiguous(groups[i])) {
        throw ValueError("all_reduce: NCCL reduces contiguous arrays only, but group " + std::to_string(i) +
                         " holds a strided view; use the peer algorithm or contiguous copies");
      }
    }
  }
  autograd::Scope no_record = autograd::pause();  // in-place sums are not part of any graph
  std::vector<const std::vector<NDArray>*> to_nccl;
  std::size_t peer_groups = 0;
  for (const std::vector<NDArray>& group : groups) {
    if (group.size() < 2) continue;
    const bool use_nccl = algo == ReduceAlgo::nccl ||
                          (algo == ReduceAlgo::automatic && built_with_nccl() && all_on_gpus(group) && all_contiguous(group));
    if (use_nccl) to_nccl.push_back(&group);
    else reduce_peer(group, peer_groups++ % group.size());
  }
  if (!to_nccl.empty()) reduce_nccl(to_nccl, kOnStream, algo == ReduceAlgo::automatic);
}

namespace overlap {

bool can_reduce(const std::vector<NDArray>& group) {
  if (!built_with_nccl()) return false;
  std::set<Context> seen;
  for (const NDArray& x : group) {
    if (x.is_none() || !x.context().is_gpu() || !x.is_contiguous() || !seen.insert(x.context()).second) return false;
  }
  return true;
}

void mark(Context ctx, int slot) {
  if (slot < 0) throw ValueError("overlap::mark: slot " + std::to_string(slot) + " is negative");
  if (ctx.is_gpu() && built_with_nccl()) nccl_collectives()->mark(ctx.device_id(), slot);
}

void all_reduce(const std::vector<std::vector<NDArray>>& groups, int slot, ReduceAlgo algo) {
  if (algo == ReduceAlgo::peer) {
    throw ValueError("overlap::all_reduce: the peer algorithm cannot run beside the GPUs' work; use automatic or nccl");
  }
  if (slot < 0) throw ValueError("overlap::all_reduce: slot " + std::to_string(slot) + " is negative");
  for (std::size_t i = 0; i < groups.size(); ++i) {
    check_group(i, groups[i]);
    if (!can_reduce(groups[i])) {
      throw ValueError("overlap::all_reduce: group " + std::to_string(i) + " " + describe_group(groups[i]) +
                       " cannot be summed beside the GPUs' work: that takes NCCL (" +
                       (built_with_nccl() ? "in this build" : "not in this build") +
                       ") and contiguous copies, each on its own GPU");
    }
  }
  std::vector<const std::vector<NDArray>*> several;
  for (const std::vector<NDArray>& group : groups) {
    if (group.size() > 1) several.push_back(&group);
  }
  if (!several.empty()) reduce_nccl(several, slot, algo == ReduceAlgo::automatic);
}

bool copy_engines(const std::vector<Context>& contexts) {
  std::vector<int> devices;
  for (Context ctx : contexts) {
    if (!ctx.is_gpu()) return false;
    devices.push_back(ctx.device_id());
  }
  return built_with_nccl() && nccl_collectives()->copy_engines_reach(devices);
}

void join(Context ctx) {
  if (ctx.is_gpu() && built_with_nccl()) nccl_collectives()->join(ctx.device_id(), Collectives::kAllSlots);
}

void join(Context ctx, int slot) {
  if (slot < 0) throw ValueError("overlap::join: slot " + std::to_string(slot) + " is negative");
  if (ctx.is_gpu() && built_with_nccl()) nccl_collectives()->join(ctx.device_id(), slot);
}

void defer_join(Context ctx) {
  if (ctx.is_gpu() && built_with_nccl()) nccl_collectives()->defer_join(ctx.device_id(), true);
}

void cancel_deferred_join(Context ctx) {
  if (ctx.is_gpu() && built_with_nccl()) nccl_collectives()->defer_join(ctx.device_id(), false);
}

}  // namespace overlap

}  // namespace mx::nd
