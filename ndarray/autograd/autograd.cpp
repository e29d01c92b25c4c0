#include "ndarray/autograd/autograd.hpp"

#include "ndarray/autograd/autograd_access.hpp"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "ndarray/backend/backend.hpp"
#include "ndarray/core/checks.hpp"
#include "ndarray/graph/trace.hpp"
#include "ndarray/ops/creation.hpp"
#include "ndarray/ops/creation_kernels.hpp"
#include "ndarray/ops/elementwise.hpp"
#include "ndarray/ops/op.hpp"
#include "ndarray/profiler/profiler.hpp"
#include "context/fast_tls.hpp"

namespace mx::autograd {
namespace {
NDG_FAST_TLS thread_local bool recording = false;
NDG_FAST_TLS thread_local bool training = false;
}  // namespace

Scope::Scope(bool record, bool train) : previous_recording_(recording), previous_training_(training) {
  recording = record;
  training = train;
}
Scope::~Scope() {
  recording = previous_recording_;
  training = previous_training_;
}

Scope pause(bool train) { return Scope(false, train); }
Scope train_mode() { return Scope(recording, true); }
Scope predict_mode() { return Scope(recording, false); }
bool is_recording() { return recording; }
bool is_training() { return training; }

void mark_variable(nd::NDArray& x, const nd::NDArray& grad, const std::string& grad_req) {
  nd::detail::check_not_none("attach_grad", x);
  if (grad.context() != x.context()) {
    throw ContextMismatch("attach_grad: gradient buffer " + nd::detail::describe(grad) +
                          " is on another context than the array " + nd::detail::describe(x) +
                          ". Allocate it there, e.g. nd::zeros_like(x)");
  }
  if (grad.shape() != x.shape() || grad.dtype() != x.dtype()) {
    throw ShapeError("attach_grad: gradient buffer " + nd::detail::describe(grad) + " does not match the array " +
                     nd::detail::describe(x));
  }
  if (grad_req != "write" && grad_req != "add") {
    throw ValueError("attach_grad: grad_req must be \"write\" or \"add\", not \"" + grad_req + "\"");
  }
  auto node = std::make_shared<Node>();
  node->op = "variable";
  node->leaf = true;
  node->accumulate = grad_req == "add";
  node->grad = grad;
  NodeAccess::set(x, std::move(node));
}

void add_gradient_listener(const nd::NDArray& x, const std::shared_ptr<GradientListener>& listener, std::int64_t tag) {
  Node* node = x.autograd_node().get();
  if (!node || !node->leaf) {
    throw ValueError("add_gradient_listener: " + nd::detail::describe(x) +
                     " is not a variable (attach_grad or mark_variable)");
  }
  auto& listeners = node->listeners;
  listeners.erase(std::remove_if(listeners.begin(), listeners.end(),
                                 [&](const auto& l) { return l.first.expired() || l.first.lock() == listener; }),
                  listeners.end());
  listeners.emplace_back(listener, tag);
}

bool needs_record(const std::vector<const nd::NDArray*>& inputs) {
  if (!recording) return false;
  for (const nd::NDArray* x : inputs) {
    if (x && x->autograd_node()) return true;
  }
  return false;
}

void record_op(const char* op, nd::NDArray& out, const std::vector<const nd::NDArray*>& inputs, BackwardFn backward) {
  if (!needs_record(inputs)) return;
  auto node = std::make_shared<Node>();
  node->op = op;
  for (const nd::NDArray* x : inputs) node->inputs.push_back(x ? x->autograd_node() : nullptr);
  node->backward = std::move(backward);
  NodeAccess::set(out, std::move(node));
}

namespace {

// Nodes reachable from `root`, each after all the nodes that consume it (reverse topological).
std::vector<Node*> consumers_first(Node* root) {
  std::vector<Node*> postorder;
  std::unordered_set<Node*> seen{root};
  std::vector<std::pair<Node*, std::size_t>> stack{{root, 0}};
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->inputs.size()) {
      Node* input = node->inputs[next++].get();
      if (input && seen.insert(input).second) stack.emplace_back(input, 0);
    } else {
      postorder.push_back(node);
      stack.pop_back();
    }
  }
  return {postorder.rbegin(), postorder.rend()};
}

