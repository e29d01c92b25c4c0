#pragma once
// A Trainer's gradient buckets: the data-parallel gradient sums overlapped with backward, as
// PyTorch DDP's Reducer. Internal to gluon::Trainer (gluon/trainer.hpp says what users see).
//
// The trained parameters whose copies NCCL sums (each copy on its own GPU; with dist_sync across
// the processes too) are grouped into buckets of about cap bytes per copy, in the reverse of the
// dict's order, which is the order backward produces a feed-forward net's gradients in; a bucket
// closes once it holds cap bytes or more. The first closes at 1 MiB already (or cap, if smaller),
// so that the first sum starts early (DDP's first bucket).
//
// backward() tells the buckets of each gradient as it is written (autograd::GradientListener).
// When every copy of a bucket's parameters on a GPU has its gradient, the point reached on that
// GPU's stream is marked; when that holds on every GPU, the bucket's sum starts on their
// communication streams after those marks, beside the rest of the backward. A backward that
// started sums ends by making the GPUs' streams wait for them: once the backward of the last
// context has returned, the gradients of the started buckets are the sums (as with DDP). Before
// that, the gradients of the contexts whose backward has run are being summed: nothing may read
// or write them until then. The GPUs' streams wait for the sums when anything is next queued on
// them (nd::overlap::defer_join), so that join_in_turn can wait for them one at a time instead.
//
// finish() (Trainer::allreduce_grads) sums whatever no bucket summed since it was written (the
// parameters a backward did not reach, the buckets left incomplete, gradients written again after
// their sum), and leaves the wait for all the sums to the next work queued, as backward does.
// Every process launches the same sums in the same order, since each runs the same backward.
//
// Note [updates in turn]: join_in_turn(update) makes the GPUs' streams wait for the sums one at a
// time, in the order they started, and after each calls update(the parameters it summed), which
// queues their optimizer update. So the updates of the first buckets run beside the last bucket's
// sum, which backward's end leaves to run alone otherwise (about 12.8 MB, 90 us over 4 H100s, for
// the first layer of the MLP of bench/multi_gpu_bench).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "context/context.hpp"
#include "ndarray/autograd/autograd.hpp"
#include "ndarray/core/array.hpp"
#include "ndarray/dist/collective.hpp"

namespace mx::gluon {

class GradientBuckets final : public autograd::GradientListener,
                              public std::enable_shared_from_this<GradientBuckets> {
 public:
  struct Param {
    std::string name;
    std::vector<nd::NDArray> data;   // the variables, one per context of `contexts`
    std::vector<nd::NDArray> grads;  // their gradient buffers
  };
  static constexpr std::size_t kFirstBucketBytes = std::size_t{1} << 20;

  // params in the dict's order, all on `contexts`; across processes when dist, else summed by
  // `algo` (automatic or nccl).
  static std::shared_ptr<GradientBuckets> make(std::vector<Param> params, std::vector<Context> contexts,
                                               std::size_t cap_bytes, bool dist,
                                               nd::ReduceAlgo algo = nd::ReduceAlgo::automatic);

  // Whether these are the buckets' parameters, variables and gradient buffers (else make new ones).
  bool holds(const std::vector<Param>& params) const;
  // Listens to every copy's variable again (a no-op where it does already).
  void listen();
  void finish();
  // Makes the GPUs' streams wait for the sums started so far.
  void join();
  // Note [updates in turn]; false, calling nothing, when no sum was started since the last join.
  // The streams wait for every sum when it returns or throws.
  bool join_in_turn(const std::function<void(const std::unordered_set<std::string>&)>& update);

  // The buckets' parameter names, first bucket first (for tests and the docs).
  std::vector<std::vector<std::string>> layout() const;
  // Whether the buckets hold this parameter.
  bool holds_param(const std::string& name) const;

  void gradient_ready(std::int64_t tag) override;
  void backward_end() override;
  // Where the sums run on the copy engines (one process's GPUs with peer access, algo automatic):
  // they take no SMs, so a parameter's gradient is best computed before its op's others.
  bool wants_gradient_early() const override { return on_copy_engines_; }

 private:
  struct Entry {
    Param param;
    std::size_t bucket = 0;
    std::vector<char> written;  // per context: written by a backward since the last sum
    bool summed = false;        // summed since it was last written
  };
  struct Bucket {
    std::vector<std::size_t> entries;
    std::vector<std::size_t> written;  // per context: how many entries are written there
    std::size_t complete_contexts = 0;
  };

  GradientBuckets(std::vector<Param> params, std::vector<Context> contexts, std::size_t cap_bytes, bool dist,
                  nd::ReduceAlgo algo);
  struct Started {  // a sum the streams have not joined
    int slot;
    std::vector<std::size_t> entries;
  };

  void launch(std::size_t bucket);
  void sum(const std::vector<std::size_t>& entries, int slot);
  void defer_join();
  void reset();

  std::vector<Entry> entries_;  // the dict's order
  std::unordered_set<std::string> names_;  // the entries' parameter names (holds_param, each step)
  std::vector<Bucket> buckets_;
  std::vector<Context> contexts_;
  bool dist_;
  nd::ReduceAlgo algo_;
  bool on_copy_engines_;
  std::vector<Started> started_;  // since the streams last waited for every sum, in start order
};

}  // namespace mx::gluon
