#pragma once
// How rank 0's bytes (its NCCL id) reach the other ranks of a job (Note [rendezvous]). Internal to
// mx::dist; each throws mx::DeviceError naming the file, address or MPI call and the ranks
// involved when the exchange fails or takes longer than timeout_seconds.
#include <functional>
#include <string>

#include "ndarray/dist/dist.hpp"

namespace mx::dist::detail {

using MakeBytes = std::function<std::string()>;  // called on rank 0 only

// Rank 0 writes path (atomically); the others wait for it to appear and read it. The file must not
// exist before the job (a stale one would give an old id); rank 0 removes it in shutdown().
std::string share_by_file(const std::string& path, const Env& env, const MakeBytes& make, double timeout_seconds);
// Rank 0 listens on port and sends the bytes to each rank that connects; the others connect to
// address:port, retrying until rank 0 listens.
std::string share_by_tcp(const std::string& address, int port, const Env& env, const MakeBytes& make,
                         double timeout_seconds);
// MPI_Bcast over MPI_COMM_WORLD (MPI_Init first when nobody has); only in a build with MPI.
std::string share_by_mpi(const Env& env, const MakeBytes& make);
bool built_with_mpi();
// MPI_Finalize, if share_by_mpi called MPI_Init (mpirun counts a rank that exits without it as failed).
void finalize_mpi();

// The first way the environment offers (see ndarray/dist/dist.hpp); mx::ValueError naming the
// variables when none does.
std::string share_from_rank0(const Env& env, const GetEnv& getenv, const MakeBytes& make, double timeout_seconds);

}  // namespace mx::dist::detail
