#include "gluon/parameter.hpp"

#include <algorithm>
#include <cmath>
#include <iostream>

#include "context/device.hpp"
#include "ndarray/autograd/autograd.hpp"
#include "ndarray/core/describe.hpp"
#include "ndarray/ops/creation.hpp"

namespace mx::gluon {

struct Parameter::State {
  std::string name;
  Shape shape;
  DType dtype;
  std::string grad_req;
  init::InitializerRef init;
  std::vector<Context> ctxs;       // where the copies live
  std::vector<nd::NDArray> data;   // one per context
  std::vector<nd::NDArray> grads;  // one per context unless grad_req is "null"
  // A deferred initialisation waiting for the shape: its contexts and default initializer.
  std::vector<Context> deferred_ctxs;
  std::shared_ptr<const init::Initializer> deferred_default;
  std::uint64_t data_version = 0;  // see data_version()
  double lr_mult = 1, wd_mult = 1;
};

namespace {

bool shape_known(const Shape& shape) {
  return std::all_of(shape.begin(), shape.end(), [](std::int64_t d) { return d > 0; });
}

void check_grad_req(const std::string& name, const std::string& req) {
  if (req != "write" && req != "add" && req != "null") {
    throw ValueError("Parameter '" + name + "': grad_req must be \"write\", \"add\" or \"null\", not \"" + req + "\"");
  }
}

}  // namespace

Parameter::Parameter(std::string name, Shape shape, DType dtype, std::string grad_req, init::InitializerRef init)
    : state_(std::make_shared<State>()) {
  check_grad_req(name, grad_req);
  state_->name = std::move(name);
  state_->shape = std::move(shape);
  state_->dtype = dtype;
  state_->grad_req = std::move(grad_req);
  state_->init = std::move(init);
}

const std::string& Parameter::name() const { return state_->name; }
const Shape& Parameter::shape() const { return state_->shape; }
DType Parameter::dtype() const { return state_->dtype; }
const std::string& Parameter::grad_req() const { return state_->grad_req; }
void Parameter::set_initializer(init::InitializerRef init) { state_->init = std::move(init); }
bool Parameter::is_initialized() const { return !state_->data.empty(); }
bool Parameter::is_deferred() const { return state_->deferred_default != nullptr; }

double Parameter::lr_mult() const { return state_->lr_mult; }
double Parameter::wd_mult() const { return state_->wd_mult; }

namespace {
void check_mult(const std::string& name, const char* which, double mult) {
  if (!(std::isfinite(mult) && mult >= 0)) {
    throw ValueError("Parameter '" + name + "': " + which + " must be a finite number >= 0, got " + std::to_string(mult));
  }
}
}  // namespace

void Parameter::check_multiplier(const char* which, double mult) const { check_mult(state_->name, which, mult); }

void Parameter::set_lr_mult(double mult) {
  check_mult(state_->name, "lr_mult", mult);
  state_->lr_mult = mult;
}

void Parameter::set_wd_mult(double mult) {
  check_mult(state_->name, "wd_mult", mult);
  state_->wd_mult = mult;
}

void Parameter::set_grad_req(const std::string& req) {
  check_grad_req(state_->name, req);
  state_->grad_req = req;
  attach_grads();
}

// One zero gradient per copy, and the copies marked as autograd variables writing into them.
void Parameter::attach_grads() {
  state_->grads.clear();
  for (nd::NDArray& d : state_->data) {
    if (state_->grad_req == "null") {
      d = d.detach();  // no longer a variable
      continue;
    }
    state_->grads.push_back(nd::zeros(d.shape(), d.context(), d.dtype()));
    autograd::mark_variable(d, state_->grads.back(), state_->grad_req);
  }
}

void Parameter::initialize(const init::Initializer& default_init, const std::vector<Context>& ctxs, bool force_reinit) {
  if (ctxs.empty()) throw ValueError("Parameter '" + state_->name + "': initialize needs at least one context");
  for (Context ctx : ctxs) check_context(ctx);
  if ((is_initialized() || is_deferred()) && !force_reinit) {
    std::cerr << "Warning: Parameter '" << state_->name
              << "' is already initialized, ignoring. Set force_reinit=true to re-initialize.\n";
    return;
  }
  if (!shape_known(state_->shape)) {
    state_->data.clear();
    state_->grads.clear();
    state_->ctxs.clear();
    state_->deferred_ctxs = ctxs;
    state_->deferred_default = default_init.clone();
    return;
  }
  allocate(default_init, ctxs);
}

// Creates the copies on ctxs and fills them with identical values generated on each context.
void Parameter::allocate(const init::Initializer& default_init, const std::vector<Context>& ctxs) {
  std::vector<nd::NDArray> data;
  for (Context ctx : ctxs) data.emplace_back(state_->shape, ctx, state_->dtype);
  if (state_->init) (*state_->init).fill(data);
  else default_init.fill_by_name(state_->name, data);
  state_->ctxs = ctxs;
  state_->data = std::move(data);
  ++state_->data_version;
  attach_grads();
  state_->deferred_ctxs.clear();
  state_->deferred_default.reset();
}

void Parameter::infer_shape(const Shape& shape) {
  if (shape.ndim() != state_->shape.ndim()) {
    throw ShapeError("Parameter '" + state_->name + "': inferred shape " + shape.tuple_str() +
                     " does not match the declared " + state_->shape.tuple_str());
  }
  for (int d = 0; d < shape.ndim(); ++d) {
    if (shape[d] <= 0) {
      throw ShapeError("Parameter '" + state_->name + "': inferred shape " + shape.tuple_str() +
                       " has an extent <= 0; the input that fixes it must not be empty");
    }
    if (state_->shape[d] > 0 && state_->shape[d] != shape[d]) {
      throw ShapeError("Parameter '" + state_->name + "': inferred shape " + shape.tuple_str() +
                       " does not match the declared " + state_->shape.tuple_str());
    }
  }
  state_->shape = shape;
  if (is_deferred()) {
    const auto default_init = state_->deferred_default;
    allocate(*default_init, state_->deferred_ctxs);
  }
}

std::size_t Parameter::index_of(Context ctx, const char* what) const {
  const auto it = std::find(state_->ctxs.begin(), state_->ctxs.end(), ctx);
  if (it != state_->ctxs.end()) return static_cast<std::size_t>(it - state_->ctxs.begin());
  if (is_deferred()) {
    throw Error("Parameter '" + state_->name + "' has not been initialized yet because initialization was "
                "deferred: its shape " + state_->shape.tuple_str() + " is known only after the first forward "
                "pass. Pass one batch of data through the network before accessing its " + what +
                ", or give the layer its input size (in_units)");
  }
  if (!is_initialized()) {
    throw Error("Parameter '" + state_->name + "' has not been initialized. Initialize the parameters before using "
                "their " + what + ": call initialize() on the block, e.g. net.initialize(mx::init::Normal(0.01), "
                "ctx), or on net.collect_params(), which holds the parameters of nested child blocks too; create "
                "the Trainer with net.collect_params() as well");
  }
  throw Error("Parameter '" + state_->name + "' was not initialized on context " + ctx.str() +
              ". It was only initialized on " + to_string(state_->ctxs) +
              ". Initialize it on " + ctx.str() + " too, or move the input with as_in_context");
}

void Parameter::check_initialized() const {
  if (!is_initialized() && !is_deferred()) index_of(current_context(), "data");  // throws "not initialized"
}

nd::NDArray Parameter::data(Context ctx) const { return state_->data[index_of(ctx, "data")]; }

nd::NDArray Parameter::data() const {
  if (state_->data.size() == 1) return state_->data[0];
  return data(current_context());
}

std::vector<nd::NDArray> Parameter::list_data() const {
  if (!is_initialized()) index_of(current_context(), "data");  // throws the right message
  return state_->data;
}

std::vector<Context> Parameter::list_ctx() const {
  return is_deferred() ? state_->deferred_ctxs : state_->ctxs;
}

void Parameter::set_data(const nd::NDArray& value) {
  nd::check_not_none("Parameter::set_data", value);
  if (value.dtype() != state_->dtype) {
    throw DTypeError("Parameter '" + state_->name + "': set_data with " + nd::describe(value) +
                     " but the parameter is " + dtype_name(state_->dtype));
  }
  if (!is_initialized()) {
    if (is_deferred()) {  // as MXNet: setting the data of a deferred parameter fixes its shape
      infer_shape(value.shape());
    } else {
      index_of(current_context(), "data");  // throws "not initialized"
    }
  }
  if (value.shape() != state_->shape) {
    throw ShapeError("Parameter '" + state_->name + "': set_data with " + nd::describe(value) +
                     " but the parameter is " + state_->shape.tuple_str() + " " + dtype_name(state_->dtype));
  }
  for (nd::NDArray& d : state_->data) value.copyto(d);
  ++state_->data_version;
}

std::uint64_t Parameter::data_version() const { return state_->data_version; }

void Parameter::reset_ctx(const std::vector<Context>& ctxs) {
  if (ctxs.empty()) throw ValueError("Parameter '" + state_->name + "': reset_ctx needs at least one context");
  for (Context ctx : ctxs) check_context(ctx);
  if (is_deferred()) {
    state_->deferred_ctxs = ctxs;
    return;
  }
  if (!is_initialized()) index_of(ctxs[0], "data");  // throws "not initialized"
  const std::uint64_t version = state_->data_version;  // the same values, moved: not new ones
  load_init(state_->data[0], ctxs);
  state_->data_version = version;
}

void Parameter::cast(DType dtype) {
  if (!is_floating(dtype)) {
    throw DTypeError("Parameter '" + state_->name + "': cast to " + dtype_name(dtype) +
                     "; parameters are float32, float64, float16 or bfloat16");
  }
  if (dtype == state_->dtype) return;
  std::vector<nd::NDArray> data;
  for (const nd::NDArray& d : state_->data) data.push_back(d.detach().astype(dtype));
  state_->dtype = dtype;
  state_->data = std::move(data);
  ++state_->data_version;
  attach_grads();
}

void Parameter::load_init(const nd::NDArray& value, const std::vector<Context>& ctxs) {
  if (ctxs.empty()) throw ValueError("Parameter '" + state_->name + "': loading needs at least one context");
  std::vector<nd::NDArray> data;
  for (Context ctx : ctxs) data.push_back(value.detach().copyto(ctx));
  state_->shape = value.shape();
  state_->dtype = value.dtype();
  state_->ctxs = ctxs;
  state_->data = std::move(data);
  ++state_->data_version;
  attach_grads();
  state_->deferred_ctxs.clear();
  state_->deferred_default.reset();
}

nd::NDArray Parameter::grad(Context ctx) const {
  const std::size_t i = index_of(ctx, "gradient");
  if (state_->grads.empty()) {
    throw Error("Parameter '" + state_->name + "' has no gradient because its grad_req is \"null\"");
  }
  return state_->grads[i];
}

std::vector<nd::NDArray> Parameter::list_grad() const { return state_->grads; }

void Parameter::zero_grad() {
  for (nd::NDArray& g : state_->grads) g.fill(0.0);
}

}  // namespace mx::gluon
