// All-reduce across the GPUs of this process through NCCL (built only with the nccl option).
// One communicator clique per ordered device list, created on first use with ncclCommInitAll and
// kept for the life of the process (as the Device states are). Each rank's collective is queued
// on its device's stream, so it is ordered after the work that produced the buffers and before
// the work that reads them, with no host synchronisation.
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "context/error.hpp"
#include "cuda/check.hpp"
#include "cuda/device.hpp"
#include "cuda/device_guard.hpp"
#include "cuda/peer_reduce.hpp"
#include "ndarray/backend/backend.hpp"

namespace mx {
namespace {

void check_nccl(ncclResult_t status, const std::string& call) {
  if (status == ncclSuccess) return;
  throw DeviceError(call + " failed: " + ncclGetErrorString(status) + " (" + ncclGetLastError(nullptr) + ")");
}

ncclDataType_t nccl_type(DType dt) {
  switch (dt) {
    case DType::float32: return ncclFloat32;
    case DType::float64: return ncclFloat64;
    case DType::int32: return ncclInt32;
    case DType::int64: return ncclInt64;
    case DType::uint8: return ncclUint8;
    case DType::float16: return ncclFloat16;
    case DType::bfloat16: return ncclBfloat16;
  }
  throw DTypeError(std::string("all_reduce: dtype ") + dtype_name(dt) + " is not supported by NCCL");
}

std::string device_list(const std::vector<int>& devices) {
  std::string out;
  for (int d : devices) out += (out.empty() ? "gpu(" : ", gpu(") + std::to_string(d) + ")";
  return out;
}

// The stream each device runs a collective on (see kOnStream in ndarray/backend/backend.hpp): its own, or
// its communication stream after the slot's mark.
std::vector<cudaStream_t> streams_for(const std::vector<int>& devices, int slot) {
  std::vector<cudaStream_t> streams;
  for (int d : devices) streams.push_back(cuda::device(d).collective_stream(slot));
  return streams;
}

// After an overlapped collective: what join() waits for includes it.
void queued_on(const std::vector<int>& devices, int slot) {
  if (slot == kOnStream) return;
  for (int d : devices) cuda::device(d).comm_queued(slot);
}

// Note [the world communicator]
// mx::dist's process group: one NCCL communicator per GPU of this process, ranks first_rank .. of
// nranks across the job. NCCL waits forever for a rank that has stopped, so a watchdog thread
// follows every collective with an event per GPU: one that has not finished after the timeout,
// or an error NCCL reports, aborts the communicators (which ends their kernels) and records the
// failure, which every later world call and every synchronize on those GPUs throws. As
// torch.distributed's NCCL watchdog.
class World {
 public:
  void init(const std::string& id, int nranks, int first_rank, const std::vector<int>& devices, double timeout,
            const std::string& who) {
    std::lock_guard lock(mutex_);
    if (!comms_.empty()) throw ValueError("dist: the communicator of " + who_ + " exists already");
    ncclUniqueId unique;
    if (id.size() != sizeof unique) throw ValueError("dist: an NCCL id of " + std::to_string(id.size()) + " bytes");
    std::memcpy(&unique, id.data(), sizeof unique);
    for (int d : devices) cuda::device(d);  // the streams exist before NCCL is used with them
    std::vector<ncclComm_t> comms(devices.size());
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    ncclResult_t first_error = ncclSuccess;
    for (std::size_t i = 0; i < devices.size() && first_error == ncclSuccess; ++i) {
      cuda::DeviceGuard guard(devices[i]);
      first_error = ncclCommInitRank(&comms[i], nranks, unique, first_rank + static_cast<int>(i));
    }
    const ncclResult_t end = ncclGroupEnd();
    const std::string what = "ncclCommInitRank (" + who + ", " + std::to_string(nranks) + " NCCL ranks)";
    check_nccl(first_error, what);
    check_nccl(end, what);
    devices_ = devices;
    comms_ = std::move(comms);
    timeout_ = timeout;
    who_ = who;
    stop_ = false;
    watchdog_ = std::thread([this] { watch(); });
  }

