#pragma once
// How many threads the CPU loops run on (ndarray/ops/parallel.hpp; defined in parallel.cpp).
// Internal; no OpenMP header needed.
#include <string>
#include <vector>

namespace mx::op {

// The threads of the CPU loops' team: OpenMP's (omp_get_max_threads), capped, unless
// OMP_NUM_THREADS is set, at what this process can really run at once: its cgroup's CPU quota (a
// container given 16 CPUs' time on a 32-CPU host) and one thread per physical core among the CPUs
// it may use (a core's second hardware thread adds a thread that spins in the team's barriers,
// little compute), as PyTorch sizes its intra-op pool. The cap is read once (parallel.cpp).
int cpu_team();
// The cap for a machine whose /sys is under root ("" the real one) and a process on cpus: the
// cgroup's quota (v2 cpu.max, v1 cfs quota; none: no cap) and the distinct (package, core) pairs
// of cpus (unreadable topology: no cap), at least 1; INT_MAX with neither.
int cpu_team_cap(const std::string& root, const std::vector<int>& cpus);

}  // namespace mx::op
