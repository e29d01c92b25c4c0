#pragma once
// The op layer: every registered op is one OpDef (name, shape/dtype inference, a kernel per device,
// gradient, attributes), as an NNVM op with FInferShape / FCompute<cpu|gpu> / FGradient.
//
//   invoke(op, {a, b}, params)  checks that the operands share a context, infers the outputs,
//                               allocates them, resolves the device once (ExecContext) and runs the
//                               context's kernel; under autograd::record() it records the
//                               Invocation, whose gradient is the OpDef's.
//
// An Invocation (op, params, inputs, outputs) is what autograd keeps per recorded op, and what a
// traced graph replays: run_kernel(inv) runs it again without the front end. Internal header.
//
// Kernels see contiguous arrays only: a strided view among the inputs is copied into contiguous
// memory first, and a strided output (invoke_into on a view) is computed into a contiguous copy
// that is then written into the view's elements of the base.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ndarray/core/array.hpp"

namespace mx::op {

// An op's attributes: the op's own trivially copyable struct, kept inline (no allocation) and read
// back with as<P>(). The type is checked on every read. A copy copies the bytes written only (most
// ops have none or a few), not the whole capacity: every eager op copies its Params.
class Params {
 public:
  static constexpr std::size_t kCapacity = 128;  // Convolution's attributes are the largest
  Params() = default;
  template <class P>
  Params(const P& p) : type_(type_id<P>()), size_(sizeof(P)) {  // NOLINT: implicit, so that invoke(op, {x}, P{...}) reads well
    static_assert(std::is_trivially_copyable_v<P> && sizeof(P) <= kCapacity && alignof(P) <= 8);
    std::memcpy(bytes_, &p, sizeof(P));
  }
  Params(const Params& other) : type_(other.type_), size_(other.size_) { std::memcpy(bytes_, other.bytes_, size_); }
  Params& operator=(const Params& other) {
    type_ = other.type_;
    size_ = other.size_;
    std::memmove(bytes_, other.bytes_, size_);  // memmove: self-assignment is allowed
    return *this;
  }
  template <class P>
  const P& as() const {
    if (type_ != type_id<P>()) throw Error("op::Params: read as another type than it was written");
    return *std::launder(reinterpret_cast<const P*>(bytes_));
  }

 private:
  template <class P>
  static const void* type_id() {
    static const char id = 0;
    return &id;
  }
  const void* type_ = type_id<void>();
  std::size_t size_ = 0;                    // the bytes written (sizeof(P)); the rest is never read
  alignas(8) unsigned char bytes_[kCapacity];
};

// Where an op runs, resolved once per invocation: the context, and for gpu(i) its stream (as
// void*, so that no CUDA type leaks out of cuda/) with that device made current.
struct ExecContext {
  Context ctx;
  void* stream = nullptr;
  int multiprocessors = 0;
  // Bit i: input i is written by no work queued ahead of this kernel that may still be running
  // (a captured graph's parameters, which no step of the graph writes), so that a GPU kernel
  // launched while the kernel ahead of it runs (programmatic dependent launch) may read it before
  // waiting for that kernel. 0 for eager calls: the work ahead may be an update of any array.
  std::uint32_t settled_inputs = 0;
};

// Scratch memory from the context's allocator for the span of a kernel; freed when it goes out of
// scope (stream-ordered on a GPU: later work may reuse it, earlier work finishes first).
class Workspace {
 public:
  Workspace(const ExecContext& ec, std::size_t bytes);
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  void* data() const { return data_; }
  template <class T> T* as() const { return static_cast<T*>(data_); }

