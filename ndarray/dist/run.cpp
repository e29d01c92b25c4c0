// ndgluon-run: starts N processes of a program on this machine, as torchrun --nproc-per-node does,
// each with the variables mx::dist::init() reads (RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), and OMP_NUM_THREADS (when not set) to its share
// of the cores:
//
//   ndgluon-run -n 2 build/tutorials/train_fashion_mnist --dist
//
// If a rank fails (a non-zero exit, a signal), the launcher names it, stops the others (SIGTERM,
// then SIGKILL after --grace seconds) and exits with that rank's status (128 + the signal for a
// signal). SIGINT and SIGTERM sent to the launcher go to every rank.
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

volatile sig_atomic_t forwarded_signal = 0;
void on_signal(int sig) { forwarded_signal = sig; }

// A TCP port that was free a moment ago (the kernel's pick for port 0).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 29500;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  if (fd >= 0) ::close(fd);
  return port;
}

std::string describe(int status) {
  if (WIFSIGNALED(status)) {
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  }
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

int exit_code(int status) { return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status); }

// The cores this process may run on (its affinity), each rank's share of them below.
int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Starts N processes of a program with the variables of mx::dist::init() (RANK, WORLD_SIZE, "
               "LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT; OMP_NUM_THREADS, where not set, to its share "
               "of the cores), as torchrun --nproc-per-node does. "
               "If one fails, names it, stops the others and exits with its status.",
               "ndgluon-run"};
  int processes = 1;
  std::string address = "127.0.0.1";
  int port = 0;
  double grace = 10;
  app.add_option("-n,--nproc-per-node", processes, "processes to start (one per GPU, usually)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--master-addr", address, "address of rank 0, where the others find it")->capture_default_str();
  app.add_option("--master-port", port, "port rank 0 listens on (default: a free one)")->check(CLI::Range(0, 65535));
  app.add_option("--grace", grace, "seconds the other ranks get to stop after one fails")
      ->check(CLI::PositiveNumber)->capture_default_str();
  app.prefix_command();  // the program and its arguments follow, untouched
  app.footer("usage: ndgluon-run [options] program [args...]");
  CLI11_PARSE(app, argc, argv);
  std::vector<std::string> command = app.remaining();
  if (command.empty()) {
    std::fprintf(stderr, "ndgluon-run: no program to run\n%s", app.help().c_str());
    return 2;
  }
  if (port == 0) port = free_port();

  struct sigaction action{};
  action.sa_handler = on_signal;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);

  std::vector<pid_t> pids(static_cast<std::size_t>(processes), -1);
  for (int rank = 0; rank < processes; ++rank) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      std::perror("ndgluon-run: fork");
      for (pid_t p : pids) {
        if (p > 0) ::kill(p, SIGTERM);
      }
      return 1;
    }
    if (pid == 0) {
      const std::string r = std::to_string(rank), n = std::to_string(processes);
      ::setenv("RANK", r.c_str(), 1);
      ::setenv("LOCAL_RANK", r.c_str(), 1);
      ::setenv("WORLD_SIZE", n.c_str(), 1);
      ::setenv("LOCAL_WORLD_SIZE", n.c_str(), 1);
      ::setenv("MASTER_ADDR", address.c_str(), 1);
      ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      // Each rank's CPU loops (OpenMP) on its share of the cores, unless the user chose: N teams as
      // wide as the machine spin against each other and starve the ranks' own threads.
      ::setenv("OMP_NUM_THREADS", std::to_string(std::max(1, usable_cores() / processes)).c_str(), 0);
      std::vector<char*> args;
      for (std::string& a : command) args.push_back(a.data());
      args.push_back(nullptr);
      ::execvp(args[0], args.data());
      std::fprintf(stderr, "ndgluon-run: rank %d: cannot run '%s': %s\n", rank, args[0], std::strerror(errno));
      ::_exit(127);
    }
    pids[static_cast<std::size_t>(rank)] = pid;
  }

  int result = 0;
  int running = processes;
  bool stopping = false;
  auto stop_deadline = std::chrono::steady_clock::time_point::max();
  const auto stop_others = [&](int sig) {
    for (pid_t p : pids) {
      if (p > 0) ::kill(p, sig);
    }
  };
  while (running > 0) {
    if (forwarded_signal != 0 && !stopping) {
      stop_others(forwarded_signal);
      stopping = true;
      result = 128 + forwarded_signal;
      stop_deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                              std::chrono::duration<double>(grace));
    }
    if (std::chrono::steady_clock::now() > stop_deadline) {
      std::fprintf(stderr, "ndgluon-run: %d rank(s) still running %.0f s after the stop: killing them\n", running, grace);
      stop_others(SIGKILL);
      stop_deadline = std::chrono::steady_clock::time_point::max();
    }
    int status = 0;
    const pid_t done = ::waitpid(-1, &status, WNOHANG);
    if (done <= 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    int rank = 0;
    while (rank < processes && pids[static_cast<std::size_t>(rank)] != done) ++rank;
    if (rank == processes) continue;
    pids[static_cast<std::size_t>(rank)] = -1;
    --running;
    const bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    if (failed && !stopping) {
      std::fprintf(stderr, "ndgluon-run: rank %d (pid %d) %s; stopping the other %d rank(s)\n", rank,
                   static_cast<int>(done), describe(status).c_str(), running);
      result = exit_code(status);
      stopping = true;
      stop_others(SIGTERM);
      stop_deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                              std::chrono::duration<double>(grace));
    } else if (failed) {
      std::fprintf(stderr, "ndgluon-run: rank %d (pid %d) %s\n", rank, static_cast<int>(done), describe(status).c_str());
    }
  }
  return result;
}
