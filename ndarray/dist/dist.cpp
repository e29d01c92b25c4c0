#include "ndarray/dist/dist.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>

#include "context/device.hpp"
#include "context/error.hpp"
#include "ndarray/backend/backend.hpp"
#include "ndarray/core/describe.hpp"
#include "ndarray/dist/collective.hpp"
#include "ndarray/dist/rendezvous.hpp"
#include "ndarray/ops/creation.hpp"

namespace mx::dist {
namespace {

// One launcher's variable names.
struct Launcher {
  const char* name;
  const char* rank;
  const char* world_size;
  const char* local_rank;
  const char* local_world_size;  // optional
};
constexpr Launcher kLaunchers[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
    {"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"srun", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"},
};

// The integer in variable name (Slurm writes SLURM_NTASKS_PER_NODE as "2(x3)": its leading number).
std::optional<int> integer(const GetEnv& getenv, const char* name, const char* launcher, bool required) {
  const char* text = getenv(name);
  if (text == nullptr || *text == '\0') {
    if (!required) return std::nullopt;
    throw ValueError(std::string("dist: ") + name + " is not set, but " + launcher + "'s variables are (" +
                     "a launcher sets it for every process)");
  }
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  const bool slurm_list = std::string(name) == "SLURM_NTASKS_PER_NODE" && *end == '(';
  if (end == text || (*end != '\0' && !slurm_list) || value < 0 || value > 1'000'000) {
    throw ValueError(std::string("dist: ") + name + "='" + text + "' is not a count or index (" + launcher + ")");
  }
  return static_cast<int>(value);
}

struct State {
  std::mutex mutex;
  bool initialized = false;
  Env env;
  double timeout = 300;
  std::string id;                // rank 0's NCCL id (world_size > 1)
  std::vector<int> devices;      // the GPUs of the communicator, once made
  std::string init_file;         // NDG_INIT_FILE, removed by rank 0 at shutdown
};

State& state() {
  static State* s = new State;  // never destroyed: outlives whatever trains
  return *s;
}

std::string who(const Env& env) {
  return "rank " + std::to_string(env.rank) + " of " + std::to_string(env.world_size);
}

// The communicator over `devices`, made on first use; later calls must bring the same GPUs.
Collectives& world_over(State& s, const std::vector<int>& devices, const char* op) {
  Collectives* nccl = nccl_collectives();
  if (s.devices.empty()) {
    nccl->init_world(s.id, s.env.world_size * static_cast<int>(devices.size()),
                     s.env.rank * static_cast<int>(devices.size()), devices, s.timeout, who(s.env));
    s.devices = devices;
  } else if (devices != s.devices) {
    std::string had, got;
    for (int d : s.devices) had += (had.empty() ? "gpu(" : ", gpu(") + std::to_string(d) + ")";
    for (int d : devices) got += (got.empty() ? "gpu(" : ", gpu(") + std::to_string(d) + ")";
    throw ValueError(std::string("dist::") + op + ": this process's communicator is over " + had +
                     " (its first collective's GPUs), but these copies are on " + got);
  }
  return *nccl;
}

// Checks the groups (one copy per GPU of this process, the same GPUs in the same order in each)
// and returns their items and GPUs.
std::vector<AllReduceItem> items_of(const std::vector<std::vector<nd::NDArray>>& groups, std::vector<int>& devices,
                                    const char* op) {
  std::vector<AllReduceItem> items;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const std::vector<nd::NDArray>& group = groups[g];
    std::vector<int> on;
    AllReduceItem item{group.empty() ? DType::float32 : group[0].dtype(), group.empty() ? 0 : group[0].size(), {}};
    for (const nd::NDArray& x : group) {
      const std::string where = std::string("dist::") + op + ": group " + std::to_string(g) + ", " +
                                (x.is_none() ? std::string("a none array") : nd::describe(x));
      if (x.is_none() || !x.context().is_gpu()) throw ContextMismatch(where + ": every copy must be on a GPU");
      if (!x.is_contiguous()) throw ValueError(where + ": copies must be contiguous");
      if (x.shape() != group[0].shape() || x.dtype() != group[0].dtype()) {
        throw ShapeError(where + ": every copy of a group has the first copy's shape and dtype");
      }
      on.push_back(x.context().device_id());
      item.buffers.push_back(x.data());
    }
    if (g == 0) devices = on;
    if (on != devices) {
      throw ContextMismatch(std::string("dist::") + op + ": group " + std::to_string(g) +
                            " is not on the GPUs of group 0, in their order");
    }
    items.push_back(std::move(item));
  }
  return items;
}

}  // namespace

Env read_env(const GetEnv& getenv) {
  for (const Launcher& l : kLaunchers) {
    if (!integer(getenv, l.rank, l.name, false)) continue;
    Env env;
    env.launcher = l.name;
    env.rank = *integer(getenv, l.rank, l.name, true);
    env.world_size = *integer(getenv, l.world_size, l.name, true);
    env.local_rank = *integer(getenv, l.local_rank, l.name, true);
    env.local_world_size = integer(getenv, l.local_world_size, l.name, false).value_or(env.world_size);
    if (env.world_size < 1 || env.rank >= env.world_size) {
      throw ValueError(std::string("dist: ") + l.rank + "=" + std::to_string(env.rank) + " does not lie in 0 .. " +
                       l.world_size + " - 1 (" + l.world_size + "=" + std::to_string(env.world_size) + ")");
    }
    if (env.local_world_size < 1 || env.local_world_size > env.world_size || env.local_rank >= env.local_world_size) {
      throw ValueError(std::string("dist: ") + l.local_rank + "=" + std::to_string(env.local_rank) + " and " +
                       l.local_world_size + "=" + std::to_string(env.local_world_size) + " do not fit " +
                       l.world_size + "=" + std::to_string(env.world_size));
    }
    return env;
  }
  return Env{};
}

