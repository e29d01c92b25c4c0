#include "cuda/device.hpp"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <memory>
#include <vector>

#include "context/device.hpp"
#include "cuda/check.hpp"
#include "cuda/device_guard.hpp"
#include "cuda/kernels.hpp"
#include "ndarray/core/memory.hpp"

namespace mx::cuda {

Device::Device(int id) : id_(id) {
  NDG_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  NDG_CUDA_CHECK(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking));
  // Above the device's work in priority: a collective's blocks are scheduled as soon as SMs free up,
  // so the sum runs beside the backward GEMMs instead of after them.
  comm_stream_ = make_priority_stream();
  NDG_CUDA_CHECK(cudaEventCreateWithFlags(&comm_done_, cudaEventDisableTiming));
  // Before any use of the generator (curand_position() may create it): draws must be queued on
  // this stream, or the ops that read them would not be ordered after them.
  curand_.set_stream(stream_);
  NDG_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool_, id));
  // Keep freed blocks cached in the pool instead of returning them at every synchronisation.
  std::uint64_t threshold = std::numeric_limits<std::uint64_t>::max();
  NDG_CUDA_CHECK(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &threshold));
  NDG_CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors_, cudaDevAttrMultiProcessorCount, id));
  int major = 0;
  NDG_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, id));
  dependent_launch_ = major >= 9 && kernels_wait_on_dependencies();
  context_ = current_context();  // the primary context, current since the first call above
}

cublasHandle_t Device::cublas() {
  settle();  // bound to stream_
  std::call_once(cublas_once_, [this] {
    NDG_CUDA_CHECK(cublasCreate(&cublas_));
    NDG_CUDA_CHECK(cublasSetStream(cublas_, stream_));
  });
  return cublas_;
}

cudaStream_t make_priority_stream() {
  int least = 0, greatest = 0;
  NDG_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cudaStream_t stream = nullptr;
  NDG_CUDA_CHECK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, greatest));
  return stream;
}

namespace {

// events[slot], made (with those before it) on first use; call with the device current.
cudaEvent_t slot_event(std::vector<cudaEvent_t>& events, int slot) {
  while (events.size() <= static_cast<std::size_t>(slot)) {
    cudaEvent_t event = nullptr;
    NDG_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    events.push_back(event);
  }
  return events[static_cast<std::size_t>(slot)];
}

}  // namespace

void Device::mark(int slot) {
  DeviceGuard guard(id_);
  NDG_CUDA_CHECK(cudaEventRecord(slot_event(marks_, slot), stream_));
}

cudaStream_t Device::comm_stream_after(int slot) {
  if (static_cast<std::size_t>(slot) >= marks_.size()) mark(slot);  // never marked: the point reached now
  DeviceGuard guard(id_);
  NDG_CUDA_CHECK(cudaStreamWaitEvent(comm_stream_, marks_[static_cast<std::size_t>(slot)], 0));
  return comm_stream_;
}

void Device::comm_queued(int slot) {
  DeviceGuard guard(id_);
  NDG_CUDA_CHECK(cudaEventRecord(comm_done_, comm_stream_));
  NDG_CUDA_CHECK(cudaEventRecord(slot_event(slot_done_, slot), comm_stream_));
}

void Device::join_comm() {
  join_deferred_.store(false, std::memory_order_release);
  DeviceGuard guard(id_);
  NDG_CUDA_CHECK(cudaStreamWaitEvent(stream_, comm_done_, 0));
}

void Device::join_comm(int slot) {
  DeviceGuard guard(id_);
  if (static_cast<std::size_t>(slot) >= slot_done_.size()) return;  // nothing was queued for it
  NDG_CUDA_CHECK(cudaStreamWaitEvent(stream_, slot_done_[static_cast<std::size_t>(slot)], 0));
}

std::pair<curandGenerator_t, std::unique_lock<std::mutex>> Device::curand(std::int64_t offset, std::int64_t n) {
  settle();  // bound to stream_
  std::unique_lock lock(curand_mutex_);
  return {curand_.prepare(offset, n), std::move(lock)};
}

