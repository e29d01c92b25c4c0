#include "ndarray/ops/op.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <new>
#include <string_view>
#include <utility>

#include "ndarray/autograd/autograd_access.hpp"
#include "ndarray/backend/backend.hpp"
#include "ndarray/core/contiguous.hpp"
#include "ndarray/core/describe.hpp"
#include "ndarray/graph/trace.hpp"
#include "ndarray/profiler/profiler.hpp"
#include "context/fast_tls.hpp"

namespace mx::op {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, const OpDef*, std::less<>> ops;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: ops may run during static destruction
  return *r;
}

// Makes the context's device current for the kernel and restores the previous one after.
class DeviceScope {
 public:
  DeviceScope(Context ctx, const char* op) : backend_(backend(ctx)), ec_(backend_.enter(ctx, op, previous_)) {}
  ~DeviceScope() { backend_.leave(previous_); }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
  const ExecContext& exec() const { return ec_; }

 private:
  Backend& backend_;
  int previous_ = -1;
  ExecContext ec_;
};

KernelFn kernel_for(const OpDef& op, Context ctx) {
  const KernelFn kernel = ctx.is_cpu() ? op.cpu : op.gpu;
  if (!kernel) throw Error(std::string(op.name) + ": no kernel for " + ctx.str());
  return kernel;
}

bool all_contiguous(const std::vector<nd::NDArray>& arrays) {
  for (const nd::NDArray& x : arrays) {
    if (!x.is_contiguous()) return false;
  }
  return true;
}

// Kernels read and write contiguous memory. Strided views among the arrays are copied into
// contiguous ones for the kernel, and strided outputs written back into their base after it. An
// output that is also an input (in place) shares that input's copy.
void run_on_copies(const Invocation& inv, Context ctx, KernelFn kernel) {
  Invocation dense = inv;
  if (!inv.op->strided_inputs) {
    for (nd::NDArray& x : dense.inputs) x = nd::detail::dense(x);
  }
  for (std::size_t i = 0; i < inv.outputs.size(); ++i) {
    const nd::NDArray& y = inv.outputs[i];
    if (y.is_contiguous()) continue;
    nd::detail::check_writable(inv.op->name, y);
    dense.outputs[i] = nd::NDArray();
    for (std::size_t j = 0; j < inv.inputs.size(); ++j) {
      if (inv.inputs[j].is(y)) dense.outputs[i] = dense.inputs[j];
    }
    if (dense.outputs[i].is_none()) dense.outputs[i] = nd::detail::dense(y);
  }
  {
    DeviceScope scope(ctx, inv.op->name);
    kernel(scope.exec(), dense);
  }
  for (std::size_t i = 0; i < inv.outputs.size(); ++i) {
    if (!inv.outputs[i].is_contiguous()) nd::detail::write_into(dense.outputs[i], inv.outputs[i]);
  }
}

void run(const Invocation& inv, Context ctx, std::uint32_t settled_inputs = 0) {
  const KernelFn kernel = kernel_for(*inv.op, ctx);
  if ((!inv.op->strided_inputs && !all_contiguous(inv.inputs)) || !all_contiguous(inv.outputs)) {
    return run_on_copies(inv, ctx, kernel);  // the copies are new work: nothing is settled
  }
  DeviceScope scope(ctx, inv.op->name);
  ExecContext ec = scope.exec();
  ec.settled_inputs = settled_inputs;
  kernel(ec, inv);
}

// Under autograd::record(), when some input carries history: the invocation becomes the outputs'
// node, with the arrays detached so that the node does not own its own history. An op without a
// gradient function is recorded too (Note [zero gradients]).
bool should_record(const Invocation& inv) {
  if (!autograd::is_recording()) return false;
  std::vector<const nd::NDArray*> operands;
  for (const nd::NDArray& x : inv.inputs) operands.push_back(&x);
  return autograd::needs_record(operands);
}