Env read_env() {
  return read_env([](const char* name) -> const char* { return std::getenv(name); });
}

void init(double timeout_seconds) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (s.initialized) throw ValueError("dist::init: called twice (" + who(s.env) + " has joined already)");
  const GetEnv getenv = [](const char* name) -> const char* { return std::getenv(name); };
  Env env = read_env(getenv);
  double timeout = timeout_seconds > 0 ? timeout_seconds : 300;
  if (const char* t = std::getenv("NDG_DIST_TIMEOUT"); t && *t) {
    char* end = nullptr;
    timeout = std::strtod(t, &end);
    if (*end != '\0' || !(timeout > 0)) {
      throw ValueError(std::string("dist::init: NDG_DIST_TIMEOUT='") + t + "' is not a positive number of seconds");
    }
  }
  if (env.world_size > 1) {
    Collectives* nccl = nccl_collectives();
    if (nccl == nullptr) {
      throw DeviceError("dist::init (" + who(env) + "): this build has no NCCL, which training across processes needs");
    }
    s.id = detail::share_from_rank0(env, getenv, [nccl] { return nccl->make_world_id(); }, timeout);
    if (const char* file = std::getenv("NDG_INIT_FILE")) s.init_file = file;
  }
  // mpirun, srun and torchrun start a rank per GPU, each with an OpenMP team as wide as the
  // machine, whose spinning workers then starve the other ranks' threads: this thread's CPU loops
  // get the rank's share of the cores, unless OMP_NUM_THREADS says otherwise (ndgluon-run sets it
  // so, which every thread of the rank then follows) or the launcher bound the rank to fewer cores
  // than the machine has (its share already).
  const int cores = omp_get_num_procs();  // those this process may run on
  if (env.local_world_size > 1 && std::getenv("OMP_NUM_THREADS") == nullptr &&
      cores >= static_cast<int>(std::thread::hardware_concurrency())) {
    omp_set_num_threads(std::max(1, cores / env.local_world_size));
  }
  s.env = env;
  s.timeout = timeout;
  s.initialized = true;
}

bool is_initialized() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return s.initialized;
}

const Env& env() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.initialized) throw ValueError("dist::env: call dist::init() first");
  return s.env;
}
int rank() { return env().rank; }
int world_size() { return env().world_size; }
int local_rank() { return env().local_rank; }

namespace {

// all_reduce and all_reduce_overlapped (slot kOnStream: on the GPUs' streams).
void sum_over_processes(const std::vector<std::vector<nd::NDArray>>& groups, int slot, const char* op) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.initialized) throw ValueError(std::string("dist::") + op + ": call dist::init() first");
  if (groups.empty()) return;
  if (s.env.world_size == 1) {  // this process's copies alone, on any contexts
    std::vector<std::vector<nd::NDArray>> several;
    for (const auto& group : groups) {
      if (group.size() > 1) several.push_back(group);
    }
    if (slot == kOnStream) nd::all_reduce(several);
    else nd::overlap::all_reduce(several, slot);
    return;
  }
  std::vector<int> devices;
  std::vector<AllReduceItem> items = items_of(groups, devices, op);
  world_over(s, devices, op).all_reduce_world(items, std::string(op) + " of " + std::to_string(items.size()) + " tensors", slot);
}

}  // namespace

void all_reduce(const std::vector<std::vector<nd::NDArray>>& groups) {
  sum_over_processes(groups, kOnStream, "all_reduce");
}

void all_reduce_overlapped(const std::vector<std::vector<nd::NDArray>>& groups, int slot) {
  if (slot < 0) throw ValueError("dist::all_reduce_overlapped: slot " + std::to_string(slot) + " is negative");
  sum_over_processes(groups, slot, "all_reduce_overlapped");
}

void broadcast_from_rank0(const std::vector<std::vector<nd::NDArray>>& groups) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.initialized) throw ValueError("dist::broadcast_from_rank0: call dist::init() first");
  if (groups.empty()) return;
  if (s.env.world_size == 1) {
    for (const std::vector<nd::NDArray>& group : groups) {
      for (std::size_t i = 1; i < group.size(); ++i) {
        nd::NDArray dst = group[i];
        group[0].copyto(dst);
      }
    }
    return;
  }
  std::vector<int> devices;
  std::vector<AllReduceItem> items = items_of(groups, devices, "broadcast_from_rank0");
  world_over(s, devices, "broadcast_from_rank0").broadcast_world(items, "broadcast of " + std::to_string(items.size()) + " tensors");
}

void barrier() {
  std::vector<int> devices;
  {
    State& s = state();
    std::lock_guard lock(s.mutex);
    if (!s.initialized) throw ValueError("dist::barrier: call dist::init() first");
    if (s.env.world_size == 1) return;
    devices = s.devices.empty() ? std::vector<int>{s.env.local_rank % std::max(1, num_gpus())} : s.devices;
  }
  std::vector<nd::NDArray> ones;
  for (int d : devices) ones.push_back(nd::ones({1}, gpu(d)));
  all_reduce({ones});
  for (const nd::NDArray& x : ones) x.wait_to_read();  // throws the communicator's failure, if any
}

void shutdown() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.initialized) return;
  if (s.env.world_size > 1) {
    nccl_collectives()->shutdown_world();
    if (s.env.rank == 0 && !s.init_file.empty()) {
      std::error_code ec;
      std::filesystem::remove(s.init_file, ec);
    }
    detail::finalize_mpi();
  }
  s.initialized = false;
  s.env = Env{};
  s.id.clear();
  s.devices.clear();
  s.init_file.clear();
}

}  // namespace mx::dist
