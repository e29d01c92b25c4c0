#include "ndarray/graph/executor.hpp"

#include <algorithm>
#include <climits>
#include <optional>

#include "ndarray/autograd/autograd.hpp"
#include "ndarray/backend/backend.hpp"
#include "ndarray/core/describe.hpp"
#include "ndarray/graph/buffer_access.hpp"
#include "ndarray/graph/fused.hpp"
#include "ndarray/graph/trace.hpp"
#include "ndarray/ops/creation.hpp"
#include "ndarray/ops/reshape_kernels.hpp"

namespace mx::graph {
namespace {

using nd::NDArray;

std::size_t bytes_of(const NDArray& x) { return static_cast<std::size_t>(x.size()) * dtype_size(x.dtype()); }

// The planner's memory: blocks of one allocation each, handed to one entry at a time (or to an
// entry and its views), back on the free list once the last of them has been read.
struct BlockPool {
  struct Block {
    std::shared_ptr<Storage> storage;
    int live = 0;  // entries (and views) of it still to be read
  };
  Context ctx;
  std::vector<Block> blocks;
  std::vector<std::size_t> free;  // indices of blocks not in use
  std::size_t total = 0;

  // Best fit among the free blocks, else a new one.
  std::size_t take(std::size_t bytes) {
    auto best = free.end();
    for (auto it = free.begin(); it != free.end(); ++it) {
      const std::size_t size = blocks[*it].storage->bytes();
      if (size >= bytes && (best == free.end() || size < blocks[*best].storage->bytes())) best = it;
    }
    if (best != free.end()) {
      const std::size_t id = *best;
      free.erase(best);
      return id;
    }
    blocks.push_back({std::make_shared<Storage>(ctx, std::max<std::size_t>(bytes, 1)), 0});
    total += blocks.back().storage->bytes();
    return blocks.size() - 1;
  }
  void release(std::size_t id) {
    if (--blocks[id].live == 0) free.push_back(id);
  }
};

std::vector<const void*> addresses_of(const std::vector<NDArray>& arrays) {
  std::vector<const void*> at;
  for (const NDArray& x : arrays) at.push_back(x.data());
  return at;
}

bool is_view_op(const op::OpDef* op) { return op == &op::reshape_op() || op == &op::flatten_op(); }

// Per step, the inputs (bits, of the first 32) that no step writes (as an output, or an input its
// op writes in place) and that are not the feeds' buffers, which a replay's copies write: the
// parameters and constants.
std::vector<std::uint32_t> settled_inputs(const std::vector<op::Invocation>& steps, const std::vector<NDArray>& feeds) {
  std::vector<const NDArray*> written;
  for (const NDArray& f : feeds) written.push_back(&f);
  for (const op::Invocation& step : steps) {
    for (const NDArray& y : step.outputs) written.push_back(&y);
    for (std::size_t i = 0; i < step.inputs.size() && i < 32; ++i) {
      if (step.op->written_inputs >> i & 1u) written.push_back(&step.inputs[i]);
    }
  }
  std::vector<std::uint32_t> settled(steps.size(), 0);
  for (std::size_t s = 0; s < steps.size(); ++s) {
    for (std::size_t i = 0; i < steps[s].inputs.size() && i < 32; ++i) {
      const NDArray& x = steps[s].inputs[i];
      const auto writes_x = [&](const NDArray* w) { return !w->is_none() && x.shares_memory(*w); };
      if (!x.is_none() && std::none_of(written.begin(), written.end(), writes_x)) settled[s] |= 1u << i;
    }
  }
  return settled;
}

}  // namespace

std::string forward_name(Entry e) { return "_fwd" + std::to_string(e.node) + "_" + std::to_string(e.index); }

Executor::Executor(std::shared_ptr<const Graph> g, bool training, std::vector<std::string> feed_names,
                   const std::vector<NDArray>& feed_examples, std::vector<std::string> bound_names,
                   const std::vector<NDArray>& bound, Options options)
    : graph_(std::move(g)), training_(training), feed_names_(std::move(feed_names)),
      bound_names_(std::move(bound_names)), options_(std::move(options)) {
  if (feed_examples.size() != feed_names_.size() || bound.size() != bound_names_.size()) {
    throw ValueError("graph executor: the arrays do not match the names given");
  }
  if (feed_examples.empty()) throw ValueError("graph executor: a graph needs at least one input");
  ctx_ = feed_examples.front().context();
  const auto node_of = [&](const std::string& name) -> std::optional<std::uint32_t> {
    for (std::uint32_t id : graph_->arg_nodes()) {
      if (graph_->nodes[id].name == name) return id;
    }
    return std::nullopt;
  };
  for (std::size_t i = 0; i < feed_names_.size(); ++i) {
    const auto id = node_of(feed_names_[i]);
    if (!id) throw ValueError("graph executor: the graph has no input '" + feed_names_[i] + "'");
    feed_nodes_.push_back(*id);
    feed_buffers_.emplace_back(feed_examples[i].shape(), ctx_, feed_examples[i].dtype());
  }
  for (const std::string& name : bound_names_) {
    const auto id = node_of(name);
    bound_nodes_.push_back(id ? *id : UINT32_MAX);  // a bound array the graph does not read
  }
  plan(bound);
}

Executor::~Executor() = default;

void Executor::plan(const std::vector<NDArray>& bound) {
  // Half a plan is no plan: a throw below leaves planned_ false, and the next run plans again.
  planned_ = false;
  const Graph& g = *graph_;
  const std::size_t n = g.nodes.size();
  bound_ = bound;
  captured_.reset();
  capture_tried_ = false;
  values_.assign(n, {});
  steps_.clear();
  fused_programs_.clear();
  std::vector<op::StepUse> uses;  // per step, for fusion
  bool view_since_step = false;
  // The last node that reads each entry (INT_MAX: read after the run, by the caller or a backward
  // graph; the node itself: read by none).
  std::vector<std::vector<int>> last_use(n);
  for (std::size_t i = 0; i < n; ++i) last_use[i].assign(g.nodes[i].num_outputs, static_cast<int>(i));
  for (std::size_t i = 0; i < n; ++i) {
    for (const Entry& e : g.nodes[i].inputs) {
      auto& slot = last_use[e.node].at(e.index);
      slot = std::max(slot, static_cast<int>(i));
    }
  }
  for (const Entry& e : g.heads) last_use[e.node].at(e.index) = INT_MAX;
  for (const Entry& e : options_.keep) last_use.at(e.node).at(e.index) = INT_MAX;
  if (!options_.reuse_memory) {
    for (auto& uses : last_use) std::fill(uses.begin(), uses.end(), INT_MAX);
  }

  // Variables: the feeds' own buffers and the bound arrays.
  std::vector<bool> given(n, false);
  for (std::size_t i = 0; i < feed_nodes_.size(); ++i) values_[feed_nodes_[i]] = {feed_buffers_[i]}, given[feed_nodes_[i]] = true;
  for (std::size_t i = 0; i < bound_nodes_.size(); ++i) {
    if (bound_nodes_[i] == UINT32_MAX || given[bound_nodes_[i]]) continue;
    values_[bound_nodes_[i]] = {bound[i]};
    given[bound_nodes_[i]] = true;
  }
  for (std::uint32_t id : g.arg_nodes()) {
    if (!given[id]) throw ValueError("graph executor: no array given for the variable '" + g.nodes[id].name + "'");
  }

  // The head whose target (Options::head_targets) output j of node i is computed into, or -1.
  head_target_.assign(g.heads.size(), false);
  const auto target_head = [&](std::uint32_t i, std::uint32_t j, const op::OutputSpec& spec) {
    for (std::size_t h = 0; h < g.heads.size() && h < options_.head_targets.size(); ++h) {
      if (!(g.heads[h] == Entry{i, j})) continue;
      const NDArray& t = options_.head_targets[h];
      const bool fits = !t.is_none() && t.shape() == spec.shape && t.dtype() == spec.dtype && t.context() == ctx_ &&
                        t.is_contiguous();
      return fits ? static_cast<int>(h) : -1;  // the first head of this entry only
    }
    return -1;
  };
  BlockPool pool{ctx_, {}, {}, 0};
  std::vector<std::vector<int>> block_of(n);  // each entry's block, -1 for none of the pool's
  std::vector<op::OutputSpec> specs;
  for (std::size_t i = 0; i < n; ++i) {
    const Node& node = g.nodes[i];
    block_of[i].assign(node.num_outputs, -1);
    if (node.is_variable()) continue;
    op::Invocation inv{node.op, node.params, std::vector<NDArray>(node.num_inputs), {}};
    for (std::size_t k = 0; k < node.inputs.size(); ++k) {
      inv.inputs[node.input_slots[k]] = values_[node.inputs[k].node].at(node.inputs[k].index);
    }
    const auto alias = [&](std::size_t out, const NDArray& view, const Entry& of) {
      values_[i].resize(node.num_outputs);
      values_[i][out] = view;
      const int block = block_of[of.node][of.index];
      block_of[i][out] = block;
      if (block >= 0) ++pool.blocks[static_cast<std::size_t>(block)].live;
    };
    if (node.op->mode && !node.op->mode(inv.params, training_)) {
      alias(0, inv.inputs.at(0), node.inputs.at(0));  // the identity in this mode
      view_since_step = true;
    } else {
      specs.clear();
      try {
        node.op->infer(inv, specs);
      } catch (const Error& e) {
        throw ValueError("graph executor: node '" + node.name + "': " + e.what());
      }
      if (is_view_op(node.op) && inv.inputs[0].is_contiguous()) {
        alias(0, inv.inputs[0].reshape(specs.at(0).shape), node.inputs.at(0));
        view_since_step = true;
      } else {
        for (std::size_t j = 0; j < specs.size(); ++j) {
          if (const int h = target_head(static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(j), specs[j]); h >= 0) {
            block_of[i].resize(std::max(block_of[i].size(), j + 1), -1);
            inv.outputs.push_back(options_.head_targets[static_cast<std::size_t>(h)]);
            head_target_[static_cast<std::size_t>(h)] = true;
            continue;
          }
          const std::size_t id =
              pool.take(static_cast<std::size_t>(specs[j].shape.numel()) * dtype_size(specs[j].dtype));
          ++pool.blocks[id].live;
          block_of[i].resize(std::max(block_of[i].size(), j + 1), -1);
          block_of[i][j] = static_cast<int>(id);
          inv.outputs.push_back(nd::detail::BufferAccess::view(pool.blocks[id].storage, specs[j].shape, specs[j].dtype));
        }
        values_[i] = inv.outputs;
        steps_.push_back(std::move(inv));
        int read_until = static_cast<int>(i);
        for (const int use : last_use[i]) read_until = std::max(read_until, use);
        uses.push_back({static_cast<int>(i), read_until, view_since_step});
        view_since_step = false;
      }
    }
    // Entries whose last reader is this node (or that none reads) give their blocks back.
    for (std::size_t k = 0; k < node.inputs.size(); ++k) {
      const Entry& e = node.inputs[k];
      if (std::find(node.inputs.begin(), node.inputs.begin() + static_cast<std::ptrdiff_t>(k), e) !=
          node.inputs.begin() + static_cast<std::ptrdiff_t>(k)) {
        continue;  // read twice (x + x): released once
      }
      const int block = block_of[e.node][e.index];
      if (block >= 0 && last_use[e.node][e.index] == static_cast<int>(i)) pool.release(static_cast<std::size_t>(block));
    }
    for (std::size_t j = 0; j < block_of[i].size(); ++j) {  // outputs beyond num_outputs: read by none
      const bool unread = j >= last_use[i].size() || last_use[i][j] == static_cast<int>(i);
      if (block_of[i][j] >= 0 && unread) pool.release(static_cast<std::size_t>(block_of[i][j]));
    }
  }
  if (options_.fuse == Options::Fuse::always || (options_.fuse == Options::Fuse::gpu && ctx_.is_gpu())) {
    op::fuse_elementwise(steps_, uses, fused_programs_);
  }
  planned_bytes_ = pool.total;
  settled_ = settled_inputs(steps_, feed_buffers_);
  // Heads returned as planned: those with a contiguous pool buffer of their own.
  head_direct_.assign(g.heads.size(), false);
  head_users_.assign(g.heads.size(), 0);
  for (std::size_t h = 0; h < g.heads.size() && !options_.copy_heads; ++h) {
    const Entry e = g.heads[h];
    bool own = block_of[e.node].size() > e.index && block_of[e.node][e.index] >= 0 && values_[e.node][e.index].is_contiguous();
    for (std::size_t k = 0; k < h; ++k) own = own && !(g.heads[k] == e);
    head_direct_[h] = own;
  }
  for (const NDArray& f : feed_buffers_) planned_bytes_ += bytes_of(f);
  // Ops that draw random numbers run on every replay with new draws, which a captured graph
  // cannot give: such graphs replay op by op.
  capturable_ = options_.capture && ctx_.is_gpu();
  for (const op::Invocation& step : steps_) capturable_ = capturable_ && !op::draws_random(step);
  for (const Entry& e : g.heads) capturable_ = capturable_ && bytes_of(values_[e.node].at(e.index)) > 0;
  for (const NDArray& f : feed_buffers_) capturable_ = capturable_ && bytes_of(f) > 0;
  // A replay can read the caller's inputs where they are, instead of copies, when no head is a
  // feed or its view (value() gives kept feeds as the inputs themselves): op by op, or on a GPU by
  // graphs captured per input address. Not on a GPU where values are kept for a backward graph:
  // that graph is bound to the forward's input (variable()), and a new array there would plan and
  // capture it again; the planned input buffer stays put.
  feed_reads_.clear();
  last_feeds_.clear();
  feed_graphs_.clear();
  recent_feed_addresses_.clear();
  hits_since_capture_ = feed_graph_captures_ = 0;
  bool direct = options_.read_feeds_in_place && !(ctx_.is_gpu() && !options_.keep.empty());
  for (const Entry& e : g.heads) {
    for (const NDArray& f : feed_buffers_) direct = direct && !values_[e.node].at(e.index).shares_memory(f);
  }
  feed_graphs_allowed_ = direct && capturable_;
  for (std::size_t s = 0; direct && s < steps_.size(); ++s) {
    for (std::size_t k = 0; k < steps_[s].inputs.size(); ++k) {
      for (std::size_t i = 0; i < feed_buffers_.size(); ++i) {
        const NDArray& in = steps_[s].inputs[k];
        if (!in.is_none() && in.shares_memory(feed_buffers_[i])) feed_reads_.push_back({s, k, i});
      }
    }
  }
  direct_feeds_ = direct && !capturable_;
  planned_ = true;
  ++plans_;
  pool.blocks.clear();  // the plan's own handles remain: values_ and steps_
  for (std::size_t h = 0; h < g.heads.size(); ++h) {
    if (head_direct_[h]) head_users_[h] = nd::detail::BufferAccess::storage_users(values_[g.heads[h].node][g.heads[h].index]);
  }
}

bool Executor::heads_in_use() const {
  for (std::size_t h = 0; h < head_direct_.size(); ++h) {
    const Entry e = graph_->heads[h];
    if (head_direct_[h] && nd::detail::BufferAccess::storage_users(values_[e.node][e.index]) > head_users_[h]) return true;
  }
  return false;
}

bool Executor::rebind(const std::vector<NDArray>& bound) {
  std::vector<std::size_t> changed;
  for (std::size_t i = 0; i < bound.size(); ++i) {
    if (!bound[i].is(bound_[i])) changed.push_back(i);
  }
  if (changed.empty()) return true;
  if (capturable_) return false;
  for (const std::size_t i : changed) {
    const NDArray &now = bound[i], &old = bound_[i];
    if (now.shape() != old.shape() || now.dtype() != old.dtype() || now.context() != old.context() ||
        !now.is_contiguous() || !old.is_contiguous() || old.size() == 0) {
      return false;
    }
    // Bound arrays that are views of one another (the input and its reshape) stay so, over the
    // same elements; others stay apart.
    const auto same_span = [](const NDArray& a, const NDArray& b) { return a.data() == b.data() && a.size() == b.size(); };
    for (std::size_t j = 0; j < bound.size(); ++j) {
      if (j == i) continue;
      const bool before = old.shares_memory(bound_[j]), after = now.shares_memory(bound[j]);
      if (before != after || (before && !(same_span(old, bound_[j]) && same_span(now, bound[j])))) return false;
    }
  }
  // Every array of the plan on an old array's memory is that array or a reshape of it (the plan's
  // only views): all of them found before any changes.
  std::vector<NDArray*> readers;
  for (op::Invocation& step : steps_) {
    for (NDArray& a : step.inputs) readers.push_back(&a);
    for (NDArray& a : step.outputs) readers.push_back(&a);
  }
  for (auto& values : values_) {
    for (NDArray& a : values) readers.push_back(&a);
  }
  std::vector<std::pair<NDArray*, std::size_t>> swaps;  // (reader, the bound index it moves to)
  for (NDArray* a : readers) {
    for (const std::size_t i : changed) {
      const NDArray& old = bound_[i];
      if (a->is_none() || !a->shares_memory(old)) continue;
      if (a->data() != old.data() || a->size() != old.size() || !a->is_contiguous()) return false;
      swaps.emplace_back(a, i);
    }
  }
  for (auto& [a, i] : swaps) *a = bound[i].reshape(a->shape());
  for (const std::size_t i : changed) bound_[i] = bound[i];
  return true;
}

void Executor::run_steps(bool capturing) {
  for (std::size_t s = 0; s < steps_.size(); ++s) op::run_kernel(steps_[s], capturing ? settled_[s] : 0);
}

NDArray Executor::value(Entry e) const {
  const NDArray& v = values_.at(e.node).at(e.index);
  for (std::size_t i = 0; i < last_feeds_.size(); ++i) {
    if (v.shares_memory(feed_buffers_[i])) return last_feeds_[i].reshape(v.shape());  // read in place
  }
  return v;
}

NDArray Executor::variable(const std::string& name) const {
  for (std::uint32_t id : graph_->arg_nodes()) {
    if (graph_->nodes[id].name == name) return value({id, 0});
  }
  throw ValueError("graph executor: no variable '" + name + "'");
}

std::vector<NDArray> Executor::run(const std::vector<NDArray>& feeds, const std::vector<NDArray>& bound) {
  if (feeds.size() != feed_buffers_.size()) {
    throw ValueError("hybridized graph: takes " + std::to_string(feed_buffers_.size()) + " input(s), got " +
                     std::to_string(feeds.size()));
  }
  for (std::size_t i = 0; i < feeds.size(); ++i) {
    const NDArray& x = feeds[i];
    nd::check_not_none("hybridized graph", x);
    if (x.shape() != feed_buffers_[i].shape() || x.dtype() != feed_buffers_[i].dtype() || x.context() != ctx_) {
      throw ValueError("hybridized graph: input '" + feed_names_[i] + "' was planned as " +
                       nd::describe(feed_buffers_[i]) + ", got " + nd::describe(x));
    }
  }
  if (bound.size() != bound_names_.size()) throw ValueError("hybridized graph: the bound arrays do not match the plan");
  if (!planned_ || !rebind(bound)) plan(bound);
  std::vector<NDArray> outputs;
  for (std::size_t h = 0; h < graph_->heads.size(); ++h) {
    const NDArray& v = values_[graph_->heads[h].node].at(graph_->heads[h].index);
    if (head_direct_[h] || head_target_[h]) outputs.push_back(v);
    else outputs.emplace_back(v.shape(), ctx_, v.dtype());
  }
  std::vector<NDArray> dense_feeds;
  for (const NDArray& x : feeds) dense_feeds.push_back(x.contiguous());
  Backend& b = backend(ctx_);
  if (captured_) {
    if (CapturedWork* in_place = feed_graph(dense_feeds, outputs)) {
      in_place->launch({}, head_copies(outputs));
      last_feeds_ = dense_feeds;
    } else {
      last_feeds_.clear();
      captured_->launch(feed_copies(dense_feeds), head_copies(outputs));
    }
    return outputs;
  }
  if (direct_feeds_) {
    last_feeds_.clear();
    with_feeds_in_place(dense_feeds, [&] { run_steps(); });
    last_feeds_ = dense_feeds;
    b.copy_batch(ctx_, head_copies(outputs));
    return outputs;
  }
  b.copy_batch(ctx_, feed_copies(dense_feeds));
  run_steps();
  b.copy_batch(ctx_, head_copies(outputs));
  // The first run has chosen every kernel's algorithm and made every lazy handle: the next ones
  // are captured.
  if (capturable_ && !capture_tried_) try_capture(dense_feeds, outputs);
  remember_feed_addresses(addresses_of(dense_feeds));
  return outputs;
}

std::vector<CopyItem> Executor::feed_copies(const std::vector<NDArray>& feeds) const {
  std::vector<CopyItem> items;
  for (std::size_t i = 0; i < feeds.size(); ++i) items.push_back({feed_buffers_[i].data(), feeds[i].data(), bytes_of(feed_buffers_[i])});
  return items;
}

std::vector<CopyItem> Executor::head_copies(const std::vector<NDArray>& outputs) const {
  std::vector<CopyItem> items;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (head_direct_[i] || head_target_[i]) continue;
    // Planned values are contiguous: pool blocks, feed buffers, views of them, bound arrays.
    const NDArray& v = values_[graph_->heads[i].node].at(graph_->heads[i].index);
    items.push_back({outputs[i].data(), v.data(), bytes_of(v)});
  }
  return items;
}

