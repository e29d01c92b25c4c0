#include "ndarray/core/memory.hpp"

#include <vector>

#include "context/device.hpp"
#include "ndarray/backend/backend.hpp"

namespace mx {

std::size_t memory_allocated(Context ctx) { return backend(ctx).memory_stats(ctx).allocated; }
std::size_t memory_reserved(Context ctx) { return backend(ctx).memory_stats(ctx).reserved; }
void empty_cache(Context ctx) { backend(ctx).empty_cache(ctx); }

void release_cached_resources() {
  std::vector<Context> contexts{cpu()};
  for (int i = 0; i < num_gpus(); ++i) contexts.push_back(gpu(i));
  for (Context ctx : contexts) {
    backend(ctx).empty_cache(ctx);
    backend(ctx).release_state(ctx);
  }
  if (Collectives* nccl = nccl_collectives()) nccl->release_local();
}

}  // namespace mx
