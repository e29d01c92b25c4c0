// The cpu(0) backend: 64-byte aligned host memory (pinned when a GPU is present and the block is
// large, so that host<->device copies run at full speed), synchronous ops on all cores.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include "ndarray/backend/cpu_kernels.hpp"
#include "ndarray/backend/host_random.hpp"
#include "ndarray/ops/parallel.hpp"

namespace mx {
namespace {

// Blocks from this size on come from the pinned allocator when there is one.
constexpr std::size_t kPinnedMinBytes = std::size_t{256} << 10;  // a batch of 256 Fashion-MNIST images is 784 KiB
constexpr std::size_t kAlignment = 64;

class CpuBackend final : public Backend {
 public:
  void* allocate(Context, std::size_t bytes) override {
    void* ptr = nullptr;
    if (HostAllocator* pinned = bytes >= kPinnedMinBytes ? pinned_host_allocator() : nullptr) {
      ptr = pinned->allocate(bytes);
    }
    if (!ptr) ptr = std::aligned_alloc(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
    if (!ptr) {
      throw OutOfMemory("cpu(0): out of host memory allocating " + std::to_string(bytes >> 20) +
                        " MiB (" + std::to_string(allocated_.load() >> 20) + " MiB in use by arrays)");
    }
    allocated_ += bytes;
    return ptr;
  }

  void deallocate(Context, void* ptr, std::size_t bytes) noexcept override {
    allocated_ -= bytes;
    HostAllocator* pinned = bytes >= kPinnedMinBytes ? pinned_host_allocator() : nullptr;
    if (!pinned || !pinned->deallocate(ptr, bytes)) std::free(ptr);
  }

  MemoryStats memory_stats(Context) override {
    const HostAllocator* pinned = pinned_host_allocator();
    return {allocated_.load(), allocated_.load() + (pinned ? pinned->cached_bytes() : 0)};
  }

  void empty_cache(Context) override {
    if (HostAllocator* pinned = pinned_host_allocator()) pinned->empty_cache();
  }

  void copy(Context, void* dst, const void* src, std::size_t bytes) override {
    if (bytes) std::memmove(dst, src, bytes);
  }

  void copy_2d(Context, void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch,
               std::size_t width, std::size_t height) override {
    if (height == 1 || (dst_pitch == width && src_pitch == width)) {  // one block: over the cores
      op::parallel_memcpy(dst, src, width * height);
      return;
    }
    for (std::size_t r = 0; r < height; ++r) {
      std::memcpy(static_cast<char*>(dst) + r * dst_pitch, static_cast<const char*>(src) + r * src_pitch, width);
    }
  }

  // Large items (a gradient written back, a replay's batch) go over the cores.
  void copy_batch(Context, const std::vector<CopyItem>& items) override {
    for (const CopyItem& item : items) op::parallel_memcpy(item.dst, item.src, item.bytes);
  }

  void copy_across(Context, void* dst, Context, const void* src, std::size_t bytes) override {
    if (bytes) std::memmove(dst, src, bytes);
  }

  op::ExecContext enter(Context ctx, const char*, int& previous_device) override {
    previous_device = -1;
    return {ctx, nullptr, 0};
  }
  void leave(int) noexcept override {}

  void gather(Context, DType dt, const GatherIndex& index, const void* in, void* out) override {
    cpu_kernels::gather(dt, index, in, out);
  }
  void scatter(Context, DType dt, const GatherIndex& index, const void* in, void* out) override {
    cpu_kernels::scatter(dt, index, in, out);
  }
  std::uint64_t random_position(Context) override { return detail::host_random_position(); }
  void set_random_position(Context, std::uint64_t position) override { detail::host_random_set_position(position); }

  void synchronize(Context) override {}

 private:
  std::atomic<std::size_t> allocated_{0};
};

}  // namespace

Backend& cpu_backend() {
  static CpuBackend instance;
  return instance;
}

}  // namespace mx
