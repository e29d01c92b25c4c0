// Note [rendezvous]
// NCCL needs every rank to hold the id that rank 0 made (ncclGetUniqueId, 128 bytes). ndgluon
// carries it through an engine the job already has, as Horovod and the NCCL examples do: MPI
// under mpirun/srun in a build with MPI; else a file on a shared file system (NDG_INIT_FILE, as
// torch's file:// init); else a TCP connection to rank 0 (MASTER_ADDR:MASTER_PORT, as torchrun's
// store, kept to one message: "NDGR", a u32 length, the bytes).
#include "ndarray/dist/rendezvous.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#ifdef NDG_WITH_MPI
#include <mpi.h>
#endif

#include "context/error.hpp"
#include "context/file.hpp"

namespace mx::dist::detail {
namespace {

using Clock = std::chrono::steady_clock;

std::string who(const Env& env) {
  return "rank " + std::to_string(env.rank) + " of " + std::to_string(env.world_size);
}

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::string seconds(double s) { return std::to_string(static_cast<long>(s + 0.5)) + " s"; }

// A socket closed when it goes out of scope.
class Socket {
 public:
  explicit Socket(int fd = -1) : fd_(fd) {}
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(Socket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

constexpr char kMagic[4] = {'N', 'D', 'G', 'R'};

// Sends or receives exactly n bytes before the deadline; false on a closed peer or the deadline.
bool transfer(int fd, char* data, std::size_t n, bool send, Clock::time_point deadline) {
  std::size_t done = 0;
  while (done < n) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, static_cast<short>(send ? POLLOUT : POLLIN), 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    const ssize_t k = send ? ::send(fd, data + done, n - done, MSG_NOSIGNAL) : ::recv(fd, data + done, n - done, 0);
    if (k <= 0) return false;
    done += static_cast<std::size_t>(k);
  }
  return true;
}

std::string framed(const std::string& bytes) {
  std::string out(kMagic, 4);
  const auto n = static_cast<std::uint32_t>(bytes.size());
  out.append(reinterpret_cast<const char*>(&n), 4);
  return out + bytes;
}

}  // namespace

std::string share_by_file(const std::string& path, const Env& env, const MakeBytes& make, double timeout_seconds) {
  if (env.rank == 0) {
    const std::string bytes = make();
    write_file_atomically(path, bytes, "dist::init");
    return bytes;
  }
  const Clock::time_point start = Clock::now();
  std::error_code ec;
  while (!std::filesystem::exists(path, ec)) {
    if (since(start) > timeout_seconds) {
      throw DeviceError("dist::init (" + who(env) + "): NDG_INIT_FILE '" + path + "' did not appear within " +
                        seconds(timeout_seconds) + "; rank 0 writes it (is it running, and is the path on a file " +
                        "system every rank sees?)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return read_file(path, "dist::init");  // written whole by a rename: never half a file
}

std::string share_by_tcp(const std::string& address, int port, const Env& env, const MakeBytes& make,
                         double timeout_seconds) {
  const std::string where = address + ":" + std::to_string(port);
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + std::chrono::duration_cast<Clock::duration>(
                                                 std::chrono::duration<double>(timeout_seconds));
  if (env.rank == 0) {
    Socket server(::socket(AF_INET6, SOCK_STREAM, 0));
    const int off = 0, on = 1;
    if (server.fd() < 0 || ::setsockopt(server.fd(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0 ||
        ::setsockopt(server.fd(), IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off) != 0) {
      throw DeviceError("dist::init (" + who(env) + "): no socket to listen on: " + std::strerror(errno));
    }
    sockaddr_in6 addr{};
    addr.sin6_family = AF_INET6;
    addr.sin6_addr = in6addr_any;
    addr.sin6_port = htons(static_cast<std::uint16_t>(port));
    if (::bind(server.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(server.fd(), 128) != 0) {
      throw DeviceError("dist::init (" + who(env) + "): cannot listen on port " + std::to_string(port) +
                        " (MASTER_PORT): " + std::strerror(errno));
    }
    const std::string message = framed(make());
    for (int served = 1; served < env.world_size; ++served) {
      pollfd p{server.fd(), POLLIN, 0};
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) {
        throw DeviceError("dist::init (" + who(env) + "): " + std::to_string(served - 1) + " of " +
                          std::to_string(env.world_size - 1) + " ranks connected to port " + std::to_string(port) +
                          " within " + seconds(timeout_seconds) + "; the others never came");
      }
      Socket peer(::accept(server.fd(), nullptr, nullptr));
      std::string copy = message;
      if (peer.fd() < 0 || !transfer(peer.fd(), copy.data(), copy.size(), true, deadline)) --served;  // it retries
    }
    return message.substr(8);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  for (;;) {
    addrinfo* found = nullptr;
    const int resolved = ::getaddrinfo(address.c_str(), std::to_string(port).c_str(), &hints, &found);
    if (resolved != 0 && since(start) > timeout_seconds) {
      throw DeviceError("dist::init (" + who(env) + "): MASTER_ADDR '" + address + "' does not resolve: " +
                        ::gai_strerror(resolved));
    }
    for (addrinfo* a = resolved == 0 ? found : nullptr; a != nullptr; a = a->ai_next) {
      Socket s(::socket(a->ai_family, a->ai_socktype, a->ai_protocol));
      if (s.fd() < 0 || ::connect(s.fd(), a->ai_addr, a->ai_addrlen) != 0) continue;
      char header[8];
      if (!transfer(s.fd(), header, 8, false, deadline) || std::memcmp(header, kMagic, 4) != 0) continue;
      std::uint32_t n = 0;
      std::memcpy(&n, header + 4, 4);
      std::string bytes(n, '\0');
      if (!transfer(s.fd(), bytes.data(), n, false, deadline)) continue;
      ::freeaddrinfo(found);
      return bytes;
    }
    if (found != nullptr) ::freeaddrinfo(found);
    if (since(start) > timeout_seconds) {
      throw DeviceError("dist::init (" + who(env) + "): rank 0 did not answer at " + where +
                        " (MASTER_ADDR:MASTER_PORT) within " + seconds(timeout_seconds));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

#ifdef NDG_WITH_MPI
namespace {
bool mpi_initialized_here = false;
}  // namespace

bool built_with_mpi() { return true; }

void finalize_mpi() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (mpi_initialized_here && !finalized) MPI_Finalize();
  mpi_initialized_here = false;
}

std::string share_by_mpi(const Env& env, const MakeBytes& make) {
  int ready = 0;
  MPI_Initialized(&ready);
  if (!ready) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
      throw DeviceError("dist::init (" + who(env) + "): MPI_Init_thread failed");
    }
    mpi_initialized_here = true;
  }
  int mpi_rank = 0, mpi_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
  if (mpi_rank != env.rank || mpi_size != env.world_size) {
    throw ValueError("dist::init: MPI says rank " + std::to_string(mpi_rank) + " of " + std::to_string(mpi_size) +
                     " but the environment (" + env.launcher + ") says " + who(env));
  }
  std::uint64_t n = 0;
  std::string bytes;
  if (env.rank == 0) {
    bytes = make();
    n = bytes.size();
  }
  MPI_Bcast(&n, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  bytes.resize(n);
  if (MPI_Bcast(bytes.data(), static_cast<int>(n), MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS) {
    throw DeviceError("dist::init (" + who(env) + "): MPI_Bcast of rank 0's NCCL id failed");
  }
  return bytes;
}
#else
bool built_with_mpi() { return false; }
void finalize_mpi() {}

std::string share_by_mpi(const Env& env, const MakeBytes&) {
  throw ValueError("dist::init (" + who(env) + "): this build has no MPI (Meson option mpi)");
}
#endif

std::string share_from_rank0(const Env& env, const GetEnv& getenv, const MakeBytes& make, double timeout_seconds) {
  const char* file = getenv("NDG_INIT_FILE");
  const char* address = getenv("MASTER_ADDR");
  const char* port = getenv("MASTER_PORT");
  if (built_with_mpi() && (env.launcher == "mpirun" || (env.launcher == "srun" && !file && !address))) {
    return share_by_mpi(env, make);
  }
  if (file && *file) return share_by_file(file, env, make, timeout_seconds);
  if (address && *address) {
    if (!port || !*port) throw ValueError("dist::init: MASTER_ADDR is set but MASTER_PORT is not");
    char* end = nullptr;
    const long p = std::strtol(port, &end, 10);
    if (*end != '\0' || p <= 0 || p > 65535) {
      throw ValueError(std::string("dist::init: MASTER_PORT '") + port + "' is not a port number (1 .. 65535)");
    }
    return share_by_tcp(address, static_cast<int>(p), env, make, timeout_seconds);
  }
  throw ValueError("dist::init (" + who(env) + ", launched by " + env.launcher +
                   "): no way to reach rank 0: set NDG_INIT_FILE (a path every rank sees) or MASTER_ADDR and "
                   "MASTER_PORT" + std::string(built_with_mpi() ? "" : ", or build with MPI (Meson option mpi)"));
}

}  // namespace mx::dist::detail
