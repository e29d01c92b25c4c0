#pragma once
// graph::Executor: a graph planned once for one input signature and replayed without the op front
// end, as MXNet's CachedOp with static_alloc. Internal header; gluon::Block's hybridize uses it.
//
// Planning (once): every op's outputs get a buffer, inferred from the op's shape inference;
// intermediates share buffers by liveness (a buffer serves the next op once its last reader has
// run), and views cost nothing (Reshape and Flatten of a contiguous array, and an op that is the
// identity in this mode, are the same memory). Each op becomes a prebuilt Invocation.
// Replay: the inputs are copied into their planned buffers, the invocations run through their
// kernels, and the results are copied out into new arrays (or handed out as the planned buffers
// themselves, Options::copy_heads). On a GPU the second replay captures
// all of this into a CUDA graph (Backend::capture), and every later one is a single launch.
// With Options::read_feeds_in_place the steps read the caller's inputs where they are instead: op
// by op on cpu(0); on a GPU through graphs captured for the inputs' addresses (up to 16, the most
// recently used kept), captured when inputs come back at the same addresses within 16 runs (a
// static input buffer, as users of CUDA graphs keep one, or a few buffers used in turn), while
// other inputs are copied in.
//
// The capture records everything queued on the device's stream meanwhile: while an executor
// captures (its second run, or a later one that captures a graph for a new input address), no
// other thread may queue work on that GPU.
//
// gradient() traces the backward pass of a graph into a graph of its own (MXNet's backward
// CachedOp), whose variables are the forward graph's variables, the head's gradient and the
// forward values the gradients read; an Executor of it replays the backward pass the same way.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ndarray/core/array.hpp"
#include "ndarray/graph/graph.hpp"

namespace mx {
class CapturedWork;
struct CopyItem;
}
namespace mx::op {
struct FusedProgram;
}

namespace mx::graph {

class Executor {
 public:
  struct Options {
    bool reuse_memory = true;  // intermediates share buffers by liveness
    std::vector<Entry> keep;   // entries whose buffers stay theirs after a run (value() reads them)
    bool capture = true;       // replay as a captured graph where the context can
    // A replay may read the inputs where they are instead of copying them in (op by op, or on a
    // GPU through graphs captured per input address; not on a GPU with kept values); value() and
    // variable() of a feed, or of a view of one, then give the last run's input itself.
    bool read_feeds_in_place = false;
    // false: run() returns the heads' planned arrays themselves (where a head has a buffer of its
    // own), not copies; the next run overwrites them. heads_in_use() says whether one is still held.
    bool copy_heads = true;
    // Per head (none, or fewer entries: no target): an array the op that makes the head writes
    // into, which run() then returns as that head (autograd's gradient buffers: a backward graph
    // computes each parameter's gradient where it belongs). Used where it has the head's shape,
    // dtype and context, is contiguous and the head is an op's own output (not a view).
    std::vector<nd::NDArray> head_targets{};
    // Runs of elementwise steps of one dtype (float32, float16, bfloat16) replayed as one kernel
    // each (ndarray/graph/fused.hpp): on a
    // GPU one launch where each would cost more than its step's work, on cpu(0) one pass over
    // memory and one OpenMP region (a training step's loss and gradient steps: 1.5-4% of the
    // step on 2 cores); `gpu` fuses on GPUs only.
    enum class Fuse { off, gpu, always } fuse = Fuse::always;
  };

  // g, run in training or prediction mode (`training`: the mode its BatchNorm and Dropout run in),
  // with `feeds` the variables given at each run (copied in; of the shapes, dtypes and context of
  // feed_examples) and every other variable bound by name to an array of `bound_names`/`bound`,
  // read and written in place (parameters, running statistics). mx::ValueError naming a variable
  // that has no array, or an op whose inference fails.
  Executor(std::shared_ptr<const Graph> g, bool training, std::vector<std::string> feed_names,
           const std::vector<nd::NDArray>& feed_examples, std::vector<std::string> bound_names,
           const std::vector<nd::NDArray>& bound, Options options);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // The heads' values, as new arrays, for feeds of the planned shapes, dtypes and context
  // (mx::ValueError naming the difference otherwise) and the bound arrays in bound_names' order.
  // A bound array that is no longer the planned one (a parameter given new storage) is read in
  // its place where nothing was captured (rebind), else the graph is planned again.
  std::vector<nd::NDArray> run(const std::vector<nd::NDArray>& feeds, const std::vector<nd::NDArray>& bound);

  // A variable's or op output's planned array (a feed's holds the last run's input, or is that
  // input where the run read it in place). Kept entries (Options::keep), variables and heads hold
  // their values until the next run.
  nd::NDArray value(Entry e) const;
  nd::NDArray variable(const std::string& name) const;
  // Whether a caller still holds a head that run() returned without copying (Options::copy_heads).
  bool heads_in_use() const;
  // Whether runs are launched as one captured graph now.
  bool captured() const { return captured_ != nullptr; }
  // Whether the last run read its inputs where they were (Options::read_feeds_in_place).
  bool read_feeds_in_place() const { return !last_feeds_.empty(); }
  // Bytes of the planned buffers (the feeds' and the intermediates', not the bound arrays').
  std::size_t planned_bytes() const { return planned_bytes_; }
  // The steps a replay runs (kernels, fused runs counting once), once planned.
  std::size_t steps() const { return steps_.size(); }
  // How many times the graph was planned (a new bound array re-plans where a replay is captured;
  // elsewhere the steps read the new array in the old one's place).
  std::size_t plans() const { return plans_; }