void record(Invocation&& recorded, std::vector<nd::NDArray>& outputs) {
  auto inv = std::make_shared<Invocation>(std::move(recorded));
  auto node = std::make_shared<autograd::Node>();
  node->op = inv->op->name;
  for (nd::NDArray& x : inv->inputs) {
    node->inputs.push_back(x.is_none() ? nullptr : x.autograd_node());
    x = x.detach();
  }
  for (nd::NDArray& y : inv->outputs) y = y.detach();
  node->invocation = std::move(inv);
  if (outputs.size() == 1) {
    autograd::NodeAccess::set(outputs[0], std::move(node));
    return;
  }
  // Several outputs: each its own node, so that each gradient reaches its own slot (Note
  // [gradients of several outputs] in ndarray/autograd/autograd.cpp).
  for (std::size_t j = 0; j < outputs.size(); ++j) {
    auto output = std::make_shared<autograd::Node>();
    output->op = node->op;
    output->inputs = {node};
    output->output = static_cast<int>(j);
    autograd::NodeAccess::set(outputs[j], std::move(output));
  }
}

}  // namespace

Workspace::Workspace(const ExecContext& ec, std::size_t bytes)
    : ctx_(ec.ctx), bytes_(bytes), data_(bytes ? backend(ec.ctx).allocate(ec.ctx, bytes) : nullptr) {}

Workspace::~Workspace() {
  if (data_) backend(ctx_).deallocate(ctx_, data_, bytes_);
}

const OpDef& register_op(const OpDef& def) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  const auto [it, inserted] = r.ops.emplace(def.name, &def);
  if (!inserted && it->second != &def) throw Error(std::string("op registry: two ops named ") + def.name);
  return def;
}

