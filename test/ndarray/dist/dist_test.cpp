// mx::dist on one machine without GPUs: the launchers' environments, the rendezvous of rank 0's
// bytes through a file and through TCP (ranks as threads), their timeouts and errors, and a
// one-process job. The two-process training runs in test/dist on two GPUs.
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"
#include "test/support/files.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <ndarray/dist/rendezvous.hpp>
#include <ndarray/ndarray.hpp>

namespace dist = mx::dist;
namespace nd = mx::nd;

namespace {

dist::GetEnv from(std::map<std::string, std::string> vars) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [shared](const char* name) -> const char* {
    const auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

dist::Env env_of(int rank, int world) {
  dist::Env env;
  env.rank = rank;
  env.world_size = world;
  env.launcher = "torchrun";
  return env;
}

// The bytes each of `world` ranks (threads) gets from share(rank).
std::vector<std::string> exchange(int world, const std::function<std::string(int)>& share) {
  std::vector<std::future<std::string>> ranks;
  for (int r = world - 1; r >= 0; --r) ranks.push_back(std::async(std::launch::async, share, r));  // rank 0 last
  std::vector<std::string> got;
  for (auto& f : ranks) got.push_back(f.get());
  return got;
}

// A port that was free a moment ago (the kernel's pick for port 0).
int some_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(dist_env)

BOOST_AUTO_TEST_CASE(each_launchers_variables_are_read) {
  const dist::Env torchrun =
      dist::read_env(from({{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"}}));
  BOOST_TEST(torchrun.launcher == "torchrun");
  BOOST_TEST(torchrun.rank == 3);
  BOOST_TEST(torchrun.world_size == 8);
  BOOST_TEST(torchrun.local_rank == 1);
  BOOST_TEST(torchrun.local_world_size == 2);
  const dist::Env mpirun = dist::read_env(from({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"},
                                                {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}}));
  BOOST_TEST(mpirun.launcher == "mpirun");
  BOOST_TEST(mpirun.rank == 1);
  BOOST_TEST(mpirun.local_world_size == 2);
  const dist::Env srun = dist::read_env(
      from({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "6"}, {"SLURM_LOCALID", "2"}, {"SLURM_NTASKS_PER_NODE", "3(x2)"}}));
  BOOST_TEST(srun.launcher == "srun");
  BOOST_TEST(srun.rank == 5);
  BOOST_TEST(srun.local_rank == 2);
  BOOST_TEST(srun.local_world_size == 3);
  const dist::Env none = dist::read_env(from({}));
  BOOST_TEST(none.launcher == "none");
  BOOST_TEST(none.rank == 0);
  BOOST_TEST(none.world_size == 1);
  // torchrun's variables win over Slurm's (torchrun inside an allocation).
  BOOST_TEST(dist::read_env(from({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"LOCAL_RANK", "0"}, {"SLURM_PROCID", "4"}}))
                 .launcher == "torchrun");
}

BOOST_AUTO_TEST_CASE(a_missing_or_inconsistent_variable_is_named) {
  NDG_CHECK_THROWS_WITH(dist::read_env(from({{"RANK", "0"}, {"LOCAL_RANK", "0"}})), mx::ValueError, "WORLD_SIZE",
                        "not set", "torchrun");
  NDG_CHECK_THROWS_WITH(dist::read_env(from({{"RANK", "0"}, {"WORLD_SIZE", "2"}})), mx::ValueError, "LOCAL_RANK");
  NDG_CHECK_THROWS_WITH(dist::read_env(from({{"RANK", "two"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}})),
                        mx::ValueError, "RANK='two'");
  NDG_CHECK_THROWS_WITH(dist::read_env(from({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}})),
                        mx::ValueError, "RANK=2", "WORLD_SIZE=2");
  NDG_CHECK_THROWS_WITH(dist::read_env(from({{"RANK", "1"}, {"WORLD_SIZE", "0"}, {"LOCAL_RANK", "0"}})),
                        mx::ValueError, "WORLD_SIZE=0");
  NDG_CHECK_THROWS_WITH(dist::read_env(from({{"RANK", "-1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}})),
                        mx::ValueError, "RANK='-1'");
  NDG_CHECK_THROWS_WITH(dist::read_env(from({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "2"},
                                             {"LOCAL_WORLD_SIZE", "2"}})),
                        mx::ValueError, "LOCAL_RANK=2", "LOCAL_WORLD_SIZE=2");
  NDG_CHECK_THROWS_WITH(dist::read_env(from({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}})),
                        mx::ValueError, "OMPI_COMM_WORLD_LOCAL_RANK", "mpirun");
  NDG_CHECK_THROWS_WITH(dist::read_env(from({{"SLURM_PROCID", "0"}, {"SLURM_LOCALID", "0"}})), mx::ValueError,
                        "SLURM_NTASKS", "srun");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(dist_rendezvous)

BOOST_AUTO_TEST_CASE(rank0s_bytes_reach_every_rank_through_a_file) {
  const ndg_test::TempDir dir;
  const std::string path = dir.file("init");
  const std::string id(128, '\x07');
  const auto got = exchange(3, [&](int rank) {
    return dist::detail::share_by_file(path, env_of(rank, 3), [&] { return id; }, 10);
  });
  for (const std::string& bytes : got) BOOST_TEST(bytes == id);
}

BOOST_AUTO_TEST_CASE(rank0s_bytes_reach_every_rank_through_tcp) {
  std::string id(128, '\0');
  for (std::size_t i = 0; i < id.size(); ++i) id[i] = static_cast<char>(i * 37);
  const int port = some_port();
  const auto got = exchange(4, [&](int rank) {
    return dist::detail::share_by_tcp("localhost", port, env_of(rank, 4), [&] { return id; }, 20);
  });
  for (const std::string& bytes : got) BOOST_TEST(bytes == id);
}

BOOST_AUTO_TEST_CASE(a_rank0_that_never_comes_is_a_device_error_after_the_timeout) {
  const ndg_test::TempDir dir;
  const std::string path = dir.file("never");
  const auto start = std::chrono::steady_clock::now();
  NDG_CHECK_THROWS_WITH(dist::detail::share_by_file(path, env_of(1, 2), [] { return std::string(); }, 0.3),
                        mx::DeviceError, "rank 1 of 2", path, "did not appear");
  const int port = some_port();
  NDG_CHECK_THROWS_WITH(dist::detail::share_by_tcp("127.0.0.1", port, env_of(1, 2), [] { return std::string(); }, 0.3),
                        mx::DeviceError, "rank 1 of 2", "127.0.0.1:" + std::to_string(port), "did not answer");
  // Rank 0 waits for the others as long, and names how many came.
  NDG_CHECK_THROWS_WITH(dist::detail::share_by_tcp("127.0.0.1", port, env_of(0, 3), [] { return std::string(8, 'x'); }, 0.3),
                        mx::DeviceError, "rank 0 of 3", "0 of 2 ranks connected");
  BOOST_TEST(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 10);
}

BOOST_AUTO_TEST_CASE(the_environment_must_offer_a_way_to_rank0) {
  const auto make = [] { return std::string(4, 'i'); };
  NDG_CHECK_THROWS_WITH(dist::detail::share_from_rank0(env_of(1, 2), from({}), make, 1), mx::ValueError,
                        "NDG_INIT_FILE", "MASTER_ADDR");
  NDG_CHECK_THROWS_WITH(dist::detail::share_from_rank0(env_of(1, 2), from({{"MASTER_ADDR", "h"}}), make, 1),
                        mx::ValueError, "MASTER_PORT is not");
  NDG_CHECK_THROWS_WITH(
      dist::detail::share_from_rank0(env_of(1, 2), from({{"MASTER_ADDR", "h"}, {"MASTER_PORT", "70000"}}), make, 1),
      mx::ValueError, "MASTER_PORT '70000'");
  const ndg_test::TempDir dir;
  const std::string path = dir.file("id");
  BOOST_TEST(dist::detail::share_from_rank0(env_of(0, 2), from({{"NDG_INIT_FILE", path}}), make, 1) == make());
  BOOST_TEST(dist::detail::share_from_rank0(env_of(1, 2), from({{"NDG_INIT_FILE", path}}), make, 1) == make());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(dist_one_process)

// Without a launcher the job is this process alone: all_reduce sums its own copies only.
BOOST_AUTO_TEST_CASE(a_job_of_one_process_sums_its_own_copies) {
  BOOST_TEST(!dist::is_initialized());
  NDG_CHECK_THROWS_WITH(dist::all_reduce({{nd::ones({2})}}), mx::ValueError, "dist::init");
  NDG_CHECK_THROWS_WITH(dist::rank(), mx::ValueError, "dist::init");
  dist::init();
  BOOST_TEST(dist::is_initialized());
  BOOST_TEST(dist::rank() == 0);
  BOOST_TEST(dist::world_size() == 1);
  NDG_CHECK_THROWS_WITH(dist::init(), mx::ValueError, "called twice");
  std::vector<nd::NDArray> copies;
  for (mx::Context ctx : ndg_test::all_contexts()) copies.push_back(nd::full({3}, 2.0, ctx));
  dist::all_reduce({copies});
  const float total = 2.0f * static_cast<float>(copies.size());
  for (const nd::NDArray& c : copies) BOOST_TEST(c.asvector() == std::vector<float>(3, total), boost::test_tools::per_element());
  std::vector<nd::NDArray> others;
  for (mx::Context ctx : ndg_test::all_contexts()) others.push_back(nd::full({2}, static_cast<double>(others.size() + 1), ctx));
  dist::broadcast_from_rank0({others});
  for (const nd::NDArray& c : others) BOOST_TEST(c.asvector() == std::vector<float>(2, 1.0f), boost::test_tools::per_element());
  dist::barrier();
  dist::shutdown();
  BOOST_TEST(!dist::is_initialized());
  dist::init();  // and again, after shutdown
  BOOST_TEST(dist::world_size() == 1);
  dist::shutdown();
}

BOOST_AUTO_TEST_SUITE_END()
