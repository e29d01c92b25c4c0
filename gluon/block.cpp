#include "gluon/block.hpp"

#include "ndarray/amp/amp.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

#include "context/device.hpp"
#include "context/file.hpp"
#include "gluon/parameter_file.hpp"
#include "ndarray/amp/amp.hpp"
#include "ndarray/autograd/autograd.hpp"
#include "ndarray/core/describe.hpp"
#include "ndarray/graph/executor.hpp"
#include "ndarray/graph/graph.hpp"
#include "ndarray/graph/trace.hpp"
#include "ndarray/io/ndarray_file.hpp"
#include "ndarray/ops/random.hpp"
#include "ndarray/profiler/profiler.hpp"

namespace mx::gluon {

// hybridize()'s state. A signature is what a graph is traced and planned for: the input's shape,
// dtype and context, the mode, whether autograd records (a forward whose backward will run keeps
// the values its gradients read), whether the input needs its gradient, and amp's autocast dtype
// (its casts are part of the graph).
struct Signature {
  Shape shape;
  DType dtype;
  Context ctx;
  bool training, recording, input_grad;
  std::optional<DType> autocast;
  bool operator==(const Signature&) const = default;
};

// A forward executor and the backward executor that reads its values: in use from a recorded
// forward until its backward has run (MXNet's CachedOp state).
struct TrainingPair {
  std::unique_ptr<graph::Executor> forward, backward;
  // The backward that computes the parameters' gradients into the buffers backward() offers
  // (autograd::offered_gradient_buffers), planned for `into`, the heads' buffers it was given.
  std::unique_ptr<graph::Executor> backward_into;
  std::vector<nd::NDArray> into;
};

// One traced signature: the graph, the parameters it reads (its variables other than "data"), and
// its executors.
struct CachedGraph {
  std::shared_ptr<const graph::Graph> graph;
  std::vector<Parameter> params;
  std::vector<std::string> param_names;
  // Not recording: executors that hand out their heads without a copy (at most two, each used
  // while nobody holds its last result: y = net(x) holds the last y while it makes the next), and
  // one that copies them, for when both are held or the plan is large.
  std::vector<std::unique_ptr<graph::Executor>> direct;
  std::unique_ptr<graph::Executor> copying;
  // Recording: the gradient graph for wrt ("data" when the input needs it, then the parameters
  // with gradients), and a pair per forward whose backward is pending.
  graph::GradientGraph gradient;
  std::vector<std::string> wrt;
  std::vector<int> wrt_param;  // per wrt entry: its index in params, -1 for "data"
  std::vector<bool> in_wrt;    // per parameter: whether wrt holds it (its grad_req at the trace)
  // The backward graph's variables other than "head_grad", and where each one's array comes from:
  // the forward's input (param -1, no entry), a value the forward keeps (entry), or params[param].
  struct BackwardSource {
    std::optional<graph::Entry> entry;
    int param = -1;
  };
  std::vector<std::string> backward_names;
  std::vector<BackwardSource> backward_sources;
  std::vector<std::shared_ptr<TrainingPair>> pairs;
};

struct Block::Core {
  std::string prefix;
  std::map<std::string, int> scope_counters;  // kind -> blocks named in this block's scope so far
  bool hybridized = false, static_shape = false;
  // The traced signatures' graphs, the most recently used last; at most kMaxGraphs (each holds its
  // planned buffers), the least recently used dropped first.
  static constexpr std::size_t kMaxGraphs = 64;
  std::vector<std::pair<Signature, std::shared_ptr<CachedGraph>>> graphs;
  std::shared_ptr<const graph::Graph> last_graph;
  std::vector<std::pair<std::string, Parameter>> params;                 // short name -> parameter
  std::vector<std::pair<std::string, std::shared_ptr<Block>>> children;  // structural name -> child
  // short name -> the structural key, where it is not the short name (set_structural_key)
  std::map<std::string, std::string> structural_keys;
  // Guards graphs, last_graph and the cached graphs' executors: threads that drive several GPUs
  // may call one hybridized block at once (each context has its own graph).
  std::mutex mutex;
};

namespace {

// MXNet 1.x naming: a per-kind counter gives dense0_, dense1_, ...
std::string next_prefix(const std::string& kind) {
  static std::mutex mutex;
  static std::map<std::string, int> counters;
  std::lock_guard lock(mutex);
  return kind + std::to_string(counters[kind]++) + "_";
}

}  // namespace

thread_local Block::Core* Block::current_scope_ = nullptr;

Block::Block(const std::string& kind, const std::string& prefix) : core_(std::make_shared<Core>()) {
  if (Core* scope = current_scope_) {
    core_->prefix = scope->prefix + (prefix.empty() ? kind + std::to_string(scope->scope_counters[kind]++) + "_" : prefix);
  } else {
    core_->prefix = prefix.empty() ? next_prefix(kind) : prefix;
  }
}

Block::NameScope::NameScope(Core* core) : previous_(current_scope_) { current_scope_ = core; }
Block::NameScope::~NameScope() { current_scope_ = previous_; }
Block::NameScope Block::name_scope() const { return NameScope(core_.get()); }

const std::string& Block::prefix() const { return core_->prefix; }

namespace {

// The type's name as written in C++ ("mx::gluon::nn::Conv2D").
std::string demangled(const std::type_info& type) {
  int status = 0;
  char* name = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  const std::string out = status == 0 && name ? name : type.name();
  std::free(name);
  return out;
}

constexpr const char* kInLayer = " [in layer ";
// The error a layer's own message already names it in (rethrown as the same object): the blocks
// around that layer pass it on unchanged.
// (Its address and its message's: an address alone could be a later error's.)
thread_local std::pair<const void*, const char*> named_error{nullptr, nullptr};

// Rethrows the mx::Error being handled as the same type, its message naming the block `name` and
// its type. Only the innermost block names itself: an error that names a layer already (tagged
// by an inner block, or a layer's own message: "Conv2D 'resnetv10_conv0': ...") goes on as is.
[[noreturn]] void rethrow_naming(const std::string& name, const std::string& type) {
  try {
    throw;
  } catch (const Error& e) {
    if (named_error == std::pair<const void*, const char*>{&e, e.what()} || std::strstr(e.what(), kInLayer) != nullptr) {
      throw;
    }
    if (std::strstr(e.what(), ("'" + name + "'").c_str()) != nullptr) {
      named_error = {&e, e.what()};
      throw;
    }
    const std::string message = e.what() + std::string(kInLayer) + name + ", a " + type + "]";
    // The same type again; a type of the caller's own (derived from one of these) goes on as is.
    const std::type_info& t = typeid(e);
    if (t == typeid(ShapeError)) throw ShapeError(message);
    if (t == typeid(DTypeError)) throw DTypeError(message);
    if (t == typeid(ValueError)) throw ValueError(message);
    if (t == typeid(IndexError)) throw IndexError(message);
    if (t == typeid(ContextMismatch)) throw ContextMismatch(message);
    if (t == typeid(FileError)) throw FileError(message);
    if (t == typeid(DeviceError)) throw DeviceError(message);
    if (t == typeid(OutOfMemory)) throw OutOfMemory(message);
    if (t == typeid(NonFiniteError)) throw NonFiniteError(message);
    if (t == typeid(Error)) throw Error(message);
    throw;
  }
}

}  // namespace

nd::NDArray Block::operator()(const nd::NDArray& x) {
  try {
    // Inside another block's trace, a hybridized block runs its forward so that the trace sees its ops.
    if (core_->hybridized && !op::trace_sink()) return call_graph(x);
    if (!profiler::is_running()) return forward(x);
    const std::string label = name() + " forward";
    const profiler::Range range(label);
    return forward(x);
  } catch (const Error&) {
    // A bad input surfaces in some op (Convolution, Pooling): name the layer it reached, as
    // "... [in layer densenet0_pool4, a mx::gluon::nn::AvgPool2D]".
    rethrow_naming(name(), demangled(typeid(*this)));
  }
}

void Block::hybridize(bool active, bool /*static_alloc*/, bool static_shape) {
  const std::lock_guard lock(core_->mutex);
  core_->hybridized = active;
  core_->static_shape = active && static_shape;
  // Every call starts the graphs anew, as MXNet's clears its cached op (the flags may differ).
  core_->graphs.clear();
  if (!active) core_->last_graph.reset();
}

bool Block::is_hybridized() const { return core_->hybridized; }

std::size_t Block::traced_graphs() const {
  const std::lock_guard lock(core_->mutex);
  return core_->graphs.size();
}

void Block::cast(DType dtype) {
  {
    const std::lock_guard lock(core_->mutex);
    for (auto& [name, param] : core_->params) param.cast(dtype);
    core_->graphs.clear();  // traced over the old dtype's arrays
  }
  for (auto& [name, child] : core_->children) child->cast(dtype);
}

namespace {

std::vector<nd::NDArray> data_of(const std::vector<Parameter>& params, Context ctx) {
  std::vector<nd::NDArray> out;
  out.reserve(params.size());
  for (const Parameter& p : params) out.push_back(p.data(ctx));
  return out;
}

// The arrays the backward executor reads (the head's gradient is its feed), in the order of
// c.backward_names: the forward executor's input and kept values, and the parameters.
std::vector<nd::NDArray> backward_bound(const CachedGraph& c, const graph::Executor& forward, Context ctx) {
  std::vector<nd::NDArray> out;
  out.reserve(c.backward_sources.size());
  for (const CachedGraph::BackwardSource& s : c.backward_sources) {
    if (s.entry) out.push_back(forward.value(*s.entry));
    else if (s.param >= 0) out.push_back(c.params[static_cast<std::size_t>(s.param)].data(ctx));
    else out.push_back(forward.variable("data"));
  }
  return out;
}

// Per head of c's gradient graph, the buffer backward() offers for its gradient (none where it
// offers none); empty when it offers none at all (under autograd::grad, say).
std::vector<nd::NDArray> offered_heads(const CachedGraph& c) {
  const std::vector<nd::NDArray>& offered = autograd::offered_gradient_buffers();
  std::vector<nd::NDArray> heads(c.gradient.graph->heads.size());
  bool any = false;
  for (std::size_t i = 0; i < offered.size() && i < c.gradient.head_of.size(); ++i) {
    const int h = c.gradient.head_of[i];
    if (h < 0 || offered[i].is_none()) continue;
    heads[static_cast<std::size_t>(h)] = offered[i];
    any = true;
  }
  return any ? heads : std::vector<nd::NDArray>{};
}

// Fills c.wrt_param, c.backward_names and c.backward_sources from c.wrt and c.gradient, once.
void bind_backward(CachedGraph& c) {
  const auto param_of = [&](const std::string& name) {
    for (std::size_t i = 0; i < c.params.size(); ++i) {
      if (c.param_names[i] == name) return static_cast<int>(i);
    }
    return -1;
  };
  for (const std::string& w : c.wrt) c.wrt_param.push_back(w == "data" ? -1 : param_of(w));
  for (const std::string& name : c.gradient.graph->variable_names()) {
    if (name == "head_grad") continue;
    CachedGraph::BackwardSource s;
    for (const graph::Entry& e : c.gradient.forward_entries) {
      if (graph::forward_name(e) == name) s.entry = e;
    }
    if (!s.entry && name != "data") {
      s.param = param_of(name);
      if (s.param < 0) throw Error("hybridize: the backward graph reads '" + name + "', which the forward does not give");
    }
    c.backward_names.push_back(name);
    c.backward_sources.push_back(s);
  }
}

}  // namespace

nd::NDArray Block::call_graph(const nd::NDArray& x) {
  nd::check_not_none(("block '" + name() + "'").c_str(), x);
  const std::lock_guard lock(core_->mutex);
  const bool recording = autograd::is_recording();
  const Signature signature{x.shape(),  x.dtype(), x.context(), autograd::is_training(), recording,
                            recording && x.autograd_node() != nullptr, amp::autocast_dtype()};
  std::shared_ptr<CachedGraph> cached;
  for (auto it = core_->graphs.begin(); it != core_->graphs.end(); ++it) {
    if (!(it->first == signature)) continue;
    // A parameter whose grad_req changed since the trace (frozen, or unfrozen): traced again.
    bool same = true;
    for (std::size_t i = 0; recording && i < it->second->params.size(); ++i) {
      same = same && (it->second->params[i].grad_req() != "null") == it->second->in_wrt[i];
    }
    if (same) {
      cached = it->second;
      std::rotate(it, it + 1, core_->graphs.end());  // now the most recently used
    } else {
      core_->graphs.erase(it);
    }
    break;
  }
  if (!cached) {
    for (const auto& [sig, c] : core_->graphs) {
      if (core_->static_shape && (sig.shape != x.shape() || sig.dtype != x.dtype() || sig.ctx != x.context())) {
        throw ValueError("block '" + name() + "' was hybridized with static_shape, for input " + sig.shape.tuple_str() +
                         " " + dtype_name(sig.dtype) + " @" + sig.ctx.str() + "; got " + nd::describe(x));
      }
    }
    cached = trace_forward(x, signature.recording, signature.input_grad);
    if (core_->graphs.size() == Core::kMaxGraphs) core_->graphs.erase(core_->graphs.begin());
    core_->graphs.emplace_back(signature, cached);
  }
  core_->last_graph = cached->graph;
  const Context ctx = x.context();
  const std::string label = profiler::is_running() ? name() + " graph" : std::string();
  const profiler::Range range(label);
  const std::vector<nd::NDArray> bound = data_of(cached->params, ctx);
  // Recorded with nothing to differentiate (no input history, every parameter frozen): the result
  // is not recorded, as an eager call's would not be.
  if (!recording || cached->wrt.empty()) {
    // Heads handed out as the executor's own buffers save a copy per head (on a GPU, a node of the
    // captured graph); a second set of buffers is worth that only for small plans.
    constexpr std::size_t kDirectPlanBytes = std::size_t{64} << 20;
    const auto make = [&](bool copy_heads) {
      graph::Executor::Options options;
      options.read_feeds_in_place = true;
      options.copy_heads = copy_heads;
      return std::make_unique<graph::Executor>(cached->graph, signature.training, std::vector<std::string>{"data"},
                                               std::vector{x}, cached->param_names, bound, options);
    };
    if (cached->direct.empty() && !cached->copying) {  // the first call: the plan's size decides
      std::unique_ptr<graph::Executor> first = make(false);
      if (first->planned_bytes() <= kDirectPlanBytes) cached->direct.push_back(std::move(first));
      else cached->copying = make(true);
    }
    graph::Executor* exec = nullptr;
    for (const auto& e : cached->direct) {
      if (!exec && !e->heads_in_use()) exec = e.get();
    }
    if (!exec && !cached->direct.empty() && cached->direct.size() < 2) exec = cached->direct.emplace_back(make(false)).get();
    if (!exec) {
      if (!cached->copying) cached->copying = make(true);
      exec = cached->copying.get();
    }
    return exec->run({x}, bound).at(0);
  }
  // A pair no pending backward holds, and whose last gradients nobody holds, else a new one.
  std::shared_ptr<TrainingPair> pair;
  for (const auto& p : cached->pairs) {
    if (p.use_count() == 1 && !(p->backward && p->backward->heads_in_use()) &&
        !(p->backward_into && p->backward_into->heads_in_use())) {
      pair = p;
    }
  }
  if (!pair) {
    pair = std::make_shared<TrainingPair>();
    graph::Executor::Options keep;
    keep.keep = cached->gradient.forward_entries;
    // On cpu(0) the forward reads x where it is, and the backward reads x there too, as an eager
    // backward does (on a GPU the executor copies x in: see Options::read_feeds_in_place).
    keep.read_feeds_in_place = true;
    pair->forward = std::make_unique<graph::Executor>(cached->graph, signature.training, std::vector<std::string>{"data"},
                                                      std::vector{x}, cached->param_names, bound, keep);
    cached->pairs.push_back(pair);
  }
  nd::NDArray y = pair->forward->run({x}, bound).at(0);
  // The graph is one node of autograd's record: its backward replays the gradient graph.
  std::vector<nd::NDArray> inputs;
  for (const int p : cached->wrt_param) inputs.push_back(p < 0 ? x : bound[static_cast<std::size_t>(p)]);
  std::vector<const nd::NDArray*> input_ptrs;
  for (const nd::NDArray& a : inputs) input_ptrs.push_back(&a);
  const bool training = signature.training;
  autograd::record_op("_CachedOp", y, input_ptrs, [cached, pair, ctx, training](const nd::NDArray& grad) {
    const std::vector<nd::NDArray> bound_now = backward_bound(*cached, *pair->forward, ctx);
    std::vector<nd::NDArray> grads;
    if (pair->backward && pair->backward->heads_in_use()) {
      // A second backward through this forward while the first one's gradients are still held
      // (autograd::grad twice): computed into buffers of their own.
      graph::Executor once(cached->gradient.graph, training, {"head_grad"}, {grad}, cached->backward_names, bound_now,
                           graph::Executor::Options{.reuse_memory = true, .keep = {}, .capture = false,
                                                    .read_feeds_in_place = false, .copy_heads = true});
      grads = once.run({grad}, bound_now);
    } else if (std::vector<nd::NDArray> into = offered_heads(*cached); !into.empty()) {
      // The parameters' gradients computed where backward() wants them: no copy of them
      // afterwards (memory traffic on cpu(0), a batched copy kernel on a GPU).
      const bool same = into.size() == pair->into.size() &&
                        std::equal(into.begin(), into.end(), pair->into.begin(),
                                   [](const nd::NDArray& a, const nd::NDArray& b) { return a.is(b); });
      if (!pair->backward_into || !same) {
        graph::Executor::Options options;
        options.copy_heads = false;
        options.head_targets = into;
        pair->backward_into = std::make_unique<graph::Executor>(cached->gradient.graph, training, std::vector<std::string>{"head_grad"},
                                                                std::vector{grad}, cached->backward_names, bound_now, options);
        pair->into = std::move(into);
      }
      grads = pair->backward_into->run({grad}, bound_now);
    } else {
      // Where backward() offers no buffers (autograd::grad): the gradients are handed to autograd
      // as the executor's own buffers (no copy). They are read before this pair runs again, and a
      // caller who keeps one keeps the pair from being reused. Planned on first use only.
      if (!pair->backward) {
        graph::Executor::Options options;
        options.copy_heads = false;
        pair->backward = std::make_unique<graph::Executor>(cached->gradient.graph, training,
                                                           std::vector<std::string>{"head_grad"}, std::vector{grad},
                                                           cached->backward_names, bound_now, options);
      }
      grads = pair->backward->run({grad}, bound_now);
    }
    std::vector<nd::NDArray> out;
    for (int head : cached->gradient.head_of) out.push_back(head < 0 ? nd::NDArray() : grads.at(static_cast<std::size_t>(head)));
    return out;
  });
  return y;
}

// The forward traced on x. The trace runs the ops for real: running statistics that they update
// (grad_req "null" parameters) and the generator that Dropout draws from are put back afterwards,
// so that the replay that follows counts once and draws what an eager call would.
std::shared_ptr<CachedGraph> Block::trace_forward(const nd::NDArray& x, bool recording, bool input_grad) {
  std::vector<std::pair<std::string, Parameter>> params = structural_params();
  // Deferred shapes are completed (and their parameters initialised) by an eager forward first, in
  // prediction so that no running statistic moves: initialisers are not part of the graph.
  const bool deferred = std::any_of(params.begin(), params.end(), [](const auto& p) { return !p.second.is_initialized(); });
  if (deferred) {
    const autograd::Scope predicting(false, false);
    forward(x);
  }
  // Put back on every way out, a throw included.
  struct Restore {
    Context ctx;
    std::uint64_t random_position;
    std::vector<std::pair<nd::NDArray, nd::NDArray>> saved;  // (parameter array, its values before)
    ~Restore() {
      try {
        for (auto& [array, before] : saved) before.copyto(array);
        mx::random::set_state(ctx, random_position);
      } catch (...) {  // a failing device reports itself at the next op
      }
    }
  } restore{x.context(), mx::random::get_state(x.context()), {}};
  for (const auto& [key, param] : params) {
    if (param.grad_req() == "null" && param.is_initialized()) {
      for (const nd::NDArray& a : param.list_data()) restore.saved.emplace_back(a, a.copy());
    }
  }
  // A parameter, or a reshaped or transposed view of one (PReLU's slopes as (1, C, 1, 1)), which
  // the trace then reads through a Reshape or transpose node.
  const auto name_of = [&](const nd::NDArray& a) -> std::optional<graph::Named> {
    for (const auto& [key, param] : params) {
      if (!param.is_initialized()) continue;
      for (const nd::NDArray& d : param.list_data()) {
        const bool viewed = d.is_contiguous() && a.data() == d.data() && a.size() == d.size() && a.dtype() == d.dtype();
        if (d.is(a) || viewed) return graph::Named{param.name(), d};
      }
    }
    return std::nullopt;
  };
  auto cached = std::make_shared<CachedGraph>();
  cached->graph = std::make_shared<const graph::Graph>(graph::trace(
      [&](const std::vector<nd::NDArray>& in) { return std::vector{forward(in[0])}; }, {x}, {"data"}, name_of));
  std::map<std::string, nd::NDArray> variables{{"data", x}};
  for (const std::string& variable : cached->graph->variable_names()) {
    for (const auto& [key, param] : params) {
      if (param.name() != variable) continue;
      cached->params.push_back(param);
      cached->param_names.push_back(variable);
      variables.emplace(variable, param.data(x.context()));
      break;
    }
  }
  if (recording) {
    if (input_grad) cached->wrt.push_back("data");
    for (std::size_t i = 0; i < cached->params.size(); ++i) {
      cached->in_wrt.push_back(cached->params[i].grad_req() != "null");
      if (cached->in_wrt.back()) cached->wrt.push_back(cached->param_names[i]);
    }
    if (!cached->wrt.empty()) {
      cached->gradient = graph::gradient(*cached->graph, variables, cached->wrt);
      bind_backward(*cached);
    }
  }
  return cached;
}

void Block::export_model(const std::string& path, int epoch) const {
  if (!core_->last_graph) {
    throw ValueError("export: block '" + name() + "' has no graph yet; call hybridize() and run forward once first");
  }
  const graph::Graph& g = *core_->last_graph;
  // Inputs an op writes (BatchNorm's moving mean and variance) are MXNet's auxiliary states.
  std::set<std::string> aux;
  for (const graph::Node& node : g.nodes) {
    if (node.is_variable()) continue;
    for (std::size_t i = 0; i < node.inputs.size(); ++i) {
      if (node.op->written_inputs & (1u << node.input_slots[i])) aux.insert(g.nodes[node.inputs[i].node].name);
    }
  }
  std::vector<std::string> names;
  std::vector<nd::NDArray> arrays;
  for (const auto& [key, param] : structural_params()) {
    for (const std::string& variable : g.variable_names()) {
      if (variable != param.name()) continue;
      names.push_back((aux.count(variable) ? "aux:" : "arg:") + variable);
      arrays.push_back(param.list_data().front());
      break;
    }
  }
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, "-%04d.params", epoch);
  write_file_atomically(path + "-symbol.json", graph::to_json(g), "export");
  nd::save(path + suffix, names, arrays);
}