namespace {

// Note [MXNet's op names]
// MXNet 1.x names some registered ops otherwise than ndgluon: its broadcasting binary ops are
// broadcast_add, ..., its scalar ops _plus_scalar, ..., and a reversed scalar op (scalar - x) is
// another op, _rminus_scalar, where ndgluon has the attribute reverse=True. One table serves both
// directions. Export writes the first row that matches the op and its reverse attribute,
// dropping that attribute; import reads a name that is no registered op's as the first row that
// gives it, adding reverse=True where the row says so. The rows after an op's first are the other
// names MXNet reads for it (its aliases, and the elemwise_ ops, which take equal shapes only:
// the broadcasting op gives the same result on what they accept). Ops whose MXNet name is their
// own (Convolution, softmax, _copy, ...) or that MXNet lacks (softrelu, gelu and the _backward_
// ops, whose inputs are ndgluon's) have no row unless MXNet has aliases for them. Comparisons
// with the scalar first turn around: 2 > x is x < 2, _lesser_scalar.
enum class Reverse : std::uint8_t { any, no, yes };

struct Spelling {
  const char* ndgluon;
  const char* mxnet;
  Reverse reverse = Reverse::any;
};

const std::vector<Spelling>& spellings() {
  static const std::vector<Spelling> table = [] {
    std::vector<Spelling> t{
        {"add", "broadcast_add"},         {"subtract", "broadcast_sub"},
        {"multiply", "broadcast_mul"},    {"divide", "broadcast_div"},
        {"power", "broadcast_power"},     {"maximum", "broadcast_maximum"},
        {"minimum", "broadcast_minimum"}, {"equal", "broadcast_equal"},
        {"not_equal", "broadcast_not_equal"}, {"greater", "broadcast_greater"},
        {"greater_equal", "broadcast_greater_equal"}, {"less", "broadcast_lesser"},
        {"less_equal", "broadcast_lesser_equal"},
        // Aliases, read only.
        {"add", "elemwise_add"},    {"add", "_plus"},      {"add", "_add"},       {"add", "_Plus"},
        {"add", "broadcast_plus"},
        {"subtract", "elemwise_sub"}, {"subtract", "_minus"}, {"subtract", "_sub"}, {"subtract", "_Minus"},
        {"subtract", "broadcast_minus"},
        {"multiply", "elemwise_mul"}, {"multiply", "_mul"},  {"multiply", "_Mul"},
        {"divide", "elemwise_div"},   {"divide", "_div"},    {"divide", "_Div"},
        {"power", "_power"},          {"power", "_Power"},   {"maximum", "_maximum"}, {"maximum", "_Maximum"},
        {"minimum", "_minimum"},      {"minimum", "_Minimum"}, {"equal", "_equal"},   {"not_equal", "_not_equal"},
        {"greater", "_greater"},      {"greater_equal", "_greater_equal"},            {"less", "_lesser"},
        {"less_equal", "_lesser_equal"},
        {"_copy", "_copy"},           {"_copy", "identity"},
        {"BlockGrad", "BlockGrad"},   {"BlockGrad", "stop_gradient"},
        {"SoftmaxOutput", "SoftmaxOutput"}, {"SoftmaxOutput", "Softmax"},  // MXNet's name before 2016
        {"Flatten", "Flatten"},       {"Flatten", "flatten"},
        {"Reshape", "Reshape"},       {"Reshape", "reshape"},
        {"Concat", "Concat"},         {"Concat", "concat"},
        {"Cast", "Cast"},             {"Cast", "cast"},
        {"SliceChannel", "SliceChannel"}, {"SliceChannel", "split"},
        {"reverse", "reverse"},       {"reverse", "flip"},
        {"sum", "sum"},               {"sum", "sum_axis"},
        {"max", "max"},               {"max", "max_axis"},
        {"min", "min"},               {"min", "min_axis"},
        {"_random_uniform", "_random_uniform"}, {"_random_uniform", "random_uniform"},
        {"_random_normal", "_random_normal"},   {"_random_normal", "random_normal"},
    };
    // The scalar ops: the plain names first (what import reads), then the reversed ones.
    struct Scalar {
      const char *ndgluon, *mxnet, *reversed;
    };
    const Scalar scalars[] = {
        {"_add_scalar", "_plus_scalar", "_plus_scalar"},
        {"_subtract_scalar", "_minus_scalar", "_rminus_scalar"},
        {"_multiply_scalar", "_mul_scalar", "_mul_scalar"},
        {"_divide_scalar", "_div_scalar", "_rdiv_scalar"},
        {"_power_scalar", "_power_scalar", "_rpower_scalar"},
        {"_maximum_scalar", "_maximum_scalar", "_maximum_scalar"},
        {"_minimum_scalar", "_minimum_scalar", "_minimum_scalar"},
        {"_equal_scalar", "_equal_scalar", "_equal_scalar"},
        {"_not_equal_scalar", "_not_equal_scalar", "_not_equal_scalar"},
        {"_greater_scalar", "_greater_scalar", "_lesser_scalar"},
        {"_greater_equal_scalar", "_greater_equal_scalar", "_lesser_equal_scalar"},
        {"_less_scalar", "_lesser_scalar", "_greater_scalar"},
        {"_less_equal_scalar", "_lesser_equal_scalar", "_greater_equal_scalar"}};
    for (const Scalar& s : scalars) t.push_back({s.ndgluon, s.mxnet, Reverse::no});
    for (const Scalar& s : scalars) t.push_back({s.ndgluon, s.reversed, Reverse::yes});
    // MXNet's older names of the scalar ops (CamelCase aliases), read only.
    const Scalar camel[] = {{"_add_scalar", "_PlusScalar", nullptr},      {"_subtract_scalar", "_MinusScalar", "_RMinusScalar"},
                            {"_multiply_scalar", "_MulScalar", nullptr},  {"_divide_scalar", "_DivScalar", "_RDivScalar"},
                            {"_power_scalar", "_PowerScalar", "_RPowerScalar"}, {"_maximum_scalar", "_MaximumScalar", nullptr},
                            {"_minimum_scalar", "_MinimumScalar", nullptr}};
    for (const Scalar& s : camel) {
      t.push_back({s.ndgluon, s.mxnet, Reverse::no});
      if (s.reversed) t.push_back({s.ndgluon, s.reversed, Reverse::yes});
    }
    return t;
  }();
  return table;
}

const Spelling* spelling_of_mxnet(std::string_view name) {
  for (const Spelling& s : spellings()) {
    if (name == s.mxnet) return &s;
  }
  return nullptr;
}

const OpDef* find_registered(Registry& r, std::string_view name) {
  std::lock_guard lock(r.mutex);
  const auto it = r.ops.find(name);
  return it == r.ops.end() ? nullptr : it->second;
}

}  // namespace

