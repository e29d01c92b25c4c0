#pragma once
// The backend interface: what a device must provide for NDArray to run on it: memory, copies
// (plain, 2-D, across contexts, and through strided views), the execution context of its ops, its
// generator's position and synchronisation. The computations are registered ops (ndarray/ops/).
// The CPU backend lives in ndarray/backend/cpu_backend.cpp; cuda/ implements the GPU one and gpu_backend()
// returns it. Pointers are raw element pointers already offset to the array's first element; the
// arrays are contiguous except where an index says how to step through one (gather, scatter). Work may be queued asynchronously; synchronize() waits for it.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "context/context.hpp"
#include "ndarray/core/dtype.hpp"
#include "ndarray/core/strided_index.hpp"
#include "ndarray/ops/op.hpp"
#include "ndarray/ops/op_kinds.hpp"

namespace mx {

struct MemoryStats {
  std::size_t allocated = 0;  // bytes held by live arrays
  std::size_t reserved = 0;   // bytes held by the allocator, allocated + cached
};

// One copy of copy_batch: bytes from src to dst, on one context, not overlapping.
struct CopyItem {
  void* dst;
  const void* src;
  std::size_t bytes;
};

// Device work recorded once and launched again as a whole (a CUDA graph): what a hybridized
// block replays. The copies before and after the work are part of it, and their pointers may
// change from one launch to the next (a new input, a new output array); their sizes may not.
class CapturedWork {
 public:
  virtual ~CapturedWork() = default;
  virtual void launch(const std::vector<CopyItem>& before, const std::vector<CopyItem>& after) = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual void* allocate(Context ctx, std::size_t bytes) = 0;
  virtual void deallocate(Context ctx, void* ptr, std::size_t bytes) noexcept = 0;
  virtual MemoryStats memory_stats(Context ctx) = 0;
  virtual void empty_cache(Context ctx) = 0;
  // Frees what the context keeps beyond its memory cache, made again on next use (a GPU's cuRAND
  // generator state). For mx::release_cached_resources.
  virtual void release_state(Context) {}

  // Copy within ctx, and 2-D strided copy (rows of width bytes) for concat and axis slicing.
  virtual void copy(Context ctx, void* dst, const void* src, std::size_t bytes) = 0;
  virtual void copy_2d(Context ctx, void* dst, std::size_t dst_pitch, const void* src,
                       std::size_t src_pitch, std::size_t width, std::size_t height) = 0;
  // Several copies within ctx at once: one kernel on a GPU (autograd writes every leaf's gradient
  // with one launch), a memcpy each on the CPU.
  virtual void copy_batch(Context ctx, const std::vector<CopyItem>& items) = 0;

  // Copy between contexts (host<->device, device<->device); the GPU backend handles every pair
  // that involves a GPU. When it returns, dst is readable on the CPU or ordered on dst's stream,
  // and src may be changed or freed: a copy from the host to a GPU is queued without waiting, from
  // a pinned copy of src taken before returning.
  virtual void copy_across(Context dst_ctx, void* dst, Context src_ctx, const void* src,
                           std::size_t bytes) = 0;

  // The ExecContext of an op on ctx: for gpu(i), makes that device current and sets
  // `previous_device` to the one leave() restores (-1: nothing to restore).
  virtual op::ExecContext enter(Context ctx, const char* op, int& previous_device) = 0;
  virtual void leave(int previous_device) noexcept = 0;

  // out[i] = in[index(i)]: a strided view (transpose, broadcast_to, stepped slice) made contiguous.
  virtual void gather(Context ctx, DType dt, const GatherIndex& index, const void* in, void* out) = 0;
  // out[index(i)] = in[i]: contiguous values written into a strided view's elements. The index
  // must not repeat an element (no stride 0 axis of extent > 1).
  virtual void scatter(Context ctx, DType dt, const GatherIndex& index, const void* in, void* out) = 0;
  // Values drawn from ctx's generator since the last seed.
  virtual std::uint64_t random_position(Context ctx) = 0;
  // Moves ctx's generator to a position random_position gave since the same seed: the next draws
  // repeat those made from there (a trace that ran an op for real puts the generator back).
  virtual void set_random_position(Context ctx, std::uint64_t position) = 0;

  // Waits for queued work on ctx; reports a failed kernel as mx::DeviceError.
  virtual void synchronize(Context ctx) = 0;

