#include "gluon/trainer.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "context/device.hpp"
#include "context/error.hpp"
#include "gluon/amp.hpp"
#include "gluon/gradient_buckets.hpp"
#include "ndarray/dist/dist.hpp"
#include "ndarray/ops/optimizer.hpp"
#include "ndarray/profiler/profiler.hpp"
#include "ndarray/core/describe.hpp"

namespace mx::gluon {

namespace {

nd::ReduceAlgo algo_for_kvstore(const std::string& kvstore) {
  if (kvstore == "device") return nd::ReduceAlgo::automatic;
  if (kvstore == "nccl") {
    if (!built_with_cuda()) {
      throw ValueError("Trainer: kvstore 'nccl' needs a build with CUDA and NCCL, but this ndgluon was built "
                       "without CUDA (-Dcuda=disabled, or no CUDA toolkit found); use kvstore 'device'");
    }
    if (!nd::built_with_nccl()) {
      throw ValueError("Trainer: kvstore 'nccl' needs a build with NCCL, but this CUDA build of ndgluon has none "
                       "(-Dnccl=disabled, or NCCL not found): reconfigure with -Dnccl=enabled where NCCL is "
                       "installed, or use kvstore 'device' (peer copies between GPUs)");
    }
    return nd::ReduceAlgo::nccl;
  }
  if (kvstore == "p2p") return nd::ReduceAlgo::peer;
  if (kvstore == "dist_sync") {
    if (!dist::is_initialized()) {
      throw ValueError("Trainer: kvstore 'dist_sync' sums gradients across the processes of a job: call "
                       "mx::dist::init() first (in every process, started by a launcher such as ndgluon-run, "
                       "torchrun, mpirun or srun)");
    }
    return nd::ReduceAlgo::automatic;
  }
  throw ValueError("Trainer: unknown kvstore '" + kvstore + "'; valid: device, nccl, p2p, dist_sync");
}

// kvstore 'nccl': every trained parameter's copies on GPUs (those not yet initialised are checked
// by the step that finds them initialised).
void check_on_gpus(const char* op, const ParameterDict& params) {
  for (const auto& [name, param] : params) {
    if (param.grad_req() == "null") continue;
    const std::vector<Context> ctxs = param.list_ctx();
    for (Context ctx : ctxs) {
      if (ctx.is_gpu()) continue;
      throw ValueError(std::string(op) + ": kvstore 'nccl' sums gradients with NCCL, which needs every copy on a "
                       "GPU, but parameter '" + name + "' is on " + to_string(ctxs) +
                       ". Initialize it on GPUs only (e.g. on mx::try_all_gpus()), or use kvstore 'device', which "
                       "sums copies on any context");
    }
  }
}

}  // namespace

Trainer::Trainer(ParameterDict params, const std::string& optimizer, const HyperParams& optimizer_params,
                 const std::string& kvstore)
    : Trainer(std::move(params), optimizer, optimizer_params, nullptr, kvstore) {}

namespace {

constexpr std::size_t kDefaultBucketBytes = std::size_t{25} << 20;  // DDP's bucket_cap_mb

// The optimizer's hyper-parameters: optimizer_params without the Trainer's own.
HyperParams optimizer_only(HyperParams params) {
  params.erase("check_finite");
  params.erase("bucket_cap_mb");
  return params;
}

std::size_t bucket_cap_bytes(const HyperParams& params) {
  const auto it = params.find("bucket_cap_mb");
  if (it == params.end()) return kDefaultBucketBytes;
  if (!(std::isfinite(it->second) && it->second >= 0 && it->second <= 1e6)) {
    throw ValueError("Trainer: bucket_cap_mb must be a number of MiB from 0 (no buckets) to 1e6, got " +
                     nd::shortest_text(it->second));
  }
  return static_cast<std::size_t>(it->second * (1 << 20));
}

}  // namespace

Trainer::Trainer(ParameterDict params, const std::string& optimizer, const HyperParams& optimizer_params,
                 std::shared_ptr<lr_scheduler::LRScheduler> scheduler, const std::string& kvstore)
    : params_(std::move(params)), optimizer_(Optimizer::create(optimizer, optimizer_only(optimizer_params))),
      lr_scheduler_(std::move(scheduler)), reduce_algo_(algo_for_kvstore(kvstore)), dist_(kvstore == "dist_sync"),
      bucket_cap_bytes_(bucket_cap_bytes(optimizer_params)), bucket_cap_given_(optimizer_params.count("bucket_cap_mb") > 0) {
  const auto check = optimizer_params.find("check_finite");
  check_finite_ = check != optimizer_params.end() && check->second != 0;
  if (reduce_algo_ == nd::ReduceAlgo::nccl) check_on_gpus("Trainer", params_);
  const auto it = optimizer_params.find("rescale_grad");
  if (it != optimizer_params.end()) rescale_grad_ = it->second;
  // Last, so that a refused Trainer leaves the scheduler alone. The rate was checked by create().
  const auto lr = optimizer_params.find("learning_rate");
  if (lr_scheduler_ && lr != optimizer_params.end()) lr_scheduler_->set_base_lr(lr->second);
  if (dist_) broadcast_new_parameters();
  prepare_buckets();
}

Trainer::~Trainer() = default;
Trainer::Trainer(Trainer&&) noexcept = default;
Trainer& Trainer::operator=(Trainer&&) noexcept = default;

void Trainer::prepare_buckets() {
  if (bucket_cap_bytes_ == 0 || reduce_algo_ == nd::ReduceAlgo::peer) return;
  const bool across_processes = dist_ && dist::world_size() > 1;
  std::vector<GradientBuckets::Param> bucketed;
  std::vector<Context> contexts;
  for (auto& [name, param] : params_) {
    if (param.grad_req() != "write" || !param.is_initialized()) continue;
    std::vector<nd::NDArray> grads = param.list_grad();
    if (grads.size() < (across_processes ? 1 : 2) || !nd::overlap::can_reduce(grads)) continue;
    const std::vector<Context> ctxs = param.list_ctx();
    if (contexts.empty()) contexts = ctxs;
    if (ctxs != contexts) continue;  // on other GPUs than the first: summed in step
    bucketed.push_back({name, param.list_data(), std::move(grads)});
  }
  // Note [gradient buckets]: a process that drives several GPUs sums after backward unless asked,
  // or unless its sums run on the copy engines.
  if (contexts.size() > 1 && !bucket_cap_given_ &&
      (across_processes || reduce_algo_ != nd::ReduceAlgo::automatic || !nd::overlap::copy_engines(contexts))) {
    bucketed.clear();
  }
  if (buckets_ && buckets_->holds(bucketed)) return;  // listening already
  if (buckets_) buckets_->join();  // sums it started on the arrays the parameters had
  buckets_.reset();
  if (!bucketed.empty()) {
    buckets_ = GradientBuckets::make(std::move(bucketed), std::move(contexts), bucket_cap_bytes_, dist_, reduce_algo_);
  }
}

std::vector<std::vector<std::string>> Trainer::bucket_layout() const {
  return buckets_ ? buckets_->layout() : std::vector<std::vector<std::string>>{};
}

void Trainer::broadcast_new_parameters() {
  std::vector<std::vector<nd::NDArray>> groups;
  for (auto& [name, param] : params_) {
    if (broadcast_.count(name) || param.list_ctx().empty()) continue;
    bool ready = true;
    try {
      groups.push_back(param.list_data());
    } catch (const Error&) {  // not initialised yet (deferred): at the first step that finds it so
      ready = false;
    }
    if (ready) broadcast_.insert(name);
  }
  dist::broadcast_from_rank0(groups);
}

double Trainer::learning_rate() const {
  return lr_scheduler_ ? (*lr_scheduler_)(num_update_) : optimizer_->learning_rate();
}

void Trainer::set_learning_rate(double lr) {
  if (lr_scheduler_) {
    throw ValueError("Trainer::set_learning_rate: the learning rate follows the lr_scheduler given to this Trainer "
                     "(now " + nd::shortest_text(learning_rate()) + " at num_update " + std::to_string(num_update_) +
                     "), so it cannot be set to " + nd::shortest_text(lr) +
                     "; set_learning_rate can change the rate only of a Trainer without a scheduler");
  }
  optimizer_->set_learning_rate(lr);
}

void Trainer::check_ready(const char* op, std::int64_t batch_size) const {
  if (batch_size <= 0) {
    throw ValueError(std::string(op) + ": batch_size must be positive, got " + std::to_string(batch_size));
  }
  for (const auto& [name, param] : params_) {
    if (param.grad_req() == "null") continue;
    const std::vector<nd::NDArray> data = param.list_data();  // throws if not initialised
    const std::vector<nd::NDArray> grads = param.list_grad();
    for (std::size_t i = 0; i < data.size(); ++i) Optimizer::check_update(op, data[i], grads[i]);
  }
  if (reduce_algo_ == nd::ReduceAlgo::nccl) check_on_gpus(op, params_);
}

void Trainer::allreduce_grads() {
  if (dist_) broadcast_new_parameters();
  prepare_buckets();  // buckets of the parameters as they are now (new ones have summed nothing)
  // The buckets' gradients: those backward has not summed (Note [gradient buckets]).
  if (buckets_) buckets_->finish();
  std::vector<std::vector<nd::NDArray>> groups;
  for (auto& [name, param] : params_) {
    if (param.grad_req() == "null" || (buckets_ && buckets_->holds_param(name))) continue;
    std::vector<nd::NDArray> grads = param.list_grad();
    if (grads.size() > 1 || dist_) groups.push_back(std::move(grads));
  }
  // One fused NCCL launch for all of them; across the processes too with dist_sync.
  if (groups.empty()) return;  // leaves the buckets' sums to Note [updates in turn]
  if (dist_) dist::all_reduce(groups);
  else nd::all_reduce(groups, reduce_algo_);
}

void Trainer::update(std::int64_t batch_size) {
  check_ready("Trainer::update", batch_size);
  if (check_finite_ && !loss_scaler_) check_gradients_finite("Trainer::update");
  double loss_scale = 1;
  if (unscale(loss_scale)) apply_updates("Trainer::update", batch_size, loss_scale);
}

void Trainer::check_gradients_finite(const char* op) const {
  std::vector<std::pair<std::string, nd::NDArray>> flags;  // all queued before the first is read
  for (const auto& [name, param] : params_) {
    if (param.grad_req() == "null") continue;
    for (const nd::NDArray& g : param.list_grad()) flags.emplace_back(name + " on " + g.context().str(), nd::multi_all_finite({g}));
  }
  std::string bad;
  for (const auto& [what, flag] : flags) {
    if (flag.asscalar<float>() == 0.0f) bad += (bad.empty() ? "" : ", ") + what;
  }
  if (!bad.empty()) {
    throw NonFiniteError(std::string(op) + ": the gradient of " + bad +
                         " holds an inf or a nan (check_finite); nothing was updated");
  }
}

bool Trainer::unscale(double& loss_scale) {
  if (!loss_scaler_) return true;
  loss_scale = loss_scaler_->loss_scale();  // the scale the loss was multiplied with
  const bool overflow = loss_scaler_->has_overflow(params_);
  loss_scaler_->update_scale(overflow);
  return !overflow;
}

void Trainer::step(std::int64_t batch_size) {
  const profiler::Range range("Trainer::step");
  // Everything is checked before the gradients are summed, so that a failed step changes nothing.
  check_ready("Trainer::step", batch_size);
  allreduce_grads();
  if (check_finite_ && !loss_scaler_) check_gradients_finite("Trainer::step");
  double loss_scale = 1;
  if (unscale(loss_scale)) apply_updates("Trainer::step", batch_size, loss_scale);
}

void Trainer::apply_updates(const char* op, std::int64_t batch_size, double loss_scale) {
  std::vector<StateKey> keys;
  std::vector<nd::NDArray> weights, grads;
  std::vector<const std::string*> names;  // each key's parameter
  std::map<std::size_t, std::uint64_t> versions;
  std::map<std::size_t, std::pair<double, double>> multipliers;  // Parameter::lr_mult, wd_mult
  std::size_t index = 0;  // the parameter's place in the dict, frozen or not: its state's key
  for (auto& [name, param] : params_) {
    const std::size_t param_index = index++;
    if (param.grad_req() == "null") continue;
    if (param.lr_mult() != 1 || param.wd_mult() != 1) multipliers[param_index] = {param.lr_mult(), param.wd_mult()};
    const std::vector<nd::NDArray> data = param.list_data();
    const std::vector<nd::NDArray> param_grads = param.list_grad();
    versions[param_index] = param.data_version();
    const auto seen = data_versions_.find(param_index);
    const bool set_from_outside = seen != data_versions_.end() && seen->second != param.data_version();
    for (std::size_t i = 0; i < data.size(); ++i) {
      keys.push_back({param_index, i});
      names.push_back(&name);
      weights.push_back(data[i]);
      grads.push_back(param_grads[i]);
      if (set_from_outside) optimizer_->forget_master(keys.back());  // made again from the new values
    }
  }
  // Note [update count]: the count after this step, and its rate, before anything changes.
  std::int64_t num_update = num_update_;
  for (const StateKey& key : keys) {
    const auto it = update_counts_.find(key);
    num_update = std::max(num_update, (it == update_counts_.end() ? 0 : it->second) + 1);
  }
  // A step that fails (out of memory, say) leaves the rate and the counts as they were.
  const double lr_before = optimizer_->learning_rate();
  if (lr_scheduler_) {
    const double lr = (*lr_scheduler_)(num_update);
    if (!(std::isfinite(lr) && lr >= 0)) {
      throw ValueError(std::string(op) + ": the lr_scheduler gave learning rate " + nd::shortest_text(lr) +
                       " for num_update " + std::to_string(num_update) +
                       "; a learning rate must be a finite number >= 0");
    }
    optimizer_->set_learning_rate(lr);
  }
  // dist_sync: batch_size is this process's; the sum is over every process's (Horovod's and DDP's mean).
  const double processes = dist_ ? dist::world_size() : 1;
  optimizer_->set_rescale_grad(rescale_grad_ / (static_cast<double>(batch_size) * processes * loss_scale));
  optimizer_->set_multipliers(std::move(multipliers));
  try {
    update_in_turn(keys, weights, grads, names);
  } catch (...) {
    optimizer_->set_learning_rate(lr_before);
    throw;
  }
  for (const StateKey& key : keys) ++update_counts_[key];
  for (const auto& [param_index, version] : versions) data_versions_[param_index] = version;
  num_update_ = num_update;
}

// Note [updates in turn] (gluon/gradient_buckets.hpp): the parameters of each bucket sum started
// by backward are updated once that sum is done, while the later ones still run; the rest after
// every sum. One update_multi per bucket: the same arithmetic as one for all.
void Trainer::update_in_turn(const std::vector<StateKey>& keys, const std::vector<nd::NDArray>& weights,
                             const std::vector<nd::NDArray>& grads, const std::vector<const std::string*>& names) {
  std::vector<char> done(keys.size(), 0);
  const auto update_if = [&](const auto& wanted) {
    std::vector<StateKey> some_keys;
    std::vector<nd::NDArray> some_weights, some_grads;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (done[i] || !wanted(*names[i])) continue;
      done[i] = 1;
      some_keys.push_back(keys[i]);
      some_weights.push_back(weights[i]);
      some_grads.push_back(grads[i]);
    }
    if (!some_keys.empty()) optimizer_->update_multi(some_keys, some_weights, some_grads);
  };
  if (buckets_) {
    buckets_->join_in_turn([&](const std::unordered_set<std::string>& summed) {
      update_if([&](const std::string& name) { return summed.count(name) > 0; });
    });
  }
  update_if([](const std::string&) { return true; });
}

}  // namespace mx::gluon