// The "write" leaves' gradients copied into their buffers once backward has computed them all:
// contiguous ones in one batch per context (one launch on a GPU), the others by copyto.
void write_leaves(const std::vector<std::pair<nd::NDArray, nd::NDArray>>& writes) {
  const profiler::Range range("gradients written into the leaves");
  std::vector<std::pair<Context, std::vector<CopyItem>>> batches;
  for (const auto& [grad, target] : writes) {
    if (!grad.is_contiguous() || !target.is_contiguous() || grad.context() != target.context() ||
        grad.shares_memory(target) || grad.size() == 0) {
      nd::NDArray buffer = target;
      grad.copyto(buffer);
      continue;
    }
    const Context ctx = target.context();
    auto it = std::find_if(batches.begin(), batches.end(), [&](const auto& b) { return b.first == ctx; });
    if (it == batches.end()) it = batches.insert(batches.end(), {ctx, {}});
    it->second.push_back({target.data(), grad.data(), static_cast<std::size_t>(grad.size()) * dtype_size(grad.dtype())});
  }
  for (const auto& [ctx, items] : batches) backend(ctx).copy_batch(ctx, items);
}

}  // namespace

namespace {

// backward's and grad's checks of a head and its gradient, in the order the ops check their
// operands: context, dtype, shape.
std::shared_ptr<Node> checked_root(const char* what, const nd::NDArray& head, const nd::NDArray& head_grad) {
  nd::detail::check_not_none(what, head);
  const auto& root = head.autograd_node();
  if (!root) {
    throw Error(std::string(what) + ": " + nd::detail::describe(head) +
                " was not computed inside autograd::record() from arrays with attach_grad()");
  }
  if (head_grad.is_none()) return root;
  if (head_grad.context() != head.context()) {
    throw ContextMismatch(std::string(what) + ": the head gradient " + nd::detail::describe(head_grad) +
                          " is on another context than the array " + nd::detail::describe(head) +
                          ". Move it first, e.g. head_grad.copyto(" + head.context().str() +
                          ") or head_grad.as_in_context(" + head.context().str() + ")");
  }
  if (head_grad.dtype() != head.dtype()) {
    throw DTypeError(std::string(what) + ": the head gradient " + nd::detail::describe(head_grad) +
                     " has another dtype than the array " + nd::detail::describe(head) +
                     ". Convert it first, e.g. head_grad.astype(mx::DType::" + dtype_name(head.dtype()) + ")");
  }
  if (head_grad.shape() != head.shape()) {
    throw ShapeError(std::string(what) + ": the head gradient " + nd::detail::describe(head_grad) +
                     " does not match the shape of the array " + nd::detail::describe(head));
  }
  return root;
}

// The buffers offered to the BackwardFn that backward() is running (offered_gradient_buffers).
thread_local const std::vector<nd::NDArray>* offered_buffers = nullptr;

struct OfferedBuffers {
  explicit OfferedBuffers(const std::vector<nd::NDArray>* offers) : previous(offered_buffers) { offered_buffers = offers; }
  ~OfferedBuffers() { offered_buffers = previous; }
  OfferedBuffers(const OfferedBuffers&) = delete;
  OfferedBuffers& operator=(const OfferedBuffers&) = delete;
  const std::vector<nd::NDArray>* previous;
};

// For each node of `order`: the buffer offered to its gradient for each input (op::GradientTargets
// for a registered op's invocation, offered_gradient_buffers for a BackwardFn),
// which is a "write" leaf's own gradient buffer where that leaf is reached through this one edge
// alone; empty where there is none.
std::unordered_map<Node*, std::vector<nd::NDArray>> leaf_buffer_offers(const std::vector<Node*>& order) {
  std::unordered_map<Node*, int> edges;
  for (Node* node : order) {
    for (const auto& input : node->inputs) {
      if (input) ++edges[input.get()];
    }
  }
  std::unordered_map<Node*, std::vector<nd::NDArray>> offers;
  for (Node* node : order) {
    for (std::size_t i = 0; i < node->inputs.size(); ++i) {
      Node* input = node->inputs[i].get();
      if (!input || !input->leaf || input->accumulate || edges[input] != 1) continue;
      std::vector<nd::NDArray>& t = offers[node];
      t.resize(node->inputs.size());
      t[i] = input->grad;
    }
  }
  return offers;
}

// Whether a listener of the leaf wants its gradient before the other gradients of its op.
bool wanted_early(const Node& leaf) {
  return std::any_of(leaf.listeners.begin(), leaf.listeners.end(), [](const auto& l) {
    const std::shared_ptr<GradientListener> listener = l.first.lock();
    return listener && listener->wants_gradient_early();
  });
}

// Runs the gradients from root back to the leaves; each leaf's total gradient goes to on_leaf.
// With offer_leaf_buffers, gradient functions may compute a "write" leaf's gradient straight into
// its buffer (op::gradient_into); on_leaf then gets that buffer itself, and `written` gets the leaf
// as soon as the gradient function has queued it there (op::gradient_written), when it does.
// Note [gradients of several outputs]
// An op of several outputs (SliceChannel, topk with ret_typ="both", BatchNorm's hidden mean and
// invstd) is recorded as one node for the invocation and one per output (Node::output), each
// output array pointing at its own. Propagation passes through an output's node into a slot of
// the invocation's node, one slot per output, so that the op's gradient gets one gradient per
// output (a none array for an output that no gradient reached), as MXNet's FGradient gets
// ograds; the invocation's node is then reached with a non-none gradient when any slot is.
template <class OnLeaf>
void propagate(const std::shared_ptr<Node>& root, const nd::NDArray& head, const nd::NDArray& head_grad,
               bool offer_leaf_buffers, const OnLeaf& on_leaf, const std::function<void(Node&)>& written = {}) {
  std::unordered_map<Node*, nd::NDArray> grads;
  grads[root.get()] = head_grad.is_none() ? nd::ones_like(head) : head_grad;
  const std::vector<Node*> order = consumers_first(root.get());
  // Not while a graph is traced: a traced gradient must not write into buffers outside the graph.
  const auto offers = offer_leaf_buffers && !op::trace_sink() ? leaf_buffer_offers(order)
                                                              : std::unordered_map<Node*, std::vector<nd::NDArray>>{};
  std::unordered_map<Node*, std::vector<nd::NDArray>> output_grads;  // per op of several outputs
  for (Node* node : order) {
    const auto it = grads.find(node);
    if (it == grads.end()) continue;
    const nd::NDArray grad = it->second;  // none: reached through zero gradients only
    grads.erase(it);
    if (node->leaf) {
      on_leaf(*node, grad);
      continue;
    }
    if (node->output >= 0) {  // one output of an op of several: its slot
      Node* op_node = node->inputs.at(0).get();
      const auto j = static_cast<std::size_t>(node->output);
      std::vector<nd::NDArray>& slots = output_grads[op_node];
      if (slots.size() <= j) slots.resize(op_node->invocation ? op_node->invocation->outputs.size() : j + 1);
      if (!grad.is_none()) slots[j] = slots[j].is_none() ? grad : slots[j] + grad;
      nd::NDArray& reached = grads[op_node];
      if (reached.is_none()) reached = slots[j];
      continue;
    }
    std::vector<nd::NDArray> input_grads;
    if (grad.is_none()) {
      // Note [zero gradients]: nothing to compute; the inputs are reached with zero.
    } else if (node->invocation) {
      const std::string label = profiler::is_running() ? std::string("gradient of ") + node->op : std::string();
      const profiler::Range gradient_range(label);
      const op::OpDef& op = *node->invocation->op;
      if (op.gradient) {
        const auto offer = offers.find(node);
        const std::function<void(std::size_t)> on_written = [&](std::size_t i) {
          if (written && node->inputs[i]) written(*node->inputs[i]);
        };
        std::vector<char> early;  // per input: a listener of that variable wants its gradient first
        if (written && offer != offers.end()) {
          for (const auto& input : node->inputs) early.push_back(input && wanted_early(*input));
        }
        const op::GradientTargets targets(node->invocation.get(),
                                          offer == offers.end() ? std::vector<nd::NDArray>{} : offer->second,
                                          offer == offers.end() ? std::function<void(std::size_t)>{} : on_written,
                                          std::move(early));
        const auto slots = output_grads.find(node);
        input_grads = op.gradient(*node->invocation, slots == output_grads.end() ? std::vector<nd::NDArray>{grad}
                                                                                  : std::move(slots->second));
      }
    } else {
      const std::string label = profiler::is_running() ? std::string("gradient of ") + node->op : std::string();
      const profiler::Range gradient_range(label);
      const auto offer = offers.find(node);
      const OfferedBuffers offered(offer == offers.end() ? nullptr : &offer->second);
      input_grads = node->backward(grad);
    }
    // Every input with a history that a registered op reads is reached, with zero where no
    // gradient came back. A recorded function (record_op: a view, a hybridized block's graph)
    // given a gradient reaches only the inputs it gives one, as the ops it stands for would: a
    // parameter that a hybridized forward does not read stays unreached, as eagerly. Reached
    // through zero gradients alone, it passes zero to all its inputs.
    for (std::size_t i = 0; i < node->inputs.size(); ++i) {
      Node* input = node->inputs[i].get();
      if (!input) continue;
      const nd::NDArray g = i < input_grads.size() ? input_grads[i] : nd::NDArray();
      if (g.is_none() && !node->invocation && !grad.is_none()) continue;
      auto [slot, inserted] = grads.try_emplace(input, g);
      if (inserted || g.is_none()) continue;
      slot->second = slot->second.is_none() ? g : slot->second + g;
    }
  }
}

}  // namespace