  // Records the device work that `work` queues on ctx, between the copies `before` and `after`,
  // without running it. Memory that ctx's allocator hands out during the recording stays the
  // recording's (the launches reuse those addresses) until it is destroyed. nullptr where ctx
  // cannot record (the CPU), or when the work did something a recording cannot hold (a host
  // synchronisation): the work has then not run, and nothing else changed.
  virtual std::unique_ptr<CapturedWork> capture(Context /*ctx*/, const std::function<void()>& /*work*/,
                                                const std::vector<CopyItem>& /*before*/,
                                                const std::vector<CopyItem>& /*after*/) {
    return nullptr;
  }
};

// The backend for ctx, after check_context(ctx).
Backend& backend(Context ctx);

// The CPU backend (always there).
Backend& cpu_backend();

// The GPU backend, or nullptr in a CPU-only build.
Backend* gpu_backend();

// Copies bytes between any two contexts through the backend that can (the GPU one when a GPU is
// involved).
void copy_across(Context dst_ctx, void* dst, Context src_ctx, const void* src, std::size_t bytes);

// A copy from cpu(0) into a new array on a GPU (copyto(gpu(i)), split_and_load): while an
// UploadScope lives on a thread, the first allocation on that GPU is made for the copy (in its copy
// stream's order, see cuda/device.hpp) and the copy into that block need not wait for the work
// already queued on the device. No effect for other pairs of contexts.
struct UploadHint {
  int device = -1;         // the GPU whose next allocation is the copy's destination, or -1
  void* block = nullptr;   // that allocation, once made
};
UploadHint& upload_hint();  // the calling thread's
class UploadScope {
 public:
  UploadScope(Context from, Context to);
  ~UploadScope();
  UploadScope(const UploadScope&) = delete;
  UploadScope& operator=(const UploadScope&) = delete;
};

// Waits for every GPU's queued work.
void synchronize_all();

// Pinned host memory for CPU arrays when a GPU is present (fast host<->device copies), or
// nullptr when not applicable. cuda/ provides it; a CPU-only build returns nullptr.
struct HostAllocator {
  virtual ~HostAllocator() = default;
  virtual void* allocate(std::size_t bytes) = 0;  // nullptr if it declines
  virtual bool deallocate(void* ptr, std::size_t bytes) noexcept = 0;  // false if not its pointer
  virtual std::size_t cached_bytes() const = 0;
  virtual void empty_cache() = 0;
};
HostAllocator* pinned_host_allocator();

// Collective operations across GPUs through NCCL. cuda/ provides them in a build with NCCL;
// nccl_collectives() is nullptr otherwise.
struct AllReduceItem {
  DType dtype;
  std::int64_t count;
  std::vector<void*> buffers;  // buffers[r] on gpu(devices[r]), count elements each
};
// Where a collective runs: kOnStream (-1) on each device's stream, in order with its work; a slot
// s >= 0: on the device's communication stream, after the point mark(device, s) noted on the
// device's stream and beside what was queued there since (a Trainer's gradient buckets, overlapped
// with backward). The device's stream waits for such collectives only at join(device).
constexpr int kOnStream = -1;

struct Collectives {
  virtual ~Collectives() = default;
  // Every buffer of each item becomes the elementwise sum of the item's buffers, in place, all
  // items in one fused launch; returns without waiting. copy_engines: the items of a floating
  // dtype may be summed by the GPUs' copy engines instead (Note [copy-engine all-reduce] in
  // cuda/peer_reduce.hpp), where that applies.
  virtual void all_reduce_sum(const std::vector<int>& devices, const std::vector<AllReduceItem>& items, int slot,
                              bool copy_engines) = 0;
  // Whether all_reduce_sum over these devices may use the copy engines (every pair has peer access).
  virtual bool copy_engines_reach(const std::vector<int>& devices) = 0;
  // nd::overlap's mark, join and deferred join (ndarray/dist/collective.hpp); slot kAllSlots: every sum.
  static constexpr int kAllSlots = -1;
  virtual void mark(int device, int slot) = 0;
  virtual void join(int device, int slot) = 0;
  virtual void defer_join(int device, bool deferred) = 0;
  // Destroys the communicators of all_reduce_sum's device groups once their work is done (made
  // again by the next call); for mx::release_cached_resources. Not mx::dist's (dist::shutdown).
  virtual void release_local() = 0;

  // Across processes (mx::dist): rank 0 makes the id (ncclGetUniqueId's bytes) that every process
  // passes to init_world, with this process's GPUs as ranks first_rank, first_rank + 1, ... of
  // nranks. A collective that has not finished after timeout_seconds (a rank stopped), or that
  // NCCL reports failed, aborts the communicator; from then on every world call, and every wait
  // for a GPU of the world (synchronize), throws mx::DeviceError with that failure.
  virtual std::string make_world_id() = 0;
  virtual void init_world(const std::string& id, int nranks, int first_rank, const std::vector<int>& devices,
                          double timeout_seconds, const std::string& who) = 0;
  // Items' buffers are ordered as init_world's devices. op names the call in errors.
  virtual void all_reduce_world(const std::vector<AllReduceItem>& items, const std::string& op,
                                int slot) = 0;
  virtual void broadcast_world(const std::vector<AllReduceItem>& items, const std::string& op) = 0;  // from rank 0
  virtual void shutdown_world() = 0;
};
Collectives* nccl_collectives();

}  // namespace mx
