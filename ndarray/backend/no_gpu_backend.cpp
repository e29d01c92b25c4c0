// A CPU-only build (-Dcuda=disabled) has no GPU backend, no pinned host memory and no NCCL.
// check_context() refuses gpu(i) before either is asked for.
#include "ndarray/backend/backend.hpp"

namespace mx {

Backend* gpu_backend() { return nullptr; }
HostAllocator* pinned_host_allocator() { return nullptr; }
Collectives* nccl_collectives() { return nullptr; }

}  // namespace mx
