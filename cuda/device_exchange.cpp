// The groups of Note [in-stream exchange between GPUs]: a registry by key, and the host-mapped
// arena their slots come from.
#include "cuda/device_exchange.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "context/error.hpp"
#include "cuda/check.hpp"
#include "cuda/module_preload.hpp"

namespace mx::cuda {
namespace {

// Host-mapped, portable memory (every GPU of the process reaches it), handed out in 256-byte
// aligned pieces and never returned: a group lives as long as the process.
class Arena {
 public:
  void* take(std::size_t bytes) {
    bytes = (bytes + 255) / 256 * 256;
    if (used_ + bytes > size_) grow(bytes);
    void* p = static_cast<char*>(base_) + used_;
    used_ += bytes;
    return p;
  }

 private:
  void grow(std::size_t bytes) {
    const std::size_t size = std::max<std::size_t>(bytes, std::size_t{32} << 20);
    void* p = nullptr;
    NDG_CUDA_CHECK(cudaHostAlloc(&p, size, cudaHostAllocMapped | cudaHostAllocPortable));
    std::memset(p, 0, size);
    base_ = p;
    size_ = size;
    used_ = 0;
  }

  void* base_ = nullptr;
  std::size_t size_ = 0, used_ = 0;
};

struct Group {
  ExchangeView view;    // rank 0's; rank and the rest are the same for all
  std::vector<int> devices;  // by rank
};

// Read when a group is made.
unsigned long long timeout_ns() {
  const char* text = std::getenv("NDG_EXCHANGE_TIMEOUT");
  const double seconds = text != nullptr ? std::atof(text) : 60.0;
  return static_cast<unsigned long long>((seconds > 0 ? seconds : 60.0) * 1e9);
}

std::atomic<bool> in_use{false};

}  // namespace

bool exchanges_in_use() { return in_use.load(std::memory_order_relaxed); }

ExchangeView exchange_view(const std::string& key, int ranks, std::int64_t length, int device, const char* op) {
  static std::mutex mutex;
  static Arena arena;
  static std::map<std::tuple<std::string, int, std::int64_t>, Group> groups;
  std::lock_guard lock(mutex);
  const std::string name = std::string(op) + " '" + key + "'";
  Group& g = groups[{key, ranks, length}];
  if (g.view.slots == nullptr) {
    g.view.slots = static_cast<double*>(arena.take(static_cast<std::size_t>(2 * ranks * length) * sizeof(double)));
    g.view.published = static_cast<unsigned long long*>(arena.take(static_cast<std::size_t>(ranks) * 8));
    g.view.failed = static_cast<unsigned int*>(arena.take(4));
    g.view.timeout_ns = timeout_ns();
    g.view.ranks = ranks;
    g.view.length = length;
    in_use.store(true, std::memory_order_relaxed);
  }
  if (*reinterpret_cast<volatile unsigned int*>(g.view.failed) != 0) {
    throw DeviceError(name + ": a GPU of the group waited more than " + std::to_string(g.view.timeout_ns / 1e9) +
                      " s for the others (NDG_EXCHANGE_TIMEOUT): each of the " + std::to_string(ranks) +
                      " GPUs (ndev) must run it at every step, in the same order");
  }
  auto at = std::find(g.devices.begin(), g.devices.end(), device);
  if (at == g.devices.end()) {
    if (static_cast<int>(g.devices.size()) == ranks) {
      std::string joined;
      for (int d : g.devices) joined += (joined.empty() ? "gpu(" : ", gpu(") + std::to_string(d) + ")";
      throw DeviceError(name + ": gpu(" + std::to_string(device) + ") joins a group of ndev=" + std::to_string(ranks) +
                        " GPUs that already has " + joined);
    }
    at = g.devices.insert(g.devices.end(), device);
    // Before this GPU's first exchange kernel spins (Note [lazy loading and the exchange]).
    if (ranks > 1) preload_modules(device);
  }
  ExchangeView v = g.view;
  v.rank = static_cast<int>(at - g.devices.begin());
  return v;
}

}  // namespace mx::cuda