std::string Block::name() const {
  const std::string& p = core_->prefix;
  return !p.empty() && p.back() == '_' ? p.substr(0, p.size() - 1) : p;
}

Parameter Block::register_parameter(const std::string& short_name, Shape shape, init::InitializerRef init, DType dtype) {
  core_->params.emplace_back(short_name, Parameter(core_->prefix + short_name, std::move(shape), dtype, "write", std::move(init)));
  return core_->params.back().second;
}

Parameter Block::share_parameter(const std::string& short_name, const Parameter& param) {
  core_->params.emplace_back(short_name, param);
  return param;
}

Parameter Block::register_named_parameter(const std::string& name, Shape shape, DType dtype, const std::string& grad_req) {
  core_->params.emplace_back(name, Parameter(name, std::move(shape), dtype, grad_req));
  return core_->params.back().second;
}

Parameter Block::parameter(const std::string& short_name) const {
  for (auto& [key, param] : core_->params) {
    if (key == short_name) return param;
  }
  throw ValueError("block '" + name() + "' has no parameter '" + short_name + "'");
}

void Block::throw_sliced(const Block& block, const std::type_info& as) {
  throw ValueError("register_child: block '" + block.name() + "' is a " + demangled(typeid(block)) +
                   " passed as a " + demangled(as) + "; a copy of the " + demangled(as) +
                   " would lose its forward. Pass it as its own type");
}

