#pragma once
// Data parallelism across processes (and machines) through NCCL: the process group of
// torch.distributed, MXNet's dist kvstore. A launcher starts one process per GPU (or per machine),
// each with its rank in the environment; each calls dist::init(), then trains with
// Trainer(..., "dist_sync"), which sums the gradients of every process (and of every GPU of each)
// before each update.
//
//   mx::dist::init();                                   // reads the launcher's variables
//   mx::Context ctx = mx::gpu(mx::dist::local_rank());
//   ... net.initialize(init, {ctx}); gluon::Trainer trainer(net.collect_params(), "sgd", hp, "dist_sync");
//
// Launchers and what they set (read by read_env, first match wins):
//   torchrun / ndgluon-run   RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE (optional), and
//                            MASTER_ADDR, MASTER_PORT
//   mpirun (Open MPI)        OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE
//   srun (Slurm)             SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NTASKS_PER_NODE
//   none of them             one process: rank 0 of 1
//
// Rank 0's NCCL id reaches the others (Note [rendezvous] in dist/rendezvous.cpp), first match:
//   MPI_Bcast, in a build with MPI (Meson option mpi) under mpirun or srun;
//   NDG_INIT_FILE=path, a file on a shared file system that does not exist before the job;
//   MASTER_ADDR:MASTER_PORT, where rank 0 listens (as torchrun's TCP store).
#include <functional>
#include <string>
#include <vector>

#include "ndarray/core/array.hpp"

namespace mx::dist {

struct Env {
  int rank = 0;              // this process, 0 .. world_size - 1
  int world_size = 1;        // processes in the job
  int local_rank = 0;        // this process among those of its machine
  int local_world_size = 1;  // processes on this machine
  std::string launcher = "none";  // "torchrun", "mpirun", "srun" or "none"
};

// The variables of the first launcher whose rank variable is set. Throws mx::ValueError naming
// the variable when one is missing, not an integer, or inconsistent (a rank outside the world).
using GetEnv = std::function<const char*(const char*)>;
Env read_env(const GetEnv& getenv);
Env read_env();  // from the process's environment

// Joins the job: reads the environment, exchanges rank 0's NCCL id, and is then ready to make the
// communicator (on the first all_reduce, over the GPUs that call brings). Every rank must call it.
// timeout_seconds bounds the rendezvous and every later collective (NDG_DIST_TIMEOUT, in seconds,
// overrides the default of 300): a rank that stops makes the others fail with mx::DeviceError
// naming their rank and the operation, rather than hang. One process (world_size 1) needs no
// NCCL. Throws mx::ValueError (environment), mx::DeviceError (rendezvous, NCCL); calling it twice
// is an mx::ValueError.
void init(double timeout_seconds = 0);
bool is_initialized();
const Env& env();  // after init
int rank();
int world_size();
int local_rank();

// Sums over every process, in place: each group holds this process's copies of one tensor, one
// per GPU of the process, each GPU in the same position in every group; every process brings the
// same number of GPUs and the same tensors in the same order. Queued on the GPUs' streams, all
// groups in one fused launch; returns without waiting. Throws mx::ValueError before init or when
// the GPUs differ from the first call's, and mx::DeviceError after a failed collective.
void all_reduce(const std::vector<std::vector<nd::NDArray>>& groups);
// The same sums overlapped with the GPUs' work (nd::overlap in ndarray/dist/collective.hpp): on each
// GPU's communication stream after its mark for `slot`; nd::overlap::join(ctx) orders ctx's later
// work after them. With one process, nd::overlap::all_reduce of the groups of several copies.
void all_reduce_overlapped(const std::vector<std::vector<nd::NDArray>>& groups, int slot);
// Every process's copy becomes rank 0's (its first copy), as DDP's initial broadcast.
void broadcast_from_rank0(const std::vector<std::vector<nd::NDArray>>& groups);
// Returns when every process has called it (a collective on the GPUs of the first all_reduce, or
// on gpu(local_rank) before it).
void barrier();
// Leaves the job (destroys the communicator; rank 0 removes NDG_INIT_FILE).
void shutdown();

}  // namespace mx::dist