  void collective(const std::vector<AllReduceItem>& items, const std::string& op, bool broadcast, int slot) {
    for (const AllReduceItem& item : items) nccl_type(item.dtype);
    std::vector<ncclComm_t> comms;
    // At most kMaxInFlight collectives queued: NCCL's own queue blocks the host inside NCCL when
    // it fills behind a lost rank, where no failure could reach it. Here it waits outside NCCL.
    for (;;) {
      {
        std::lock_guard lock(mutex_);
        if (!failure_.empty()) {
          reported_ = true;
          throw DeviceError(failure_);
        }
        if (comms_.empty()) throw ValueError("dist: " + op + " before the communicator was made (dist::init)");
        pop_finished();
        if (!aborted_ && pending_.size() < kMaxInFlight) {
          comms = comms_;
          break;
        }
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    const std::vector<cudaStream_t> streams = streams_for(devices_, slot);
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    ncclResult_t first_error = ncclSuccess;
    for (const AllReduceItem& item : items) {
      for (std::size_t r = 0; r < devices_.size() && first_error == ncclSuccess; ++r) {
        cuda::device(devices_[r]).set_last_op(broadcast ? "broadcast" : "all_reduce");
        const auto count = static_cast<std::size_t>(item.count);
        first_error = broadcast ? ncclBroadcast(item.buffers[r], item.buffers[r], count, nccl_type(item.dtype), 0,
                                                comms[r], streams[r])
                                : ncclAllReduce(item.buffers[r], item.buffers[r], count, nccl_type(item.dtype),
                                                ncclSum, comms[r], streams[r]);
      }
    }
    const ncclResult_t end = ncclGroupEnd();
    check_nccl(first_error, who_ + ": " + op);
    check_nccl(end, who_ + ": ncclGroupEnd of " + op);
    queued_on(devices_, slot);
    Pending pending{{}, op, std::chrono::steady_clock::now()};
    for (std::size_t r = 0; r < devices_.size(); ++r) {
      cuda::DeviceGuard guard(devices_[r]);
      cudaEvent_t done = nullptr;
      NDG_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
      NDG_CUDA_CHECK(cudaEventRecord(done, streams[r]));
      pending.done.push_back(done);
    }
    std::lock_guard lock(mutex_);
    pending_.push_back(std::move(pending));
  }

  // The failure, once the abort has finished (a wait that the abort freed gets it, not a success).
  std::string failure_on(int device) {
    if (!aborted_.load()) return {};  // every synchronize asks: no lock while all is well
    for (;;) {
      {
        std::lock_guard lock(mutex_);
        if (!aborted_) return {};
        if (std::find(devices_.begin(), devices_.end(), device) == devices_.end()) return {};
        if (!failure_.empty()) {
          reported_ = true;
          return failure_;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  // Waits for the collectives queued, then destroys the communicators (not after an abort).
  void shutdown() {
    {
      std::lock_guard lock(mutex_);
      if (comms_.empty()) return;
      stop_ = true;
    }
    watchdog_.join();
    std::lock_guard lock(mutex_);
    for (Pending& p : pending_) {
      for (cudaEvent_t e : p.done) {
        if (aborted_) cudaEventDestroy(e);
        else {
          cudaEventSynchronize(e);
          cudaEventDestroy(e);
        }
      }
    }
    pending_.clear();
    if (!aborted_) {
      for (ncclComm_t c : comms_) ncclCommDestroy(c);
    }
    comms_.clear();
    devices_.clear();
  }

 private:
  struct Pending {
    std::vector<cudaEvent_t> done;  // one per GPU, recorded after the collective
    std::string op;
    std::chrono::steady_clock::time_point start;
  };

  // Drops the collectives that have finished, oldest first. Under mutex_.
  void pop_finished() {
    while (!pending_.empty()) {
      Pending& front = pending_.front();
      for (cudaEvent_t e : front.done) {
        if (cudaEventQuery(e) == cudaErrorNotReady) return;
      }
      for (cudaEvent_t e : front.done) cudaEventDestroy(e);
      pending_.pop_front();
    }
  }

  void watch() {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      std::string failed;
      {
        std::lock_guard lock(mutex_);
        if (stop_) return;
        for (ncclComm_t c : comms_) {
          ncclResult_t async = ncclSuccess;
          if (ncclCommGetAsyncError(c, &async) == ncclSuccess && async != ncclSuccess && async != ncclInProgress) {
            failed = "NCCL reported " + std::string(ncclGetErrorString(async)) +
                     (pending_.empty() ? "" : " during " + pending_.front().op);
          }
        }
        if (failed.empty()) pop_finished();
        if (failed.empty() && !pending_.empty()) {
          const Pending& front = pending_.front();
          const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - front.start).count();
          if (waited > timeout_) {
            failed = front.op + " did not finish within " + std::to_string(static_cast<long>(timeout_)) +
                     " s: another rank has stopped or hangs";
          }
        }
        if (failed.empty()) continue;
        aborted_ = true;  // from now on nothing is queued, and waits wait for failure_
      }
      const std::string failure = "dist: " + who_ + ": " + failed + " (the communicator was aborted)";
      std::fprintf(stderr, "ndgluon: %s\n", failure.c_str());
      // The abort should free the waits of this process, which then throw the failure. If none has
      // within kReportSeconds (an abort that hangs, a wait that stays blocked), the process ends,
      // as torch.distributed's watchdog ends it: a job must not hang on a lost rank.
      std::thread([this, failure] {
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(kReportSeconds);
        while (std::chrono::steady_clock::now() < until) {
          if (reported_) return;
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        std::fprintf(stderr, "ndgluon: %s; no wait of this process returned within %d s of the abort: ending it\n",
                     failure.c_str(), kReportSeconds);
        std::_Exit(1);
      }).detach();
      // Ends the kernels that wait for the others. The failure is told only after it returns, so
      // that a process does not exit (and tear the runtime down) in the middle of it.
      for (ncclComm_t c : comms_) ncclCommAbort(c);
      std::lock_guard lock(mutex_);
      failure_ = failure;
      return;
    }
  }

  static constexpr int kReportSeconds = 10;
  static constexpr std::size_t kMaxInFlight = 16;

  std::mutex mutex_;
  std::atomic<bool> reported_{false};  // the failure was thrown to the process
  std::vector<int> devices_;
  std::vector<ncclComm_t> comms_;
  double timeout_ = 300;
  std::string who_;
  std::string failure_;
  std::atomic<bool> aborted_{false};  // written under mutex_; read without it by failure_on
  bool stop_ = false;
  std::deque<Pending> pending_;
  std::thread watchdog_;
};

World& world() {
  static World* instance = new World;  // never destroyed (see cuda/device.hpp); shutdown() ends it
  return *instance;
}

class NcclCollectives final : public Collectives {
 public:
  std::string make_world_id() override {
    ncclUniqueId id;
    check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    return std::string(reinterpret_cast<const char*>(&id), sizeof id);
  }
  void init_world(const std::string& id, int nranks, int first_rank, const std::vector<int>& devices,
                  double timeout_seconds, const std::string& who) override {
    world().init(id, nranks, first_rank, devices, timeout_seconds, who);
  }
  void all_reduce_world(const std::vector<AllReduceItem>& items, const std::string& op, int slot) override {
    world().collective(items, op, false, slot);
  }
  void broadcast_world(const std::vector<AllReduceItem>& items, const std::string& op) override {
    world().collective(items, op, true, kOnStream);
  }
  void shutdown_world() override { world().shutdown(); }

  void all_reduce_sum(const std::vector<int>& devices, const std::vector<AllReduceItem>& items, int slot,
                      bool copy_engines) override {
    for (const AllReduceItem& item : items) nccl_type(item.dtype);  // refuse before anything is queued
    // One thread at a time: a clique's group launches must not interleave across host threads.
    std::lock_guard lock(mutex_);
    // The items of each dtype that the copy engines sum; NCCL sums the others.
    std::vector<AllReduceItem> rest;
    std::map<DType, std::vector<AllReduceItem>> by_dtype;
    for (const AllReduceItem& item : items) (copy_engines ? by_dtype[item.dtype] : rest).push_back(item);
    for (auto& [dtype, group] : by_dtype) {
      if (!cuda::copy_engine_all_reduce(devices, group, slot)) rest.insert(rest.end(), group.begin(), group.end());
    }
    if (!rest.empty()) sum_by_nccl(devices, rest, slot);
    queued_on(devices, slot);
  }

  void release_local() override {
    std::lock_guard lock(mutex_);
    for (auto& [devices, ranks] : cliques_) {
      for (int d : devices) {
        cuda::DeviceGuard guard(d);
        cudaDeviceSynchronize();  // their collectives done; an error here is the next call's
      }
      for (ncclComm_t c : ranks) ncclCommDestroy(c);
    }
    cliques_.clear();
  }

  bool copy_engines_reach(const std::vector<int>& devices) override { return cuda::copy_engines_reach(devices); }
  void mark(int device, int slot) override { cuda::device(device).mark(slot); }
  void join(int device, int slot) override {
    if (slot == kAllSlots) cuda::device(device).join_comm();
    else cuda::device(device).join_comm(slot);
  }
  void defer_join(int device, bool deferred) override {
    if (deferred) cuda::device(device).defer_join();
    else cuda::device(device).cancel_deferred_join();
  }

 private:
  // The items through NCCL, one fused launch.
  void sum_by_nccl(const std::vector<int>& devices, const std::vector<AllReduceItem>& items, int slot) {
    const std::vector<ncclComm_t>& ranks = comms(devices);
    const std::vector<cudaStream_t> streams = streams_for(devices, slot);
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    ncclResult_t first_error = ncclSuccess;
    for (const AllReduceItem& item : items) {
      for (std::size_t r = 0; r < devices.size() && first_error == ncclSuccess; ++r) {
        cuda::device(devices[r]).set_last_op("all_reduce");
        first_error = ncclAllReduce(item.buffers[r], item.buffers[r], static_cast<std::size_t>(item.count),
                                    nccl_type(item.dtype), ncclSum, ranks[r], streams[r]);
      }
    }
    const ncclResult_t end = ncclGroupEnd();  // always closes the group, even after an error
    check_nccl(first_error, "ncclAllReduce over " + device_list(devices));
    check_nccl(end, "ncclGroupEnd (all_reduce over " + device_list(devices) + ")");
  }

  std::mutex mutex_;
  std::map<std::vector<int>, std::vector<ncclComm_t>> cliques_;  // until release_local

  const std::vector<ncclComm_t>& comms(const std::vector<int>& devices) {
    auto it = cliques_.find(devices);
    if (it != cliques_.end()) return it->second;
    for (int d : devices) cuda::device(d);  // the streams exist before NCCL is used with them
    std::vector<ncclComm_t> ranks(devices.size());
    check_nccl(ncclCommInitAll(ranks.data(), static_cast<int>(devices.size()), devices.data()),
               "ncclCommInitAll over " + device_list(devices));
    return cliques_.emplace(devices, std::move(ranks)).first->second;
  }
};

}  // namespace

Collectives* nccl_collectives() {
  static NcclCollectives instance;
  return &instance;
}

namespace cuda {
std::string world_failure(int device) { return world().failure_on(device); }
}  // namespace cuda

}  // namespace mx