template <class Fn>
void Executor::with_feeds_in_place(const std::vector<NDArray>& feeds, Fn&& fn) {
  struct PutBack {  // the planned buffers back into the steps, a throw included
    Executor& e;
    std::vector<NDArray> planned;
    ~PutBack() {
      for (std::size_t j = 0; j < planned.size(); ++j) e.steps_[e.feed_reads_[j].step].inputs[e.feed_reads_[j].input] = planned[j];
    }
  } put_back{*this, {}};
  for (const FeedRead& r : feed_reads_) {
    NDArray& in = steps_[r.step].inputs[r.input];
    put_back.planned.push_back(in);
    in = feeds[r.feed].reshape(in.shape());  // views of the same shapes as the planned ones
  }
  fn();
}

// An input address gets its graph when it comes back within the last kFeedGraphs runs without a
// graph (a static input from its second run, inputs used in turn from their second round). Past
// the first kFeedGraphs captures, a capture (tens of microseconds) must be paid for by
// kHitsPerCapture replays of kept graphs since the one before (each saves about a microsecond of
// copying): addresses that come back, but not before the graphs made for them are dropped, are
// then captured seldom.
CapturedWork* Executor::feed_graph(const std::vector<NDArray>& feeds, const std::vector<NDArray>& outputs) {
  if (!feed_graphs_allowed_) return nullptr;
  std::vector<const void*> at = addresses_of(feeds);
  for (auto it = feed_graphs_.begin(); it != feed_graphs_.end(); ++it) {
    if (it->at != at) continue;
    std::rotate(it, it + 1, feed_graphs_.end());  // now the most recently used
    ++hits_since_capture_;
    return feed_graphs_.back().work.get();
  }
  const bool again = remember_feed_addresses(at);
  if (!again || (feed_graph_captures_ >= kFeedGraphs && hits_since_capture_ < kHitsPerCapture)) return nullptr;
  std::unique_ptr<CapturedWork> work;
  try {
    with_feeds_in_place(feeds, [&] { work = backend(ctx_).capture(ctx_, [&] { run_steps(true); }, {}, head_copies(outputs)); });
  } catch (const Error&) {  // the copying graph serves
  }
  if (!work) {
    feed_graphs_allowed_ = false;
    return nullptr;
  }
  ++feed_graph_captures_;
  hits_since_capture_ = 0;
  recent_feed_addresses_.pop_back();  // `at`, just remembered: it has a graph now
  if (feed_graphs_.size() == kFeedGraphs) feed_graphs_.erase(feed_graphs_.begin());
  feed_graphs_.push_back({std::move(at), std::move(work)});
  return feed_graphs_.back().work.get();
}

