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
// little compute), as PyTorch sizes its intra-op pool, and at kDefaultTeamLimit threads. The cap
// is read once (parallel.cpp).
int cpu_team();
// At most 16 threads unless OMP_NUM_THREADS asks for more: a training step's loops are too short
// for a wider team, whose every region costs more to start and join than the share of work it
// saves. On a 32-core host the MLP epoch of tutorials/train_fashion_mnist on cpu(0) took 0.20 s
// with 16 threads, 0.45 s with 24 and 0.91 s with 32 (bench/RESULTS.md, "One thread team").
inline constexpr int kDefaultTeamLimit = 16;
// The cap for a machine whose /sys is under root ("" the real one) and a process on cpus: the
// cgroup's quota (v2 cpu.max, v1 cfs quota; none: no cap), the distinct (package, core) pairs
// of cpus (unreadable topology: no cap) and kDefaultTeamLimit, at least 1.
int cpu_team_cap(const std::string& root, const std::vector<int>& cpus);

}  // namespace mx::op
