// The cpu(0) backend: 64-byte aligned host memory (pinned when a GPU is present and the block is
// large, so that host<->device copies run at full speed), synchronous ops on all cores.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include "ndarray/cpu/kernels.hpp"
#include "ndarray/host_random.hpp"

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
    for (std::size_t r = 0; r < height; ++r) {
      std::memcpy(static_cast<char*>(dst) + r * dst_pitch, static_cast<const char*>(src) + r * src_pitch, width);
    }
  }

  void copy_across(Context, void* dst, Context, const void* src, std::size_t bytes) override {
    if (bytes) std::memmove(dst, src, bytes);
  }

  op::ExecContext enter(Context ctx, const char*, int& previous_device) override {
    previous_device = -1;
    return {ctx, nullptr, 0};
  }
  void leave(int) noexcept override {}

  void fill(Context, DType dt, void* out, std::int64_t n, double value) override {
    cpu_kernels::fill(dt, out, n, value);
  }
  void arange(Context, DType dt, void* out, std::int64_t n, double start, double step) override {
    cpu_kernels::arange(dt, out, n, start, step);
  }
  void cast(Context, DType from, const void* in, DType to, void* out, std::int64_t n) override {
    cpu_kernels::cast(from, in, to, out, n);
  }
  void gather(Context, DType dt, const GatherIndex& index, const void* in, void* out) override {
    cpu_kernels::gather(dt, index, in, out);
  }
  void scatter(Context, DType dt, const GatherIndex& index, const void* in, void* out) override {
    cpu_kernels::scatter(dt, index, in, out);
  }
  void reduce(Context, ReduceOp op, DType dt, const void* in, void* out, ReduceShape shape) override {
    cpu_kernels::reduce(op, dt, in, out, shape);
  }
  void gemm(Context, DType dt, const GemmArgs& args, const void* a, const void* b, void* c) override {
    cpu_kernels::gemm(dt, args, a, b, c);
  }

  void random_uniform(Context, DType dt, void* out, std::int64_t n, double low, double high,
                      std::int64_t offset) override {
    detail::host_random_uniform(dt, out, n, offset);
    if (low != 0.0 || high != 1.0) cpu_kernels::affine(dt, out, n, high - low, low);  // (0, 1] -> (low, high]
  }
  void random_normal(Context, DType dt, void* out, std::int64_t n, double loc, double scale,
                     std::int64_t offset) override {
    detail::host_random_normal(dt, out, n, loc, scale, offset);
  }
  std::uint64_t random_position(Context) override { return detail::host_random_position(); }

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