bool Executor::remember_feed_addresses(const std::vector<const void*>& at) {
  const auto seen = std::find(recent_feed_addresses_.begin(), recent_feed_addresses_.end(), at);
  const bool again = seen != recent_feed_addresses_.end();
  if (again) recent_feed_addresses_.erase(seen);
  else if (recent_feed_addresses_.size() == kFeedGraphs) recent_feed_addresses_.erase(recent_feed_addresses_.begin());
  recent_feed_addresses_.push_back(at);
  return again;
}

void Executor::try_capture(const std::vector<NDArray>& feeds, const std::vector<NDArray>& outputs) {
  capture_tried_ = true;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (!head_direct_[i] && !head_target_[i] && !values_[graph_->heads[i].node].at(graph_->heads[i].index).is_contiguous()) return;
  }
  try {
    captured_ = backend(ctx_).capture(ctx_, [&] { run_steps(true); }, feed_copies(feeds), head_copies(outputs));
  } catch (const Error&) {  // this run's results stand; later runs go op by op
    captured_.reset();
  }
}

namespace {

// a is a contiguous reshape of the contiguous v (the same elements, in the same order).
bool is_view_of(const NDArray& a, const NDArray& v) {
  return !v.is_none() && a.is_contiguous() && v.is_contiguous() && a.data() == v.data() && a.size() == v.size() &&
         a.dtype() == v.dtype();
}

}  // namespace

