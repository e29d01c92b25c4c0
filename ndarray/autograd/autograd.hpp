#pragma once
// mx::autograd: records the ops run inside autograd::record() and computes gradients by
// backward(), as mx.autograd does.
//
//   auto x = nd::array({1, 2, 3});
//   x.attach_grad();
//   { auto scope = mx::autograd::record(); auto y = (x * x).sum(); y.backward(); }
//   x.grad();  // [2, 4, 6]
//
// Each recorded op stores a Node: the nodes of its inputs and a function from the output's
// gradient to the inputs' gradients. Ops of the op registry (ndarray/ops/op.hpp) record their
// invocation (op, attributes, inputs, outputs), and backward calls the op's gradient on it.
// Backward runs on the contexts of the forward pass.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ndarray/core/array.hpp"

namespace mx::op {
struct Invocation;
}

namespace mx::autograd {

class GradientListener;

struct Node {
  const char* op = "";
  // Op nodes: the inputs' nodes (null where no gradient is needed), and either the recorded
  // invocation of a registered op or a backward function.
  std::vector<std::shared_ptr<Node>> inputs;
  std::shared_ptr<const op::Invocation> invocation;
  std::function<std::vector<nd::NDArray>(const nd::NDArray& grad)> backward;
  // An output of an op of several outputs (SliceChannel, topk's values and indices): the node of
  // output `output` of inputs[0]'s invocation, which collects that output's gradient (Note
  // [gradients of several outputs]). -1 for every other node.
  int output = -1;
  // Leaves (attach_grad): the gradient buffer and whether gradients add up ("add") or overwrite.
  bool leaf = false;
  bool accumulate = false;
  nd::NDArray grad;
  // Told by backward() when `grad` holds its pass's gradient (add_gradient_listener), with a tag.
  std::vector<std::pair<std::weak_ptr<GradientListener>, std::int64_t>> listeners;
};

// Scope guards, as `with autograd.record():` / `with autograd.pause():`. record() also sets
// training mode (train_mode=true), pause() leaves it as it is.
class Scope {
 public:
  Scope(bool recording, bool training);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  bool previous_recording_, previous_training_;
};

[[nodiscard]] inline Scope record(bool train_mode = true) { return Scope(true, train_mode); }
[[nodiscard]] Scope pause(bool train_mode = false);
[[nodiscard]] Scope train_mode();
[[nodiscard]] Scope predict_mode();

bool is_recording();
bool is_training();

// Marks x as a variable whose gradient goes into `grad` (same shape, dtype and context: else
// mx::ContextMismatch or mx::ShapeError).
// grad_req "write" overwrites at each backward, "add" accumulates.
void mark_variable(nd::NDArray& x, const nd::NDArray& grad, const std::string& grad_req = "write");

// Gradient of `head` (default: ones) with respect to every variable it was computed from. A
// head_grad on another context than head throws mx::ContextMismatch, of another dtype
// mx::DTypeError, of another shape mx::ShapeError, each naming both arrays, before any gradient
// is written.
void backward(const nd::NDArray& head, const nd::NDArray& head_grad = nd::NDArray());

// Gradient listeners, as the hooks DDP puts on parameters (a Trainer's gradient buckets use them
// to start each bucket's all-reduce during backward). Inside backward(), gradient_ready(tag) is
// called once a variable's gradient buffer holds this pass's gradient: the work that computes it
// is queued on the variable's context, and the queue has not yet gone on to later gradients of
// the same op where the op computes the variable's first (Convolution computes the weight's and
// bias's gradients before the data's; Dense where a listener wants them early, below, and else the
// data's first). backward_end() is called once per listener
// told anything, when the backward() is about to return, also after an error. Not called by
// autograd::grad (which writes no buffer), nor while a graph is traced.
// A listener whose work on a gradient takes none of the GPU's SMs (a sum on the copy engines) asks,
// with wants_gradient_early(), for the gradient before the op's others: its work then runs beside
// the op's remaining products (op::gradient_wanted_early).
class GradientListener {
 public:
  virtual ~GradientListener() = default;
  virtual void gradient_ready(std::int64_t tag) = 0;
  virtual void backward_end() = 0;
  virtual bool wants_gradient_early() const { return false; }
};
// Adds a listener to the variable x (attach_grad or mark_variable; else mx::ValueError naming x),
// or gives it a new tag if it is there already. The variable holds it weakly: a listener
// destroyed is dropped. A variable marked again (attach_grad anew) starts with none.
void add_gradient_listener(const nd::NDArray& x, const std::shared_ptr<GradientListener>& listener, std::int64_t tag);

// The gradients of `head` (default head gradient: ones) with respect to `variables` (arrays marked
// by attach_grad or mark_variable), returned instead of written into their buffers, as
// mx.autograd.grad; a none array for a variable head does not depend on, zeros for one it reaches
// only through ops without a gradient (Note [zero gradients] in ndarray/ops/op.hpp). Nothing is
// recorded. backward() fills a "write" variable reached so with 0 and leaves an "add" one as is.
std::vector<nd::NDArray> grad(const nd::NDArray& head, const std::vector<nd::NDArray>& variables,
                              const nd::NDArray& head_grad = nd::NDArray());

// For op front ends: when recording and some input needs a gradient, attaches to `out` a node
// whose backward maps out's gradient to one gradient per input (an empty NDArray for none: that
// input is not reached through this node, unlike a registered op's none, which is zero).
using BackwardFn = std::function<std::vector<nd::NDArray>(const nd::NDArray& grad)>;
void record_op(const char* op, nd::NDArray& out, const std::vector<const nd::NDArray*>& inputs, BackwardFn backward);
// Whether record_op would record for these inputs (lets ops skip saving tensors otherwise).
bool needs_record(const std::vector<const nd::NDArray*>& inputs);
// For a BackwardFn while backward() runs it: per input, the gradient buffer of the "write"
// variable that gets its gradient through this node alone (a none array where there is none);
// empty under grad() and everywhere else. A BackwardFn that computes input i's gradient into
// that buffer and returns it spares backward the copy (as op::gradient_into does for ops).
const std::vector<nd::NDArray>& offered_gradient_buffers();

}  // namespace mx::autograd
