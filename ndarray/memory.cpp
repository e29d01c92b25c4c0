#include "ndarray/memory.hpp"

#include "ndarray/backend.hpp"

namespace mx {

std::size_t memory_allocated(Context ctx) { return backend(ctx).memory_stats(ctx).allocated; }
std::size_t memory_reserved(Context ctx) { return backend(ctx).memory_stats(ctx).reserved; }
void empty_cache(Context ctx) { backend(ctx).empty_cache(ctx); }

}  // namespace mx