std::uint64_t Device::curand_position() {
  std::lock_guard lock(curand_mutex_);
  DeviceGuard guard(id_);
  return curand_.position();
}

void Device::set_curand_position(std::uint64_t position) {
  std::lock_guard lock(curand_mutex_);
  DeviceGuard guard(id_);
  curand_.prepare(static_cast<std::int64_t>(position), 0);
}

void Device::release_curand() {
  std::lock_guard lock(curand_mutex_);
  DeviceGuard guard(id_);
  curand_.release();
}

namespace {

struct Devices {
  std::vector<std::once_flag> once;
  std::vector<std::atomic<Device*>> states;
  std::vector<std::once_flag> peer_once;
  std::vector<char> peer_ok;
  explicit Devices(int n)
      : once(static_cast<std::size_t>(n)), states(static_cast<std::size_t>(n)),
        peer_once(static_cast<std::size_t>(n * n)), peer_ok(static_cast<std::size_t>(n * n), 0) {}
};

Devices& devices() {
  static Devices* all = new Devices(num_gpus());  // intentionally never destroyed (see header)
  return *all;
}

}  // namespace

Device& device(int id) {
  Devices& all = devices();
  // Made already (every op after the device's first): one acquire load, no call_once.
  if (Device* made = all.states[static_cast<std::size_t>(id)].load(std::memory_order_acquire)) return *made;
  std::call_once(all.once[static_cast<std::size_t>(id)], [&] {
    DeviceGuard guard(id);
    all.states[static_cast<std::size_t>(id)] = new Device(id);
    // Registered once a context exists, so that it runs before the runtime's own teardown (most
    // often: a library loaded later may register one after it): at exit the cached memory goes
    // back, and a leak checker sees only what live arrays hold.
    static std::once_flag at_exit;
    std::call_once(at_exit, [] {
      std::atexit([] {
        try {
          mx::release_cached_resources();
        } catch (...) {  // the process is ending, perhaps because of a failed device
        }
      });
    });
  });
  return *all.states[static_cast<std::size_t>(id)];
}

Device* device_if_made(int id) { return devices().states[static_cast<std::size_t>(id)].load(); }

bool enable_peer_access(int src, int dst) {
  if (src == dst) return true;
  Devices& all = devices();
  const auto pair = static_cast<std::size_t>(src * num_gpus() + dst);
  // One flag for both orders of the pair: each direction is enabled once (again would be an error).
  const auto unordered = static_cast<std::size_t>(std::min(src, dst) * num_gpus() + std::max(src, dst));
  std::call_once(all.peer_once[unordered], [&] {
    int can_access = 0, can_access_back = 0;
    NDG_CUDA_CHECK(cudaDeviceCanAccessPeer(&can_access, src, dst));
    NDG_CUDA_CHECK(cudaDeviceCanAccessPeer(&can_access_back, dst, src));
    if (!can_access || !can_access_back) return;
    for (auto [from, to] : {std::pair{src, dst}, std::pair{dst, src}}) {
      DeviceGuard guard(from);
      const cudaError_t status = cudaDeviceEnablePeerAccess(to, 0);
      if (status == cudaErrorPeerAccessAlreadyEnabled) cudaGetLastError();
      else NDG_CUDA_CHECK(status);
      // Peer access does not extend to stream-ordered pools: grant `from` access to `to`'s pool
      // too, or copies between pool allocations would be staged through the host.
      cudaMemAccessDesc access{};
      access.location.type = cudaMemLocationTypeDevice;
      access.location.id = from;
      access.flags = cudaMemAccessFlagsProtReadWrite;
      NDG_CUDA_CHECK(cudaMemPoolSetAccess(device(to).pool(), &access, 1));
    }
    all.peer_ok[pair] = 1;
    all.peer_ok[static_cast<std::size_t>(dst * num_gpus() + src)] = 1;
  });
  return all.peer_ok[pair] != 0;
}

}  // namespace mx::cuda