void Block::add_child(std::shared_ptr<Block> child, std::string name) {
  if (name.empty()) name = std::to_string(core_->children.size());
  core_->children.emplace_back(std::move(name), std::move(child));
  const std::lock_guard lock(core_->mutex);
  core_->graphs.clear();  // traced without the new child
}

std::size_t Block::num_children() const { return core_->children.size(); }

Block& Block::child(std::size_t i) const {
  if (i >= core_->children.size()) {
    throw IndexError("block '" + name() + "' has " + std::to_string(core_->children.size()) +
                     " children; index " + std::to_string(i) + " is out of range");
  }
  return *core_->children[i].second;
}

ParameterDict Block::collect_params() const {
  ParameterDict dict;
  for (const auto& [key, param] : structural_params()) dict.add(param);
  return dict;
}

std::vector<std::pair<std::string, Parameter>> Block::structural_params(const std::string& prefix) const {
  std::vector<std::pair<std::string, Parameter>> out;
  for (const auto& [key, param] : core_->params) {
    const auto renamed = core_->structural_keys.find(key);
    out.emplace_back(prefix + (renamed == core_->structural_keys.end() ? key : renamed->second), param);
  }
  for (const auto& [key, child] : core_->children) {
    for (auto& entry : child->structural_params(prefix + key + ".")) out.push_back(std::move(entry));
  }
  return out;
}