const OpDef* find_op(const std::string& name) {
  if (const OpDef* def = find_registered(registry(), name)) return def;
  const Spelling* s = spelling_of_mxnet(name);
  return s && s->reverse != Reverse::yes ? find_registered(registry(), s->ndgluon) : nullptr;
}

const OpDef* find_op(const std::string& name, AttrPairs& attrs) {
  if (const OpDef* def = find_registered(registry(), name)) return def;
  const Spelling* s = spelling_of_mxnet(name);
  if (!s) return nullptr;
  const OpDef* def = find_registered(registry(), s->ndgluon);
  if (def && s->reverse == Reverse::yes) attrs.emplace_back("reverse", "True");
  return def;
}

std::string mxnet_name(const OpDef& op, AttrPairs& attrs) {
  const auto reverse = std::find_if(attrs.begin(), attrs.end(), [](const auto& a) { return a.first == "reverse"; });
  const bool reversed = reverse != attrs.end() && reverse->second == "True";
  for (const Spelling& s : spellings()) {
    if (std::string_view(op.name) != s.ndgluon) continue;
    if (s.reverse == Reverse::any) return s.mxnet;
    if ((s.reverse == Reverse::yes) != reversed) continue;
    if (reverse != attrs.end()) attrs.erase(reverse);
    return s.mxnet;
  }
  return op.name;
}

std::vector<const OpDef*> registered_ops() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<const OpDef*> out;
  for (const auto& [name, def] : r.ops) out.push_back(def);
  return out;
}

Context common_context(const char* op, const std::vector<nd::NDArray>& arrays) {
  const nd::NDArray* first = nullptr;
  for (const nd::NDArray& x : arrays) {
    if (x.is_none()) continue;
    if (!first) first = &x;
    else if (x.context() != first->context()) nd::check_same_context(op, *first, x);
  }
  if (!first) throw ValueError(std::string(op) + ": no input array");
  return first->context();
}

namespace {

// Inference's output list, reused by every invocation of the thread (no allocation per op). Only
// used between inference and the outputs' allocation, before any kernel or nested invocation runs.
std::vector<OutputSpec>& inferred(const Invocation& inv) {
  NDG_FAST_TLS thread_local std::vector<OutputSpec> specs;
  specs.clear();
  inv.op->infer(inv, specs);
  return specs;
}

// Note [reused invocation vectors]
// An eager op's Invocation holds two std::vectors, its inputs and its outputs: two heap
// allocations and two frees per op if each were new, a good part of what a tiny op costs on the
// host. Each thread keeps instead a few emptied vectors with their capacity. invoke takes its
// vectors from there (invoke(op, {a, b}) its inputs' too) and gives back those it does not hand on:
// a recorded invocation keeps its own, and invoke (not invoke1) returns its outputs to the
// caller. Nested invocations (autocast's casts, a gradient's ops) take other vectors, or new ones
// when none is left. Vectors that grew large (a concat of many arrays) are not kept.
struct SpareVectors {
  static constexpr std::size_t kKept = 8;
  static constexpr std::size_t kMaxCapacity = 16;
  std::vector<std::vector<nd::NDArray>> kept;
};

// The thread's SpareVectors, made at its first op. Plain data, so that reading it costs one
// thread-local lookup and no initialisation check; SpareVectorsOwner frees it at the thread's end
// (for the main thread, before static destruction, during which arrays may still be freed and ops
// run) and sets `gone`: from then on vectors are neither kept nor taken.
struct SpareVectorsState {
  SpareVectors* vectors = nullptr;
  bool gone = false;
};
NDG_FAST_TLS thread_local SpareVectorsState spare_vectors;

struct SpareVectorsOwner {
  ~SpareVectorsOwner() {
    delete spare_vectors.vectors;
    spare_vectors = {nullptr, true};
  }
};

SpareVectors* thread_spare_vectors() {
  SpareVectorsState& state = spare_vectors;
  if (state.vectors || state.gone) return state.vectors;
  thread_local SpareVectorsOwner owner;  // registers the thread's cleanup
  try {
    auto made = std::make_unique<SpareVectors>();
    made->kept.reserve(SpareVectors::kKept);  // so that keeping a vector never allocates
    state.vectors = made.release();
  } catch (const std::bad_alloc&) {  // no memory: nothing is kept (the op itself went through)
  }
  return state.vectors;
}

std::vector<nd::NDArray> take_vector() {
  SpareVectors* spare = spare_vectors.vectors;
  if (!spare || spare->kept.empty()) return {};
  std::vector<nd::NDArray> v = std::move(spare->kept.back());
  spare->kept.pop_back();
  return v;
}

void give_vector(std::vector<nd::NDArray>&& v) {
  v.clear();  // may free storage and autograd nodes: done before the list is touched
  if (v.capacity() == 0 || v.capacity() > SpareVectors::kMaxCapacity) return;
  SpareVectors* spare = thread_spare_vectors();
  if (spare && spare->kept.size() < SpareVectors::kKept) spare->kept.push_back(std::move(v));
}

}  // namespace

