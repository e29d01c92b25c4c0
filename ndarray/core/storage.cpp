#include "ndarray/core/storage.hpp"

#include <atomic>
#include <string>

#include "context/error.hpp"
#include "ndarray/backend/backend.hpp"
#include "ndarray/core/memory.hpp"

namespace mx {
namespace {

std::atomic<std::int64_t> allocations{0};
std::atomic<std::int64_t> failing_allocation{0};  // the allocation count that fails; 0: none

void* allocate(Backend& backend, Context ctx, std::size_t bytes) {
  const std::int64_t n = allocations.fetch_add(1, std::memory_order_relaxed) + 1;
  std::int64_t failing = failing_allocation.load(std::memory_order_relaxed);
  if (failing != 0 && n == failing && failing_allocation.compare_exchange_strong(failing, 0)) {
    throw OutOfMemory(ctx.str() + ": out of memory allocating " + std::to_string(bytes) +
                      " bytes (a failure injected by mx::testing::fail_nth_allocation)");
  }
  return backend.allocate(ctx, bytes);
}

}  // namespace

namespace testing {
void fail_nth_allocation(std::int64_t nth) {
  failing_allocation.store(nth > 0 ? allocations.load() + nth : 0);
}
std::int64_t allocation_count() { return allocations.load(); }
}  // namespace testing

Storage::Storage(Context ctx, std::size_t bytes)
    : ctx_(ctx), bytes_(bytes), backend_(&backend(ctx)), data_(allocate(*backend_, ctx, bytes)) {}

Storage::~Storage() { backend_->deallocate(ctx_, data_, bytes_); }

}  // namespace mx
