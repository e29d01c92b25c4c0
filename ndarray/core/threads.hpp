#pragma once
// The CPU ops' threads, per calling thread.
namespace mx::nd {

// While it lives, the CPU ops the constructing thread runs stay on that thread instead of the
// whole OpenMP team: for threads that are themselves the parallelism, such as a DataLoader's
// workers transforming samples side by side (PyTorch's DataLoader sets torch.set_num_threads(1)
// in its workers for the same reason: sixteen workers each waking a team of sixteen would run 256
// threads on 16 cores). Scopes nest.
class SingleThreadedOps {
 public:
  SingleThreadedOps();
  ~SingleThreadedOps();
  SingleThreadedOps(const SingleThreadedOps&) = delete;
  SingleThreadedOps& operator=(const SingleThreadedOps&) = delete;

 private:
  bool previous_;
};

// Whether the calling thread's CPU ops are kept to it (a SingleThreadedOps lives on it).
bool ops_single_threaded();

}  // namespace mx::nd
