// All-reduce across the GPUs of this process through NCCL (built only with the nccl option).
// One communicator clique per ordered device list, created on first use with ncclCommInitAll and
// kept for the life of the process (as the Device states are). Each rank's collective is queued
// on its device's stream, so it is ordered after the work that produced the buffers and before
// the work that reads them, with no host synchronisation.
#include <nccl.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "context/error.hpp"
#include "cuda/device.hpp"
#include "cuda/device_guard.hpp"
#include "ndarray/backend.hpp"

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

class NcclCollectives final : public Collectives {
 public:
  void all_reduce_sum(const std::vector<int>& devices, const std::vector<AllReduceItem>& items) override {
    for (const AllReduceItem& item : items) nccl_type(item.dtype);  // refuse before anything is queued
    // One thread at a time: a clique's group launches must not interleave across host threads.
    std::lock_guard lock(mutex_);
    const std::vector<ncclComm_t>& ranks = comms(devices);
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    ncclResult_t first_error = ncclSuccess;
    for (const AllReduceItem& item : items) {
      for (std::size_t r = 0; r < devices.size() && first_error == ncclSuccess; ++r) {
        cuda::Device& dev = cuda::device(devices[r]);
        dev.set_last_op("all_reduce");
        first_error = ncclAllReduce(item.buffers[r], item.buffers[r], static_cast<std::size_t>(item.count),
                                    nccl_type(item.dtype), ncclSum, ranks[r], dev.stream());
      }
    }
    const ncclResult_t end = ncclGroupEnd();  // always closes the group, even after an error
    check_nccl(first_error, "ncclAllReduce over " + device_list(devices));
    check_nccl(end, "ncclGroupEnd (all_reduce over " + device_list(devices) + ")");
  }

 private:
  std::mutex mutex_;
  std::map<std::vector<int>, std::vector<ncclComm_t>> cliques_;  // never destroyed (see Device)

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

}  // namespace mx
