// The GPU backend: every op of gpu(i) is queued on that device's stream (cuda/device.hpp) and
// returns at once; synchronize() waits and reports a failed kernel with the last op queued.
#include <cstring>
#include <string>

#include "cuda/check.hpp"
#include "cuda/device.hpp"
#include "cuda/device_guard.hpp"
#include "cuda/graph.hpp"
#include "cuda/kernels.hpp"
#include "cuda/memory.hpp"
#include "ndarray/ops/parallel.hpp"

namespace mx {
namespace {

using cuda::Device;
using cuda::DeviceGuard;

// Makes ctx's device current for the scope and names the op for error reports.
class OnDevice {
 public:
  OnDevice(Context ctx, const char* op) : dev_(cuda::device(ctx.device_id())), guard_(ctx.device_id()) {
    dev_.set_last_op(op);
  }
  Device& device() const { return dev_; }
  cudaStream_t stream() const { return dev_.stream(); }

 private:
  Device& dev_;
  DeviceGuard guard_;
};

class GpuBackend final : public Backend {
 public:
  void* allocate(Context ctx, std::size_t bytes) override {
    UploadHint& hint = upload_hint();
    if (hint.device != ctx.device_id()) return cuda::device_allocate(ctx.device_id(), bytes);
    hint.device = -1;  // one block: the copy's destination
    hint.block = cuda::device_allocate_for_upload(ctx.device_id(), bytes);
    return hint.block;
  }
  void deallocate(Context ctx, void* ptr, std::size_t bytes) noexcept override {
    cuda::device_free(ctx.device_id(), ptr, bytes);
  }
  MemoryStats memory_stats(Context ctx) override { return cuda::device_memory_stats(ctx.device_id()); }
  void empty_cache(Context ctx) override { cuda::device_empty_cache(ctx.device_id()); }
  void release_state(Context ctx) override {
    if (cuda::Device* dev = cuda::device_if_made(ctx.device_id())) dev->release_curand();
  }

  void copy(Context ctx, void* dst, const void* src, std::size_t bytes) override {
    OnDevice on(ctx, "copy");
    NDG_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, on.stream()));
  }

  void copy_batch(Context ctx, const std::vector<CopyItem>& items) override {
    OnDevice on(ctx, "copy_batch");
    cuda::copy_batch(on.stream(), items);
  }