GradientGraph gradient(const Graph& g, const std::map<std::string, NDArray>& variables, const std::vector<std::string>& wrt) {
  if (g.heads.size() != 1) throw ValueError("hybridize: backward through a graph of one output only");
  const autograd::Scope recording(true, autograd::is_training());
  // The variables as detached handles, those of wrt marked for their gradients.
  std::map<std::string, NDArray> marked;
  for (const auto& [name, value] : variables) {
    NDArray v = value.detach();
    if (std::find(wrt.begin(), wrt.end(), name) != wrt.end()) autograd::mark_variable(v, nd::zeros_like(v));
    marked.emplace(name, v);
  }
  std::vector<std::vector<NDArray>> values;
  const NDArray head = run(g, marked, &values).at(0);
  std::vector<NDArray> wrt_arrays;
  for (const std::string& name : wrt) wrt_arrays.push_back(marked.at(name));

  GradientGraph out;
  std::vector<Entry> forward_entries;
  // A gradient reads forward values and variables, or reshaped views of them (FullyConnected's
  // gradient flattens its input): exact matches first.
  const auto find = [&](const NDArray& a, bool view) -> std::optional<Named> {
    const auto matches = [&](const NDArray& v) { return view ? is_view_of(a, v) : v.is(a); };
    for (const auto& [name, v] : marked) {
      if (matches(v)) return Named{name, v};
    }
    for (std::uint32_t n = 0; n < values.size(); ++n) {
      for (std::uint32_t i = 0; i < values[n].size(); ++i) {
        if (!matches(values[n][i])) continue;
        const Entry e{n, i};
        if (std::find(forward_entries.begin(), forward_entries.end(), e) == forward_entries.end()) forward_entries.push_back(e);
        return Named{forward_name(e), values[n][i]};
      }
    }
    return std::nullopt;
  };
  const auto name_of = [&](const NDArray& a) -> std::optional<Named> {
    if (auto named = find(a, false)) return named;
    return find(a, true);
  };
  Graph backward = trace(
      [&](const std::vector<NDArray>& in) {
        std::vector<NDArray> heads;
        for (const NDArray& grad : autograd::grad(head, wrt_arrays, in[0])) {
          out.head_of.push_back(grad.is_none() ? -1 : static_cast<int>(heads.size()));
          if (!grad.is_none()) heads.push_back(grad);
        }
        return heads;
      },
      {nd::ones_like(head)}, {"head_grad"}, name_of);
  out.graph = std::make_shared<const Graph>(std::move(backward));
  out.forward_entries = std::move(forward_entries);
  return out;
}

}  // namespace mx::graph