void Block::set_structural_key(const std::string& short_name, const std::string& key) {
  parameter(short_name);  // mx::ValueError for a name the block lacks
  core_->structural_keys[short_name] = key;
}

std::vector<std::pair<std::string, Parameter>> Block::structural_aliases(const std::string& prefix) const {
  std::vector<std::pair<std::string, Parameter>> out;
  for (const auto& [key, param] : core_->params) {
    if (core_->structural_keys.count(key)) out.emplace_back(prefix + key, param);
  }
  for (const auto& [key, child] : core_->children) {
    for (auto& entry : child->structural_aliases(prefix + key + ".")) out.push_back(std::move(entry));
  }
  return out;
}

void Block::initialize(const init::Initializer& init, Context ctx, bool force_reinit) {
  initialize(init, std::vector<Context>{ctx}, force_reinit);
}

void Block::initialize(const init::Initializer& init, const std::vector<Context>& ctxs, bool force_reinit) {
  collect_params().initialize(init, ctxs, force_reinit);
}

void Block::save_parameters(const std::string& path) const {
  std::vector<std::pair<std::string, nd::NDArray>> entries;
  for (const auto& [key, param] : structural_params()) entries.emplace_back(key, param.list_data().front());
  save_parameter_file(path, entries, "save_parameters");
}