 private:
  void plan(const std::vector<nd::NDArray>& bound);
  // capturing: into a graph, whose replays start after all work queued before them, so that the
  // steps may read their settled inputs (settled_) early.
  void run_steps(bool capturing = false);
  // Puts the bound arrays that changed where the steps and values read the old ones; false
  // (nothing changed) where one cannot stand in for its old one (another shape, dtype or context,
  // memory shared with another bound array, or a captured replay).
  bool rebind(const std::vector<nd::NDArray>& bound);
  void try_capture(const std::vector<nd::NDArray>& feeds, const std::vector<nd::NDArray>& outputs);
  // The copies into the feeds' buffers, and out of the heads' into outputs (those not handed out).
  std::vector<CopyItem> feed_copies(const std::vector<nd::NDArray>& feeds) const;
  std::vector<CopyItem> head_copies(const std::vector<nd::NDArray>& outputs) const;
  // Runs fn with the steps reading `feeds` in place of the feeds' buffers (put back afterwards).
  template <class Fn>
  void with_feeds_in_place(const std::vector<nd::NDArray>& feeds, Fn&& fn);
  // The graph that reads these inputs in place (captured now, if one of the last kFeedGraphs runs
  // had the same addresses), or nullptr.
  CapturedWork* feed_graph(const std::vector<nd::NDArray>& feeds, const std::vector<nd::NDArray>& outputs);
  // Notes a run's input addresses among the recent ones; whether they were there already.
  bool remember_feed_addresses(const std::vector<const void*>& at);

  std::shared_ptr<const Graph> graph_;
  bool training_;
  std::vector<std::string> feed_names_, bound_names_;
  std::vector<std::uint32_t> feed_nodes_, bound_nodes_;
  std::vector<nd::NDArray> feed_buffers_, bound_;
  Options options_;
  Context ctx_;
  std::vector<std::vector<nd::NDArray>> values_;
  std::vector<op::Invocation> steps_;
  // Per step, op::ExecContext::settled_inputs within a captured replay: the inputs that neither a
  // step (its outputs, or inputs its op writes) nor the feeds' copies write.
  std::vector<std::uint32_t> settled_;
  std::vector<std::unique_ptr<op::FusedProgram>> fused_programs_;  // what fused steps point to
  std::size_t planned_bytes_ = 0;
  bool capturable_ = false, capture_tried_ = false;
  // Where the steps read the feeds' buffers, for replays that read the inputs directly.
  struct FeedRead {
    std::size_t step, input, feed;
  };
  std::vector<FeedRead> feed_reads_;
  // Per head: returned as planned (not copied), and the handles to its buffer the plan holds.
  std::vector<bool> head_direct_;
  std::vector<bool> head_target_;  // per head: computed into Options::head_targets
  std::vector<long> head_users_;
  bool direct_feeds_ = false;             // op by op, reading the inputs in place (cpu(0))
  std::vector<nd::NDArray> last_feeds_;  // the inputs the last run read in place
  // Captured graphs reading the inputs at these addresses in place (GPU), most recently used last.
  struct FeedGraph {
    std::vector<const void*> at;
    std::unique_ptr<CapturedWork> work;
  };
  static constexpr std::size_t kFeedGraphs = 16, kHitsPerCapture = 64;
  bool feed_graphs_allowed_ = false;
  std::vector<FeedGraph> feed_graphs_;
  // The input addresses of the last kFeedGraphs runs without a graph of their own, most recent last.
  std::vector<std::vector<const void*>> recent_feed_addresses_;
  std::size_t hits_since_capture_ = 0, feed_graph_captures_ = 0;
  bool planned_ = false;
  std::size_t plans_ = 0;
  std::unique_ptr<CapturedWork> captured_;
};

// The backward pass of g (one head) for the variables `wrt`, traced once on the given values of
// g's variables. Its variables: "head_grad" (the head's gradient), g's variables by name, and
// forward values by forward_name(entry); its heads: the gradients of wrt that are not none, in
// order, with `head_of[i]` the head of wrt[i] (-1: no gradient flows to it).
struct GradientGraph {
  std::shared_ptr<const Graph> graph;
  std::vector<int> head_of;
  std::vector<Entry> forward_entries;  // the forward values it reads, as forward_name names them
};
GradientGraph gradient(const Graph& g, const std::map<std::string, nd::NDArray>& variables,
                       const std::vector<std::string>& wrt);
std::string forward_name(Entry e);  // "_fwd3_0"

}  // namespace mx::graph
