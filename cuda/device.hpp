#pragma once
// Per-GPU state: the stream every op of that GPU is queued on, the streams of copies from the host
// and of overlapped collectives, its memory pool, and the cuBLAS and
// cuRAND handles, created on first use. The states live until the process ends (never destroyed:
// destroying CUDA objects during static destruction races the runtime's own teardown).
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <curand.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cuda/curand_stream.hpp"
#include "cuda/driver.hpp"

namespace mx::cuda {

class Device {
 public:
  explicit Device(int id);  // call with gpu(id) current
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  int id() const { return id_; }
  // Queues a join_comm() deferred by defer_join() first: every use of the stream goes through here.
  cudaStream_t stream() {
    settle();
    return stream_;
  }
  // Copies from the host run here, beside the device's work, and are ordered against stream()
  // by events: the device's work waits for a copy it reads, and a copy into memory the device may
  // still use waits for that work (cuda/backend.cpp).
  cudaStream_t copy_stream() const { return copy_stream_; }
  // Overlapped collectives (a Trainer's gradient buckets) run on the communication stream, beside
  // the device's work: mark(slot) notes the point stream() has reached; comm_stream_after(slot)
  // makes the communication stream wait for that point alone and returns it; comm_queued(slot)
  // notes the work queued there so far as the slot's; join_comm() makes stream() wait for all of
  // it, join_comm(slot) for the slot's latest and what was queued before it. defer_join() leaves
  // join_comm() to the next use of stream() (or cublas(), curand()); cancel_deferred_join() takes
  // it back, for a caller that joins slot by slot.
  void mark(int slot);
  cudaStream_t comm_stream_after(int slot);
  // Where a collective of `slot` runs: stream() for kOnStream (ndarray/backend/backend.hpp; any negative
  // slot), else comm_stream_after(slot).
  cudaStream_t collective_stream(int slot) { return slot < 0 ? stream() : comm_stream_after(slot); }
  void comm_queued(int slot);
  void join_comm();
  void join_comm(int slot);
  void defer_join() { join_deferred_.store(true, std::memory_order_release); }
  void cancel_deferred_join() { join_deferred_.store(false, std::memory_order_release); }
  cudaMemPool_t pool() const { return pool_; }
  int multiprocessors() const { return multiprocessors_; }
  // Whether the calling thread has this device current (its primary context): what an op asks
  // before its launches, without cudaGetDevice's cost (cuda/driver.hpp).
  bool is_current() const { return context_ != nullptr && current_context() == context_; }
  // Programmatic dependent launch (compute capability 9.0 or newer): a kernel launched with
  // cudaLaunchAttributeProgrammaticStreamSerialization may start before the kernel ahead of it
  // ends, and waits for it (griddepcontrol.wait) before reading what that kernel writes.
  bool dependent_launch() const { return dependent_launch_; }

  cublasHandle_t cublas();  // bound to stream()
  // The generator, bound to stream(), ready to draw n values (see CurandStream::prepare), and the
  // lock that keeps other threads off it until the draw is queued.
  std::pair<curandGenerator_t, std::unique_lock<std::mutex>> curand(std::int64_t offset, std::int64_t n);
  std::uint64_t curand_position();
  void set_curand_position(std::uint64_t position);
  // Frees the generator's device state (made again, at the same position, by the next draw).
  void release_curand();

  // The last op queued, named in the error when a queued kernel fails.
  void set_last_op(const char* op) { last_op_.store(op, std::memory_order_relaxed); }
  const char* last_op() const { return last_op_.load(std::memory_order_relaxed); }

 private:
  void settle() {
    if (join_deferred_.load(std::memory_order_acquire) && join_deferred_.exchange(false)) join_comm();
  }

  int id_;
  cudaStream_t stream_ = nullptr;
  CUcontext context_ = nullptr;  // the device's primary context
  cudaStream_t copy_stream_ = nullptr;
  cudaStream_t comm_stream_ = nullptr;
  cudaEvent_t comm_done_ = nullptr;
  std::vector<cudaEvent_t> marks_;  // by slot, made on first use
  std::vector<cudaEvent_t> slot_done_;  // by slot: the communication stream after the slot's work
  std::atomic<bool> join_deferred_{false};
  cudaMemPool_t pool_ = nullptr;
  int multiprocessors_ = 0;
  bool dependent_launch_ = false;
  std::once_flag cublas_once_;
  cublasHandle_t cublas_ = nullptr;
  std::mutex curand_mutex_;
  CurandStream curand_{false};
  std::atomic<const char*> last_op_{"(none)"};
};

// A launch configuration of `grid` x `block` on stream that is a programmatic dependent launch
// when `dependent` (Device::dependent_launch()): the kernel may start while the one ahead of it
// runs, and waits for it with griddepcontrol.wait. For cudaLaunchKernelEx/cudaLaunchKernelExC.
struct DependentLaunch {
  cudaLaunchAttribute attribute{};
  cudaLaunchConfig_t config{};
  DependentLaunch(dim3 grid, dim3 block, cudaStream_t stream, bool dependent) {
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    config.gridDim = grid;
    config.blockDim = block;
    config.stream = stream;
    config.attrs = &attribute;
    config.numAttrs = dependent ? 1 : 0;
  }
  DependentLaunch(const DependentLaunch&) = delete;  // config points at attribute
  DependentLaunch& operator=(const DependentLaunch&) = delete;
};

// A new non-blocking stream of the device's highest priority (call with the device current): a
// collective's work on it is scheduled as soon as SMs or copy engines free up.
cudaStream_t make_priority_stream();

// The state of gpu(id), created on first use. Callers make gpu(id) current with a DeviceGuard.
Device& device(int id);
// gpu(id)'s state if it was made, else nullptr (for what need not make it, such as releasing).
Device* device_if_made(int id);

// The failure of mx::dist's communicator on gpu(device) (cuda/nccl.cpp, Note [the world
// communicator]), or empty: synchronize throws it.
std::string world_failure(int device);

// Lets gpu(src) and gpu(dst) access each other's memory directly (NVLink/PCIe P2P) when the
// hardware allows; returns whether they can. Done once per pair.
bool enable_peer_access(int src, int dst);

}  // namespace mx::cuda
