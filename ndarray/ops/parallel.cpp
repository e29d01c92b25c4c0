// cpu_team (ndarray/ops/parallel.hpp): OpenMP's team capped at the cgroup's CPU quota and the
// physical cores.
#include "ndarray/ops/parallel.hpp"

#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace mx::op {
namespace {

// The CPUs' worth of time the cgroup may use (cgroup v2's cpu.max, v1's cfs quota), rounded up;
// INT_MAX without a quota.
int cgroup_quota(const std::string& root) {
  std::ifstream v2(root + "/sys/fs/cgroup/cpu.max");
  std::string quota;
  double period = 0;
  if (v2 >> quota >> period) {
    if (quota == "max" || period <= 0) return INT_MAX;
    return static_cast<int>(std::ceil(std::atof(quota.c_str()) / period));
  }
  std::ifstream v1_quota(root + "/sys/fs/cgroup/cpu/cpu.cfs_quota_us"), v1_period(root + "/sys/fs/cgroup/cpu/cpu.cfs_period_us");
  double q = 0;
  if (v1_quota >> q && v1_period >> period && q > 0 && period > 0) return static_cast<int>(std::ceil(q / period));
  return INT_MAX;
}

// Distinct (package, core) pairs among cpus; INT_MAX where the topology is not readable.
int physical_cores(const std::string& root, const std::vector<int>& cpus) {
  std::set<std::pair<int, int>> cores;
  for (int cpu : cpus) {
    const std::string dir = root + "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    std::ifstream package(dir + "physical_package_id"), core(dir + "core_id");
    int p = 0, c = 0;
    if (!(package >> p) || !(core >> c)) return INT_MAX;
    cores.emplace(p, c);
  }
  return cores.empty() ? INT_MAX : static_cast<int>(cores.size());
}

}  // namespace

int cpu_team_cap(const std::string& root, const std::vector<int>& cpus) {
  return std::max(1, std::min({cgroup_quota(root), physical_cores(root, cpus), kDefaultTeamLimit}));
}

int cpu_team() {
  static const int limit = [] {
    if (std::getenv("OMP_NUM_THREADS") != nullptr) return INT_MAX;  // the user's choice stands
    cpu_set_t set;
    std::vector<int> cpus;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
      for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
      }
    }
    return cpu_team_cap("", cpus);
  }();
  return std::max(1, std::min(omp_get_max_threads(), limit));
}

}  // namespace mx::op

namespace mx::nd {
namespace {
thread_local bool t_single_threaded = false;
}

SingleThreadedOps::SingleThreadedOps() : previous_(t_single_threaded) { t_single_threaded = true; }
SingleThreadedOps::~SingleThreadedOps() { t_single_threaded = previous_; }
bool ops_single_threaded() { return t_single_threaded; }

}  // namespace mx::nd
