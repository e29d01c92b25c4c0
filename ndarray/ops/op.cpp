#include "ndarray/ops/op.hpp"

#include <map>
#include <mutex>
#include <string_view>

#include "ndarray/autograd_access.hpp"
#include "ndarray/backend.hpp"
#include "ndarray/contiguous.hpp"
#include "ndarray/describe.hpp"
#include "ndarray/ops/trace.hpp"
#include "ndarray/profiler.hpp"

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

void run(const Invocation& inv, Context ctx) {
  const KernelFn kernel = kernel_for(*inv.op, ctx);
  if ((!inv.op->strided_inputs && !all_contiguous(inv.inputs)) || !all_contiguous(inv.outputs)) {
    return run_on_copies(inv, ctx, kernel);
  }
  DeviceScope scope(ctx, inv.op->name);
  kernel(scope.exec(), inv);
}

// Under autograd::record(), when some input carries history and the op has a gradient: the
// invocation becomes the outputs' node, with the arrays detached so that the node does not own
// its own history.
bool should_record(const Invocation& inv) {
  if (!inv.op->gradient || !autograd::is_recording()) return false;
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
  for (nd::NDArray& y : outputs) autograd::NodeAccess::set(y, node);
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

// MXNet's names (the canonical ones its symbol JSON writes) of registered ops that ndgluon names
// otherwise: exact synonyms, with the same inputs, attributes and result (add broadcasts where
// elemwise_add requires equal shapes, which gives the same result on what MXNet accepts).
// Reversed scalar ops (_rminus_scalar, _rdiv_scalar, _rpower_scalar) are not synonyms: their
// direction is in the name, ndgluon's in the attribute "reverse".
const char* mxnet_synonym(std::string_view name) {
  static const std::map<std::string_view, const char*, std::less<>> synonyms{
      {"elemwise_add", "add"},          {"broadcast_add", "add"},
      {"elemwise_sub", "subtract"},     {"broadcast_sub", "subtract"},
      {"elemwise_mul", "multiply"},     {"broadcast_mul", "multiply"},
      {"elemwise_div", "divide"},       {"broadcast_div", "divide"},
      {"_power", "power"},              {"broadcast_power", "power"},
      {"_maximum", "maximum"},          {"broadcast_maximum", "maximum"},
      {"_minimum", "minimum"},          {"broadcast_minimum", "minimum"},
      {"_equal", "equal"},              {"broadcast_equal", "equal"},
      {"_not_equal", "not_equal"},      {"broadcast_not_equal", "not_equal"},
      {"_greater", "greater"},          {"broadcast_greater", "greater"},
      {"_greater_equal", "greater_equal"}, {"broadcast_greater_equal", "greater_equal"},
      {"_lesser", "less"},              {"broadcast_lesser", "less"},
      {"_lesser_equal", "less_equal"},  {"broadcast_lesser_equal", "less_equal"},
      {"_plus_scalar", "_add_scalar"},  {"_minus_scalar", "_subtract_scalar"},
      {"_mul_scalar", "_multiply_scalar"}, {"_div_scalar", "_divide_scalar"},
      {"_lesser_scalar", "_less_scalar"}, {"_lesser_equal_scalar", "_less_equal_scalar"}};
  const auto it = synonyms.find(name);
  return it == synonyms.end() ? nullptr : it->second;
}

}  // namespace

const OpDef* find_op(const std::string& name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.ops.find(name);
  if (it == r.ops.end()) {
    if (const char* synonym = mxnet_synonym(name)) it = r.ops.find(std::string_view(synonym));
  }
  return it == r.ops.end() ? nullptr : it->second;
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
  thread_local std::vector<OutputSpec> specs;
  specs.clear();
  inv.op->infer(inv, specs);
  return specs;
}

}  // namespace

std::vector<nd::NDArray> invoke(const OpDef& op, std::vector<nd::NDArray> inputs, Params params) {
  const profiler::Range range(op.name);
  Invocation inv{&op, params, std::move(inputs), {}};
  const Context ctx = common_context(op.name, inv.inputs);
  const std::vector<OutputSpec>& specs = inferred(inv);
  inv.outputs.reserve(specs.size());
  for (const OutputSpec& spec : specs) inv.outputs.emplace_back(spec.shape, ctx, spec.dtype);
  run(inv, ctx);
  if (TraceSink* sink = trace_sink()) sink->record(inv);
  if (!should_record(inv)) return std::move(inv.outputs);
  std::vector<nd::NDArray> outputs = inv.outputs;
  record(std::move(inv), outputs);
  return outputs;
}

nd::NDArray invoke1(const OpDef& op, std::vector<nd::NDArray> inputs, Params params) {
  return std::move(invoke(op, std::move(inputs), params)[0]);
}

void invoke_into(const OpDef& op, std::vector<nd::NDArray> inputs, std::vector<nd::NDArray> outputs, Params params) {
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
thread_local TraceSink* active_sink = nullptr;
}  // namespace

TraceSink* trace_sink() { return active_sink; }
TraceScope::TraceScope(TraceSink* sink) : previous_(active_sink) { active_sink = sink; }
TraceScope::~TraceScope() { active_sink = previous_; }

Context invocation_context(const Invocation& inv) {
  return common_context(inv.op->name, inv.inputs.empty() ? inv.outputs : inv.inputs);
}

void run_kernel(const Invocation& inv) { run(inv, invocation_context(inv)); }

}  // namespace mx::op
