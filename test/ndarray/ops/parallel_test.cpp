// The CPU loops' team (ndarray/ops/parallel.hpp): its cap read from forged /sys trees (a cgroup
// quota, hyperthreaded cores, both, neither), OMP_NUM_THREADS winning over the cap, and a loop's
// threads: none but the caller's below the threshold, else the whole team.
#include "test/support/boost_test.hpp"
#include "test/support/files.hpp"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "ndarray/ops/cpu_team.hpp"
#include "ndarray/ops/parallel.hpp"
#include <ndarray/ndarray.hpp>

namespace {

// cpu<i>/topology of `cores` cores with `threads` hardware threads each, numbered as Linux numbers
// hyperthreads (cpu i and cpu i + cores share core i), on one package.
void forge_topology(const ndg_test::TempDir& root, int cores, int threads) {
  for (int t = 0; t < threads; ++t) {
    for (int c = 0; c < cores; ++c) {
      const std::string dir = root.file("sys/devices/system/cpu/cpu" + std::to_string(t * cores + c) + "/topology");
      std::filesystem::create_directories(dir);
      ndg_test::write_bytes(dir + "/physical_package_id", "0\n");
      ndg_test::write_bytes(dir + "/core_id", std::to_string(c) + "\n");
    }
  }
}

void forge_quota(const ndg_test::TempDir& root, const std::string& cpu_max) {
  std::filesystem::create_directories(root.file("sys/fs/cgroup"));
  ndg_test::write_bytes(root.file("sys/fs/cgroup/cpu.max"), cpu_max);
}

std::vector<int> first(int n) {
  std::vector<int> cpus;
  for (int i = 0; i < n; ++i) cpus.push_back(i);
  return cpus;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cpu_team)

BOOST_AUTO_TEST_CASE(one_thread_per_physical_core) {
  const ndg_test::TempDir root;
  forge_topology(root, 16, 2);
  BOOST_TEST(mx::op::cpu_team_cap(root.str(), first(32)) == 16);
  BOOST_TEST(mx::op::cpu_team_cap(root.str(), {0, 16, 1}) == 2);  // two threads of core 0, one of core 1
}

BOOST_AUTO_TEST_CASE(the_cgroup_quota_rounded_up) {
  const ndg_test::TempDir root;
  forge_topology(root, 32, 1);
  forge_quota(root, "1550000 100000\n");  // 15.5 CPUs
  BOOST_TEST(mx::op::cpu_team_cap(root.str(), first(32)) == 16);
  forge_quota(root, "1050000 100000\n");  // 10.5 CPUs
  BOOST_TEST(mx::op::cpu_team_cap(root.str(), first(32)) == 11);
  forge_quota(root, "max 100000\n");  // no quota: 32 cores, at most kDefaultTeamLimit
  BOOST_TEST(mx::op::cpu_team_cap(root.str(), first(32)) == mx::op::kDefaultTeamLimit);
  forge_quota(root, "50000 100000\n");  // half a CPU: still one thread
  BOOST_TEST(mx::op::cpu_team_cap(root.str(), first(32)) == 1);
}

BOOST_AUTO_TEST_CASE(only_the_default_limit_without_quota_or_topology) {
  const ndg_test::TempDir root;
  BOOST_TEST(mx::op::cpu_team_cap(root.str(), first(8)) == mx::op::kDefaultTeamLimit);
  forge_topology(root, 2, 1);  // cpus 2.. have no topology: unreadable, no cap from it
  BOOST_TEST(mx::op::cpu_team_cap(root.str(), first(8)) == mx::op::kDefaultTeamLimit);
  forge_topology(root, 4, 1);
  BOOST_TEST(mx::op::cpu_team_cap(root.str(), first(4)) == 4);
}

BOOST_AUTO_TEST_CASE(omp_num_threads_wins) {
  // The suites run with OMP_NUM_THREADS=2 (test/meson.build): the team is OpenMP's, uncapped.
  const char* threads = std::getenv("OMP_NUM_THREADS");
  if (threads == nullptr) return;
  BOOST_TEST(mx::op::cpu_team() == std::atoi(threads));
}

BOOST_AUTO_TEST_CASE(small_loops_inline_and_large_ones_on_the_whole_team) {
  using mx::op::kParallelThreshold;
  using mx::op::threads_for;
  const int team = mx::op::cpu_team();
  BOOST_TEST(threads_for(0) == 1);
  BOOST_TEST(threads_for(kParallelThreshold - 1) == 1);
  BOOST_TEST(threads_for(kParallelThreshold) == team);
  BOOST_TEST(threads_for(kParallelThreshold + 1) == team);
  BOOST_TEST(threads_for(std::int64_t{1} << 40) == team);
  // The loops run on that many threads.
  for (const std::int64_t n : {kParallelThreshold - 1, kParallelThreshold, 64 * kParallelThreshold}) {
    std::atomic<int> most{0};
    mx::op::parallel_for(n, [&](std::int64_t) {
      const int t = omp_get_num_threads();
      int seen = most.load();
      while (t > seen && !most.compare_exchange_weak(seen, t)) {
      }
    });
    BOOST_TEST(most.load() == threads_for(n), n << " elements");
  }
}

BOOST_AUTO_TEST_CASE(single_threaded_ops_keep_every_loop_on_the_calling_thread) {
  using mx::op::kParallelThreshold;
  const std::int64_t n = 64 * kParallelThreshold;
  BOOST_TEST(!mx::nd::ops_single_threaded());
  {
    const mx::nd::SingleThreadedOps outer;
    {
      const mx::nd::SingleThreadedOps inner;  // scopes nest
    }
    BOOST_TEST(mx::nd::ops_single_threaded());
    BOOST_TEST(mx::op::threads_for(n) == 1);
    std::atomic<int> most{0};
    mx::op::parallel_for(n, [&](std::int64_t) { most = std::max(most.load(), omp_get_num_threads()); });
    BOOST_TEST(most.load() == 1);
    // Another thread is not affected.
    std::thread([&] { BOOST_TEST(mx::op::threads_for(n) == mx::op::cpu_team()); }).join();
    // An op's loop too: a large sum gives the same value on one thread.
    const mx::nd::NDArray x = mx::nd::ones({n}, mx::cpu());
    BOOST_TEST(x.sum().asscalar<double>() == double(n));
  }
  BOOST_TEST(!mx::nd::ops_single_threaded());
  BOOST_TEST(mx::op::threads_for(n) == mx::op::cpu_team());
}

BOOST_AUTO_TEST_SUITE_END()