void Block::load_parameters(const std::string& path, Context ctx, bool allow_missing, bool ignore_extra) {
  load_parameters(path, std::vector<Context>{ctx}, allow_missing, ignore_extra);
}

void Block::load_parameters(const std::string& path, const std::vector<Context>& ctxs, bool allow_missing,
                            bool ignore_extra) {
  if (ctxs.empty()) throw ValueError("load_parameters: '" + path + "' needs at least one context to load onto");
  for (Context ctx : ctxs) check_context(ctx);
  // Everything is read and checked into temporaries first, so that a bad file changes nothing.
  auto entries = load_parameter_file(path, "load_parameters");
  // MXNet's export names its entries "arg:dense0_weight" and "aux:batchnorm0_running_mean".
  for (auto& [key, value] : entries) {
    if (key.starts_with("arg:") || key.starts_with("aux:")) key.erase(0, 4);
  }
  std::vector<ParameterSlot> slots;
  for (auto& [key, param] : structural_params()) slots.push_back({std::move(key), std::move(param)});
  // Keys are structural names ("0.weight"), as save_parameters writes, unless none has a dot and
  // some is no structural name: then they are parameter names (collect_params().save, export),
  // which MXNet's load_parameters reads through collect_params().load with restore_prefix = prefix().
  const auto is_structural = [&](const std::string& key) {
    for (const ParameterSlot& slot : slots) {
      if (slot.key == key) return true;
    }
    return false;
  };
  const auto aliases = structural_aliases();
  const auto is_alias = [&](const std::string& key) {
    for (const auto& entry : aliases) {
      if (entry.first == key) return true;
    }
    return false;
  };
  bool by_name = false;
  for (const auto& [key, value] : entries) by_name = by_name || !(is_structural(key) || is_alias(key));
  for (const auto& [key, value] : entries) by_name = by_name && key.find('.') == std::string::npos;
  std::vector<std::vector<std::size_t>> entry_slots(entries.size());
  for (std::size_t j = 0; j < entries.size(); ++j) {
    const std::string& key = entries[j].first;
    const auto match = [&](const std::string& wanted, bool as_name) {
      for (std::size_t i = 0; i < slots.size(); ++i) {
        if ((as_name ? slots[i].param.name() : slots[i].key) == wanted) entry_slots[j].push_back(i);
      }
    };
    if (!by_name) {
      match(key, false);
      // a parameter's short name where its structural key is another (an RNN layer's l0_i2h_weight)
      for (const auto& [alias, param] : aliases) {
        if (entry_slots[j].empty() && alias == key) match(param.name(), true);
      }
    } else {
      match(key, true);
      if (entry_slots[j].empty()) match(prefix() + key, true);
    }
  }
  load_parameter_slots(path, "load_parameters", "block '" + name() + "'", slots, entries, entry_slots, ctxs,
                       allow_missing, ignore_extra);
}

}  // namespace mx::gluon