  void copy_2d(Context ctx, void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch,
               std::size_t width, std::size_t height) override {
    OnDevice on(ctx, "copy_2d");
    // cudaMemcpy2D rejects pitches above cudaDevAttrMaxPitch (2^31 - 1 bytes), which a single row
    // of a large array (concat along axis 0) has: such rows go as plain copies.
    constexpr std::size_t kMaxPitch = 2147483647;
    if (height == 1 || dst_pitch > kMaxPitch || src_pitch > kMaxPitch) {
      for (std::size_t r = 0; r < height; ++r) {
        NDG_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(dst) + r * dst_pitch,
                                       static_cast<const char*>(src) + r * src_pitch, width,
                                       cudaMemcpyDeviceToDevice, on.stream()));
      }
      return;
    }
    NDG_CUDA_CHECK(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, height, cudaMemcpyDeviceToDevice,
                                     on.stream()));
  }

  void copy_across(Context dst_ctx, void* dst, Context src_ctx, const void* src, std::size_t bytes) override {
    if (bytes == 0) return;
    if (dst_ctx.is_cpu()) {  // device -> host: wait, so that the host can read at once
      OnDevice on(src_ctx, "copyto");
      NDG_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, on.stream()));
      synchronize(src_ctx);
    } else if (src_ctx.is_cpu()) {
      copy_from_host(dst_ctx, dst, src, bytes);
    } else if (src_ctx == dst_ctx) {
      copy(dst_ctx, dst, src, bytes);
    } else {
      copy_peer(dst_ctx.device_id(), dst, src_ctx.device_id(), src, bytes);
    }
  }

  op::ExecContext enter(Context ctx, const char* op, int& previous_device) override {
    const int id = ctx.device_id();
    Device& dev = cuda::device(id);
    dev.set_last_op(op);
    previous_device = -1;
    if (dev.is_current()) return {ctx, dev.stream(), dev.multiprocessors()};
    NDG_CUDA_CHECK(cudaGetDevice(&previous_device));
    if (previous_device == id) {
      previous_device = -1;
    } else {
      NDG_CUDA_CHECK(cudaSetDevice(id));
    }
    return {ctx, dev.stream(), dev.multiprocessors()};
  }
  void leave(int previous_device) noexcept override {
    if (previous_device >= 0) cudaSetDevice(previous_device);
  }

  void gather(Context ctx, DType dt, const GatherIndex& index, const void* in, void* out) override {
    OnDevice on(ctx, "transpose");
    cuda::gather(on.stream(), dt, index, in, out);
  }
  void scatter(Context ctx, DType dt, const GatherIndex& index, const void* in, void* out) override {
    OnDevice on(ctx, "copyto");
    cuda::scatter(on.stream(), dt, index, in, out);
  }
  std::uint64_t random_position(Context ctx) override { return cuda::device(ctx.device_id()).curand_position(); }
  void set_random_position(Context ctx, std::uint64_t position) override {
    cuda::device(ctx.device_id()).set_curand_position(position);
  }

  std::unique_ptr<CapturedWork> capture(Context ctx, const std::function<void()>& work,
                                        const std::vector<CopyItem>& before,
                                        const std::vector<CopyItem>& after) override {
    return cuda::capture(ctx.device_id(), work, before, after);
  }

  void synchronize(Context ctx) override {
    Device& dev = cuda::device(ctx.device_id());
    const cudaError_t status = cudaStreamSynchronize(dev.stream());
    if (std::string failed = cuda::world_failure(ctx.device_id()); !failed.empty()) throw DeviceError(failed);
    if (status != cudaSuccess) {
      throw DeviceError(ctx.str() + ": a queued GPU operation failed (last op queued: '" + dev.last_op() +
                        "'): " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
    }
  }

 private:
  // gpu(src) -> gpu(dst), ordered after the work queued on both devices so far, and before the
  // work queued on dst afterwards. The copy runs on the source stream, over NVLink/P2P when the
  // pair allows it (cudaMemcpyPeerAsync stages through the host otherwise).
  void copy_peer(int dst_id, void* dst, int src_id, const void* src, std::size_t bytes) {
    cuda::enable_peer_access(src_id, dst_id);
    Device& src_dev = cuda::device(src_id);
    Device& dst_dev = cuda::device(dst_id);
    src_dev.set_last_op("copyto");
    dst_dev.set_last_op("copyto");
    wait_for(src_dev, dst_dev);  // dst's earlier work (its allocation, readers of old data)
    {
      DeviceGuard guard(src_id);
      NDG_CUDA_CHECK(cudaMemcpyPeerAsync(dst, dst_id, src, src_id, bytes, src_dev.stream()));
    }
    wait_for(dst_dev, src_dev);  // dst's later work sees the copied data
  }

  // host -> device on the device's copy stream. The device's later work waits for it by event; a
  // destination that the device may still be using (any but a fresh upload block, see
  // UploadScope) is written only after the work queued so far.
  // - Up to kStagedBytes, without waiting: src is copied into a pinned staging block at once (the
  //   caller may change or free it when this returns), and the DMA reads that block, which
  //   returns to its cache when the copy has finished.
  // - Larger copies read src in place, at the DMA engines' full rate, and the host waits for the
  //   copy itself (not for the device's other work) before returning: a host copy of that much
  //   would cost more than the wait.
  static constexpr std::size_t kStagedBytes = std::size_t{16} << 20;

  void copy_from_host(Context dst_ctx, void* dst, const void* src, std::size_t bytes) {
    UploadHint& hint = upload_hint();
    const bool fresh = hint.block == dst;
    hint.block = nullptr;
    OnDevice on(dst_ctx, "copyto");
    Device& dev = on.device();
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    NDG_CUDA_CHECK(cudaStreamIsCapturing(dev.stream(), &capturing));
    // While a graph is recorded, a blocking copy ends the recording as any host wait does (the
    // caller then runs the work as it comes); without pinned memory it is the only way.
    if (capturing == cudaStreamCaptureStatusNone && bytes > kStagedBytes) {
      if (!fresh) stream_wait(dev.copy_stream(), dev.stream());
      NDG_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, dev.copy_stream()));
      stream_wait(dev.stream(), dev.copy_stream());
      const cudaError_t status = cudaStreamSynchronize(dev.copy_stream());
      if (status != cudaSuccess) {
        throw DeviceError(dst_ctx.str() + ": copyto from cpu(0) failed: " + cudaGetErrorName(status) + " (" +
                          cudaGetErrorString(status) + ")");
      }
      return;
    }
    void* staging = capturing == cudaStreamCaptureStatusNone ? cuda::allocate_pinned_staging(bytes) : nullptr;
    if (staging == nullptr) {
      NDG_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, on.stream()));
      synchronize(dst_ctx);
      return;
    }
    op::parallel_memcpy(staging, src, bytes);
    cudaEvent_t copied = nullptr;
    try {
      if (!fresh) stream_wait(dev.copy_stream(), dev.stream());
      NDG_CUDA_CHECK(cudaMemcpyAsync(dst, staging, bytes, cudaMemcpyHostToDevice, dev.copy_stream()));
      copied = record(dev.copy_stream());
      if (copied == nullptr) {  // nothing else tells when the copy is done: wait for it here
        NDG_CUDA_CHECK(cudaStreamSynchronize(dev.copy_stream()));
      } else {
        NDG_CUDA_CHECK(cudaStreamWaitEvent(dev.stream(), copied, 0));
      }
    } catch (...) {
      cuda::release_pinned_after(staging, copied);
      throw;
    }
    cuda::release_pinned_after(staging, copied);
  }

  // An event recorded on stream now (the current device's), or nullptr if it could not be.
  static cudaEvent_t record(cudaStream_t stream) {
    cudaEvent_t event = nullptr;
    if (cudaEventCreateWithFlags(&event, cudaEventDisableTiming) != cudaSuccess) return nullptr;
    if (cudaEventRecord(event, stream) != cudaSuccess) {
      cudaEventDestroy(event);
      return nullptr;
    }
    return event;
  }

  // Makes `waiter` wait for the work queued so far on `done` (streams of the current device).
  static void stream_wait(cudaStream_t waiter, cudaStream_t done) {
    cudaEvent_t event = record(done);
    if (event == nullptr) NDG_CUDA_CHECK(cudaGetLastError());
    const cudaError_t status = cudaStreamWaitEvent(waiter, event, 0);
    cudaEventDestroy(event);  // released once it has completed
    NDG_CUDA_CHECK(status);
  }

  // Makes `waiter`'s stream wait for the work queued so far on `done`'s stream (two devices).
  static void wait_for(Device& waiter, Device& done) {
    cudaEvent_t event = nullptr;
    {
      DeviceGuard guard(done.id());
      event = record(done.stream());
      if (event == nullptr) NDG_CUDA_CHECK(cudaGetLastError());
    }
    DeviceGuard guard(waiter.id());
    const cudaError_t status = cudaStreamWaitEvent(waiter.stream(), event, 0);
    cudaEventDestroy(event);  // released once it has completed
    NDG_CUDA_CHECK(status);
  }
};

}  // namespace

Backend* gpu_backend() {
  static GpuBackend instance;
  return &instance;
}

}  // namespace mx