namespace {

NDG_FAST_TLS thread_local const Invocation* targets_inv = nullptr;
thread_local std::vector<nd::NDArray> targets;
thread_local std::function<void(std::size_t)> targets_written;
thread_local std::vector<char> targets_early;
thread_local std::vector<nd::NDArray> reuse_offer;  // empty: no offer
// Whether reuse_offer may hold an offer: a plain bool, read by every invoke at the cost of one
// thread-local lookup, where reuse_offer's own (a vector) costs its initialisation check too.
NDG_FAST_TLS thread_local bool reuse_offered = false;

// The array OutputReuse offers, taken (so that nested invocations, such as autocast's casts, and
// later ones do not see it).
std::vector<nd::NDArray> take_reuse_offer() {
  if (!reuse_offered) return {};
  reuse_offered = false;
  return std::exchange(reuse_offer, {});
}

bool reusable(const nd::NDArray& out, const OutputSpec& spec, Context ctx, const std::vector<nd::NDArray>& inputs) {
  if (out.is_none() || out.shape() != spec.shape || out.dtype() != spec.dtype || out.context() != ctx ||
      !out.is_contiguous()) {
    return false;
  }
  for (const nd::NDArray& x : inputs) {
    if (!x.is_none() && x.shares_memory(out)) return false;
  }
  return true;
}

}  // namespace

GradientTargets::GradientTargets(const Invocation* inv, std::vector<nd::NDArray> t,
                                 std::function<void(std::size_t)> written, std::vector<char> early)
    : previous_inv_(std::exchange(targets_inv, inv)), previous_targets_(std::exchange(targets, std::move(t))),
      previous_written_(std::exchange(targets_written, std::move(written))),
      previous_early_(std::exchange(targets_early, std::move(early))) {}
GradientTargets::~GradientTargets() {
  targets_inv = previous_inv_;
  targets = std::move(previous_targets_);
  targets_written = std::move(previous_written_);
  targets_early = std::move(previous_early_);
}

bool gradient_wanted_early(const Invocation& inv, std::size_t input) {
  return targets_inv == &inv && input < targets_early.size() && targets_early[input] && input < targets.size() &&
         !targets[input].is_none();
}

void gradient_written(const Invocation& inv, std::size_t input, const nd::NDArray& result) {
  if (targets_inv != &inv || input >= targets.size() || !targets_written) return;
  if (!targets[input].is_none() && result.is(targets[input])) targets_written(input);
}

nd::NDArray gradient_target(const Invocation& inv, std::size_t input) {
  if (targets_inv != &inv || input >= targets.size()) return {};
  return targets[input];
}

OutputReuse::OutputReuse(std::vector<nd::NDArray> outs) {
  reuse_offer = std::move(outs);
  reuse_offered = true;
}
OutputReuse::~OutputReuse() {
  reuse_offer.clear();
  reuse_offered = false;
}