 private:
  Context ctx_;
  std::size_t bytes_;
  void* data_;
};

struct OpDef;

// One call of an op: what autograd records and a graph replays.
struct Invocation {
  const OpDef* op = nullptr;
  Params params;
  std::vector<nd::NDArray> inputs;   // a none array for an absent optional input (no bias)
  std::vector<nd::NDArray> outputs;
};

// Output i's shape and dtype, as inference gives them.
struct OutputSpec {
  Shape shape;
  DType dtype = DType::float32;
};

using InferFn = void (*)(const Invocation& inv, std::vector<OutputSpec>& outputs);
using KernelFn = void (*)(const ExecContext& ec, const Invocation& inv);
// The inputs' gradients from the outputs' (one per output; a none array where no gradient
// flows), as NDArrays computed with other registered ops. A none result: no gradient.
using GradientFn = std::vector<nd::NDArray> (*)(const Invocation& inv, const std::vector<nd::NDArray>& out_grads);
// The attributes as MXNet's symbol JSON writes them ("attrs": {"axis": "-1"}).
using AttrsFn = std::vector<std::pair<std::string, std::string>> (*)(const Params& params);
// The op's Params from MXNet's symbol-JSON attributes (the inverse of attrs), with MXNet's
// defaults for absent ones; mx::ValueError naming the op, the attribute and the text for a bad
// value or an unknown attribute. Null for an op without attributes (its Params are empty).
using ModeFn = bool (*)(Params& params, bool training);
using ParseAttrsFn = Params (*)(const std::vector<std::pair<std::string, std::string>>& attrs);

struct OpDef {
  const char* name;       // MXNet's op name, as in symbol JSON
  InferFn infer;          // throws mx::ShapeError / DTypeError / ValueError naming the op
  KernelFn cpu;           // the reference loop
  KernelFn gpu;           // the CUDA launch; null in a CPU-only build
  GradientFn gradient;    // null: a zero gradient (Note [zero gradients])
  AttrsFn attrs = nullptr;
  ParseAttrsFn parse_attrs = nullptr;  // see ndarray/ops/attrs.hpp
  // The kernels read strided inputs themselves (dot hands a transposed view to GEMM as is); by
  // default a strided input is made contiguous first.
  bool strided_inputs = false;
  // Ops whose work depends on training or prediction (BatchNorm, Dropout) read the mode when their
  // front end runs; a graph replays them in the mode of the replay through this: it sets the mode
  // in params and returns false where the op is then the identity (input 0 is its output).
  ModeFn mode = nullptr;
  // The inputs the op takes, absent optional ones (a bias under no_bias) passed as none arrays;
  // MXNet's JSON leaves those out, and a graph puts them back. 0: as many as a node gives.
  std::uint32_t arity = 0;
  // Draws from the context's generator each time it runs: a captured graph (which would replay
  // one draw) runs such ops itself instead.
  bool random = false;
  // Sets which inputs' gradients the op's gradient computes (needed[i]: input i has a recorded
  // history), where the attributes say so (FullyConnected's and Convolution's data_grad and
  // weight_grad). A graph run under record() calls it, so that a replayed op computes the
  // gradients its replay needs, not those its trace needed. nullptr: the gradient computes all.
  void (*input_grads)(Params& params, const std::vector<bool>& needed) = nullptr;
  // Bit i: the kernel also writes input i in place (BatchNorm's running statistics).
  std::uint32_t written_inputs = 0;
  // Draws from the generator only with some attributes (RNN: dropout between layers in training),
  // as `random` says for every call; null: never. draws_random(inv) asks both.
  bool (*random_with)(const Params& params) = nullptr;
};

// Whether inv's op draws from the generator when it runs (OpDef::random, OpDef::random_with).
inline bool draws_random(const Invocation& inv) {
  return inv.op->random || (inv.op->random_with && inv.op->random_with(inv.params));
}

// Note [zero gradients]
// An op without a gradient function (comparisons, sign, argmax, rounding: MXNet registers them
// with MakeZeroGradNodes) is still recorded under autograd::record(), as every op with an input
// that has a history is: backward reaches its inputs with a zero gradient. Zero is not computed:
// autograd carries it as a none array, a sum with a real gradient is that gradient, and a "write"
// variable reached through zero gradients alone gets its buffer filled with 0, as MXNet writes
// zeros_like. So sign(x).sum() gives x.grad() = 0, and sign(x) * x + x the gradient of the rest.

using AttrPairs = std::vector<std::pair<std::string, std::string>>;

// Registers an op at static initialisation (ops are defined with NDG_REGISTER_OP in their family
// file) and finds one by name: its own, or a name MXNet 1.x gives the same op (the table in
// op.cpp: "broadcast_add" and "elemwise_add" for add, "_plus_scalar" for _add_scalar, "identity"
// for _copy); nullptr if unknown. A name that also stands for attributes (_rminus_scalar is
// _subtract_scalar with reverse=True) is found only by the second form, which adds them to attrs.
const OpDef& register_op(const OpDef& def);
const OpDef* find_op(const std::string& name);
const OpDef* find_op(const std::string& name, AttrPairs& attrs);
std::vector<const OpDef*> registered_ops();

// The name MXNet 1.x writes for op with these attributes (op.attrs'), with those the name stands
// for removed from attrs: broadcast_add for add; _rminus_scalar for _subtract_scalar with
// reverse=True, without "reverse". An op that MXNet names the same or lacks keeps its name.
// find_op(mxnet_name(op, attrs), attrs) gives op and its attributes back.
std::string mxnet_name(const OpDef& op, AttrPairs& attrs);

// Runs op on inputs, allocating the outputs that inference describes.
// Under amp::autocast, rewrites the dtypes of inputs by op's cast policy (ndarray/amp/amp.hpp), through
// recorded Cast ops; nothing otherwise. invoke() calls it first.
void autocast_inputs(const OpDef& op, std::vector<nd::NDArray>& inputs);

std::vector<nd::NDArray> invoke(const OpDef& op, std::vector<nd::NDArray> inputs, const Params& params = {});
nd::NDArray invoke1(const OpDef& op, std::vector<nd::NDArray> inputs, const Params& params = {});
// The same for a braced list of inputs, invoke(op, {a, b}) (what most front ends write): the
// inputs go into a vector the thread keeps for reuse, not a new one (Note [reused invocation vectors]).
std::vector<nd::NDArray> invoke(const OpDef& op, std::initializer_list<nd::NDArray> inputs, const Params& params = {});
nd::NDArray invoke1(const OpDef& op, std::initializer_list<nd::NDArray> inputs, const Params& params = {});
// Two inputs (the binary ops): each copied once into the reused vector, where a braced list's
// elements are copies that are copied again.
nd::NDArray invoke1(const OpDef& op, const nd::NDArray& a, const nd::NDArray& b, const Params& params = {});
// Runs op writing into existing outputs (in-place updates such as sgd_update, or out=): their
// shapes and dtypes must be those inference gives. An op without inputs (fill, arange, random
// draws) runs on its outputs' context.
void invoke_into(const OpDef& op, std::vector<nd::NDArray> inputs, std::vector<nd::NDArray> outputs,
                 const Params& params = {});

// The kernel of inv's context on inv's arrays, without inference or recording (graph replay);
// settled_inputs as in ExecContext.
void run_kernel(const Invocation& inv, std::uint32_t settled_inputs = 0);

// --- gradients written where they belong -------------------------------------------------------
//
// backward() offers a gradient function, for each input that is a "write" variable getting its
// gradient from this invocation alone, the variable's own gradient buffer. A gradient computed
// there (gradient_into) spares backward the copy into the buffer: for a 4096x4096 float32 weight,
// 128 MB of memory traffic per step.

// The buffer autograd offers for input i's gradient of inv, or a none array.
nd::NDArray gradient_target(const Invocation& inv, std::size_t input);

// Whether input i's gradient should come before inv's other gradients: backward offered its buffer
// and a listener of the variable asked for it early (autograd::GradientListener).
bool gradient_wanted_early(const Invocation& inv, std::size_t input);

// Set by autograd around one gradient call: targets[i] for input i of inv (none: no offer),
// written(i), called by gradient_written (may be empty), and early[i] (gradient_wanted_early).
class GradientTargets {
 public:
  GradientTargets(const Invocation* inv, std::vector<nd::NDArray> targets,
                  std::function<void(std::size_t)> written = {}, std::vector<char> early = {});
  ~GradientTargets();
  GradientTargets(const GradientTargets&) = delete;
  GradientTargets& operator=(const GradientTargets&) = delete;