const std::vector<nd::NDArray>& offered_gradient_buffers() {
  static const std::vector<nd::NDArray> none;
  return offered_buffers ? *offered_buffers : none;
}

namespace {

// backward()'s side of the gradient listeners: tells each leaf's listeners once, and each listener
// told anything that the backward ends.
class Tell {
 public:
  // Not while tracing: the buffers of a traced graph are not the variables'.
  Tell() : active_(!op::trace_sink()) {}
  // After an error in backward: the listeners still hear of its end (an error of theirs then
  // would hide the first one, so it is dropped).
  ~Tell() {
    try {
      end();
    } catch (...) {
    }
  }
  void end() {
    for (const auto& listener : std::exchange(told_, {})) listener->backward_end();
  }
  Tell(const Tell&) = delete;
  Tell& operator=(const Tell&) = delete;

  static bool listened(const Node& leaf) { return !leaf.listeners.empty(); }
  void ready(Node& leaf) {
    if (!active_ || !told_leaves_.insert(&leaf).second) return;
    for (const auto& [weak, tag] : leaf.listeners) {
      const std::shared_ptr<GradientListener> listener = weak.lock();
      if (!listener) continue;
      if (std::find(told_.begin(), told_.end(), listener) == told_.end()) told_.push_back(listener);
      listener->gradient_ready(tag);
    }
  }