namespace {

// What invoke does once inv holds the op, its Params and the inputs: autocast, checks, inference,
// the outputs (reused as OutputReuse offers, else allocated; into inv.outputs, which is empty),
// the kernel, the trace, and under recording the outputs' node (inv then goes to the node, and
// inv.outputs is given the recorded outputs).
void invoke_in(Invocation& inv) {
  const OpDef& op = *inv.op;
  const std::vector<nd::NDArray> reuse = take_reuse_offer();
  autocast_inputs(op, inv.inputs);
  const Context ctx = common_context(op.name, inv.inputs);
  const std::vector<OutputSpec>& specs = inferred(inv);
  inv.outputs.reserve(specs.size());
  const bool offered = reuse.size() == specs.size();
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (offered && reusable(reuse[i], specs[i], ctx, inv.inputs)) inv.outputs.push_back(reuse[i]);
    else inv.outputs.emplace_back(specs[i].shape, ctx, specs[i].dtype);
  }
  run(inv, ctx);
  if (TraceSink* sink = trace_sink()) sink->record(inv);
  if (!should_record(inv)) return;
  std::vector<nd::NDArray> outputs = inv.outputs;
  record(std::move(inv), outputs);
  inv.outputs = std::move(outputs);
}

}  // namespace

std::vector<nd::NDArray> invoke(const OpDef& op, std::vector<nd::NDArray> inputs, const Params& params) {
  const profiler::Range range(op.name);
  Invocation inv{&op, params, std::move(inputs), take_vector()};
  invoke_in(inv);
  give_vector(std::move(inv.inputs));
  return std::move(inv.outputs);
}

nd::NDArray invoke1(const OpDef& op, std::vector<nd::NDArray> inputs, const Params& params) {
  const profiler::Range range(op.name);
  Invocation inv{&op, params, std::move(inputs), take_vector()};
  invoke_in(inv);
  nd::NDArray out = std::move(inv.outputs[0]);
  give_vector(std::move(inv.inputs));
  give_vector(std::move(inv.outputs));
  return out;
}

std::vector<nd::NDArray> invoke(const OpDef& op, std::initializer_list<nd::NDArray> inputs, const Params& params) {
  std::vector<nd::NDArray> v = take_vector();
  v.assign(inputs);
  return invoke(op, std::move(v), params);
}

nd::NDArray invoke1(const OpDef& op, std::initializer_list<nd::NDArray> inputs, const Params& params) {
  std::vector<nd::NDArray> v = take_vector();
  v.assign(inputs);
  return invoke1(op, std::move(v), params);
}

nd::NDArray invoke1(const OpDef& op, const nd::NDArray& a, const nd::NDArray& b, const Params& params) {
  std::vector<nd::NDArray> v = take_vector();
  v.push_back(a);
  v.push_back(b);
  return invoke1(op, std::move(v), params);
}

void invoke_into(const OpDef& op, std::vector<nd::NDArray> inputs, std::vector<nd::NDArray> outputs,
                 const Params& params) {
  const profiler::Range range(op.name);
  Invocation inv{&op, params, std::move(inputs), std::move(outputs)};
  const Context ctx = invocation_context(inv);
  const std::vector<OutputSpec>& specs = inferred(inv);
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const nd::NDArray& out = inv.outputs.at(i);
    nd::check_not_none(op.name, out);
    if (out.context() != ctx) nd::check_same_context(op.name, inv.inputs.empty() ? inv.outputs.front() : inv.inputs.front(), out);
    if (out.shape() != specs[i].shape || out.dtype() != specs[i].dtype) {
      throw ShapeError(std::string(op.name) + ": output " + nd::describe(out) + " should be " +
                       specs[i].shape.tuple_str() + " " + dtype_name(specs[i].dtype));
    }
    nd::detail::check_writable(op.name, out);
  }
  run(inv, ctx);
  if (TraceSink* sink = trace_sink()) sink->record(inv);
}

namespace {
NDG_FAST_TLS thread_local TraceSink* active_sink = nullptr;
}  // namespace

TraceSink* trace_sink() { return active_sink; }
TraceScope::TraceScope(TraceSink* sink) : previous_(active_sink) { active_sink = sink; }
TraceScope::~TraceScope() { active_sink = previous_; }

Context invocation_context(const Invocation& inv) {
  return common_context(inv.op->name, inv.inputs.empty() ? inv.outputs : inv.inputs);
}

void run_kernel(const Invocation& inv, std::uint32_t settled_inputs) {
  run(inv, invocation_context(inv), settled_inputs);
}

}  // namespace mx::op
