#pragma once
// Note [in-stream exchange between GPUs]
// SyncBatchNorm needs, in the middle of each GPU's forward and backward, per-channel sums over all
// the GPUs of the step. The data-parallel loop queues each GPU's work in turn from one thread
// (gpu(0)'s whole forward before gpu(1)'s), so the host cannot wait for the other GPUs: the wait
// is queued instead, as a kernel. A group ("exchange") of `ranks` GPUs shares host-mapped memory:
// for each of two rounds a slot of `length` doubles per rank, and per rank the number of rounds it
// has published. One round on one GPU is one single-block kernel that
//   1. reads its round number (its published count + 1) and writes its values into its slot;
//   2. makes them visible to the system (__threadfence_system) and publishes the round;
//   3. waits until every rank has published the round, then adds the slots in rank order, so that
//      every GPU gets the same total, bit for bit.
// Slots alternate between rounds: a rank can only write round r + 2 after every rank published
// r + 1, which each does after reading round r. The round counts live in the shared memory, not on
// the host, so that a CUDA graph replaying the kernel exchanges correctly too. A rank that waits
// longer than the timeout (NDG_EXCHANGE_TIMEOUT seconds, 60 by default: a GPU of the group never
// got there) sets the group's failed flag and goes on; the next use of the group throws.
//
// Known hazard: anything that makes the host wait for a GPU's stream between that GPU's round and
// the other GPUs' (a stream synchronisation, cuDNN's autotuning, CUDA's lazy loading of a kernel
// launched for the first time) stalls the round until the timeout. ndgluon's own kernels are
// loaded when a GPU joins a group (Note [lazy loading and the exchange], cuda/module_preload.hpp).
//
// Host-mapped memory, not NCCL: NCCL's calls for several GPUs of one thread must be issued
// together (a group call), which the turn-by-turn loop cannot do. The memory is taken from one
// arena allocated at the first exchange, before any exchange kernel can be waiting: pinning more
// host memory later may wait for the GPUs, which would wait for the host.
#include <cstdint>
#include <string>

namespace mx::cuda {

// What a kernel needs of one GPU's membership: passed by value.
struct ExchangeView {
  double* slots = nullptr;                  // [2 rounds][ranks][length]
  unsigned long long* published = nullptr;  // [ranks]: rounds each rank has published
  unsigned int* failed = nullptr;           // set by a rank that timed out
  unsigned long long timeout_ns = 0;
  int rank = 0, ranks = 1;
  std::int64_t length = 0;
};

// gpu(device)'s view of the group `key` of `ranks` GPUs exchanging `length` doubles, made at first
// use; ranks are given in the order devices first use the group. Throws mx::DeviceError naming op
// and key when the group timed out before, or when a GPU beyond `ranks` joins it.
ExchangeView exchange_view(const std::string& key, int ranks, std::int64_t length, int device, const char* op);

// Whether a group of several GPUs was made: from then on the host must never wait for a GPU's
// stream in the middle of a step (cuDNN's autotuning takes its first candidate untimed).
bool exchanges_in_use();

#ifdef __CUDACC__
__device__ inline unsigned long long exchange_round(const ExchangeView& v) {
  return *reinterpret_cast<volatile unsigned long long*>(v.published + v.rank) + 1;
}

__device__ inline double* exchange_slot(const ExchangeView& v, unsigned long long round, int rank) {
  return v.slots + (static_cast<std::int64_t>(round & 1) * v.ranks + rank) * v.length;
}

// Element i of rank r's slot, as written by another GPU (not from a cache).
__device__ inline double exchange_load(const ExchangeView& v, unsigned long long round, int rank, std::int64_t i) {
  return *reinterpret_cast<volatile const double*>(exchange_slot(v, round, rank) + i);
}

__device__ inline unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Steps 2 and 3 for all threads of the block, after each has written its part of this rank's slot.
__device__ inline void exchange_publish_and_wait(const ExchangeView& v, unsigned long long round) {
  __threadfence_system();
  __syncthreads();
  if (threadIdx.x == 0) {
    *reinterpret_cast<volatile unsigned long long*>(v.published + v.rank) = round;
    const unsigned long long start = global_ns();
    for (int r = 0; r < v.ranks; ++r) {
      while (*reinterpret_cast<volatile unsigned long long*>(v.published + r) < round) {
        if (global_ns() - start > v.timeout_ns) {
          *reinterpret_cast<volatile unsigned int*>(v.failed) = 1;
          r = v.ranks;
          break;
        }
        __nanosleep(256);
      }
    }
    __threadfence_system();
  }
  __syncthreads();
}
#endif

}  // namespace mx::cuda