 private:
  bool active_;
  std::unordered_set<Node*> told_leaves_;
  std::vector<std::shared_ptr<GradientListener>> told_;
};

}  // namespace

void backward(const nd::NDArray& head, const nd::NDArray& head_grad) {
  const std::shared_ptr<Node> root = checked_root("backward", head, head_grad);
  const profiler::Range range("autograd::backward");
  auto scope = pause(is_training());
  Tell tell;
  std::vector<std::pair<nd::NDArray, nd::NDArray>> leaf_writes;  // (gradient, the leaf's buffer)
  propagate(
      root, head, head_grad, true,
      [&](Node& leaf, const nd::NDArray& grad) {
        nd::NDArray target = leaf.grad;
        if (grad.is_none()) {  // reached through zero gradients only: "write" leaves get zero
          if (!leaf.accumulate) target.fill(0.0);
        } else if (leaf.accumulate) {
          target += grad;
        } else if (!grad.is(target)) {  // else computed in place
          // A listened leaf is written now, for its listeners; the others in one batch at the end.
          if (!Tell::listened(leaf)) {
            leaf_writes.emplace_back(grad, target);
            return;
          }
          grad.copyto(target);
        }
        if (Tell::listened(leaf)) tell.ready(leaf);
      },
      [&](Node& leaf) {
        if (leaf.leaf && Tell::listened(leaf)) tell.ready(leaf);
      });
  write_leaves(leaf_writes);
  tell.end();
}

std::vector<nd::NDArray> grad(const nd::NDArray& head, const std::vector<nd::NDArray>& variables,
                              const nd::NDArray& head_grad) {
  const std::shared_ptr<Node> root = checked_root("autograd::grad", head, head_grad);
  std::vector<nd::NDArray> out(variables.size());
  std::vector<Node*> nodes;
  for (const nd::NDArray& v : variables) {
    Node* node = v.autograd_node().get();
    if (!node || !node->leaf) {
      throw ValueError("autograd::grad: " + nd::detail::describe(v) + " is not a variable (attach_grad or mark_variable)");
    }
    nodes.push_back(node);
  }
  auto scope = pause(is_training());
  propagate(root, head, head_grad, false, [&](Node& leaf, const nd::NDArray& g) {
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      // Zero from the variable itself, so that a traced backward (hybridize) can replay it.
      if (nodes[i] == &leaf) out[i] = g.is_none() ? op::invoke1(op::zeros_like_op(), {variables[i].detach()}) : g;
    }
  });
  return out;
}

}  // namespace mx::autograd