 private:
  const Invocation* previous_inv_;
  std::vector<nd::NDArray> previous_targets_;
  std::function<void(std::size_t)> previous_written_;
  std::vector<char> previous_early_;
};

// For gradient functions, right after input i's gradient `result` is queued: when it went into
// the buffer backward offered, tells backward that this variable's gradient is ready (listeners
// may start its all-reduce while the op's other gradients are computed). gradient_into calls it.
void gradient_written(const Invocation& inv, std::size_t input, const nd::NDArray& result);

// While alive, the next invoke() on this thread computes its outputs into `outs` (MXNet's out=),
// one per output (a none array: allocated as usual), where each given one has the output's shape,
// dtype and context and shares no input's memory; otherwise it allocates as usual. Either way the
// offer is used up by that invoke.
class OutputReuse {
 public:
  explicit OutputReuse(const nd::NDArray& out) : OutputReuse(std::vector<nd::NDArray>{out}) {}
  explicit OutputReuse(std::vector<nd::NDArray> outs);
  ~OutputReuse();
  OutputReuse(const OutputReuse&) = delete;
  OutputReuse& operator=(const OutputReuse&) = delete;
};

// Input i's gradient from make() (one op), computed into autograd's buffer for it when offered.
template <class Make>
nd::NDArray gradient_into(const Invocation& inv, std::size_t input, Make&& make) {
  const nd::NDArray target = gradient_target(inv, input);
  if (target.is_none()) return make();
  nd::NDArray result;
  {
    const OutputReuse reuse(target);
    result = make();
  }
  gradient_written(inv, input, result);
  return result;
}

// The one context of an invocation's arrays (the first non-none input's); mx::ContextMismatch
// naming the op when two differ.
Context common_context(const char* op, const std::vector<nd::NDArray>& arrays);
// The context an invocation runs on: its inputs', or its outputs' when it has no inputs.
Context invocation_context(const Invocation& inv);

}  // namespace mx::op

// The GPU launch of a kernel, or nullptr in a CPU-only build: lets an op's definition name both.
#ifdef NDG_HAVE_CUDA
#define NDG_GPU_KERNEL(fn) (&(fn))
#else
#define NDG_GPU_KERNEL(fn) nullptr
#endif
