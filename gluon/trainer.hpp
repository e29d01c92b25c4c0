#pragma once
// mx::gluon::Trainer: applies an optimizer to a set of parameters, as gluon.Trainer.
//
//   gluon::Trainer trainer(net.collect_params(), "sgd", {{"learning_rate", 0.1}});
//   ... loss.backward(); trainer.step(batch_size);
//
// Parameters initialised on several contexts (data parallelism) get their gradients summed over
// the contexts before every update, through NCCL when the build has it (kvstore "device").
//
// A learning-rate schedule, as MXNet's optimizer_params {"lr_scheduler": scheduler}:
//
//   auto scheduler = std::make_shared<mx::lr_scheduler::FactorScheduler>(250, 0.5, 1e-8, 1.0);
//   gluon::Trainer trainer(net.collect_params(), "sgd", {{"momentum", 0.9}}, scheduler);
//
// Note [update count]: as MXNet's Optimizer, the Trainer counts the updates of each parameter
// copy; num_update is the largest count, so it is n during and after the n-th step (or update)
// and 0 before the first. Each step takes its learning rate from scheduler(num_update) before it
// updates anything, and every parameter of the step is updated with that rate.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "gluon/lr_scheduler.hpp"
#include "gluon/optimizer.hpp"
#include "gluon/parameter_dict.hpp"
#include "ndarray/dist/collective.hpp"

namespace mx::amp {
class LossScaler;
}

namespace mx::gluon {

class GradientBuckets;

class Trainer {
 public:
  // kvstore: how gradients are summed across contexts. "device" (the default): NCCL when the build
  // has it and the copies are on GPUs, else peer copies; "nccl": NCCL only; "p2p": peer copies
  // only (GPU-to-GPU over NVLink/PCIe where the pair allows, as MXNet's "device"); "dist_sync"
  // (MXNet's name): across every process of a job too, after mx::dist::init() (ndarray/dist/dist.hpp),
  // through NCCL. With dist_sync the parameters start as rank 0's (broadcast here, or at the first
  // step for those initialised later), and step(batch_size) takes this process's batch size: the
  // gradients summed over the processes are divided by batch_size * world_size, as Horovod's
  // DistributedTrainer and PyTorch's DDP average them.
  // Throws mx::ValueError, and no Trainer is made, for an unknown optimizer, hyper-parameter or
  // kvstore, a hyper-parameter out of its range (see Optimizer::create), and for "nccl" in a build
  // without CUDA or NCCL or with a trained parameter that has a copy off the GPUs (named with its
  // contexts; step() checks again the parameters initialised later).
  Trainer(ParameterDict params, const std::string& optimizer, const HyperParams& optimizer_params = {},
          const std::string& kvstore = "device");
  // With a learning-rate schedule (MXNet's optimizer_params["lr_scheduler"]); a null one is none.
  // The Trainer shares the scheduler and advances its state. A "learning_rate" in optimizer_params
  // replaces the scheduler's base_lr, as MXNet's Optimizer.__init__ does (see Note [stateful
  // schedules] in gluon/lr_scheduler.hpp: Poly and Cosine schedules go on from the rate they were
  // made with); without one, the scheduler's rates are used as they are. The errors are the
  // constructor's above, and the scheduler is left alone when one is thrown.
  Trainer(ParameterDict params, const std::string& optimizer, const HyperParams& optimizer_params,
          std::shared_ptr<lr_scheduler::LRScheduler> scheduler, const std::string& kvstore = "device");
  ~Trainer();
  Trainer(Trainer&&) noexcept;
  Trainer& operator=(Trainer&&) noexcept;

  // Note [gradient buckets]: in a job of one process per GPU (kvstore "dist_sync"), the sums of
  // the gradients overlap backward, as PyTorch DDP's do: the gradients are grouped into buckets of
  // about 25 MB in the reverse of the dict's order, and each bucket's NCCL all-reduce starts on a
  // communication stream as soon as backward has written its last gradient; the update waits for
  // it by event. So, as with DDP, once backward has returned the gradients are the sums. step()
  // and allreduce_grads() sum whatever backward did not (gradients written again, parameters it
  // did not reach), so the parameters are those of the sums after backward: to the bit over two
  // GPUs (a + b), within rounding over more (NCCL may add in another order). The Trainer's own
  // {"bucket_cap_mb", 25} sets the size (DDP's bucket_cap_mb); 0 sums everything in step instead.
  //
  // A process that drives several GPUs queues each GPU's backward after the previous one's, so an
  // NCCL sum started during the last backward occupies the first GPUs' SMs beside their GEMMs
  // while it waits for the last: 1.66x over one GPU instead of 1.79x on two H200s
  // (bench/RESULTS.md). With kvstore "device", where every pair of the GPUs has peer access, the
  // buckets' sums run on the GPUs' copy engines instead (Note [copy-engine all-reduce] in
  // cuda/peer_reduce.hpp), which wait without SMs, and the buckets are used. Otherwise (kvstore
  // "nccl", or no peer access) the sums follow backward, unless optimizer_params give
  // bucket_cap_mb. With buckets, once the last context's backward has returned, the gradients are
  // the sums, and work queued between the contexts' backward calls must neither read nor write
  // their gradients (a read that waits for the value, such as asvector, may). step (and update)
  // then updates each bucket's parameters as soon as that bucket's sum is done, beside the later
  // sums (Note [updates in turn] in gluon/gradient_buckets.hpp).
  // Parameters are bucketed when the Trainer is made or at a step, once they are initialised; the
  // parameters with grad_req "add" are summed in step.
  //
  // optimizer_params may also hold the Trainer's own {"check_finite", 1}: every step then checks
  // the gradients (one multi_all_finite per parameter, read back: a wait for the GPU) and throws
  // mx::NonFiniteError naming the parameters whose gradient holds an inf or a nan, before anything
  // is updated. (Under a loss scaler such a step is skipped instead.)
  //
  // One update of every parameter with grad_req != "null", the gradients scaled by 1/batch_size
  // (times rescale_grad), at the scheduled learning rate when there is a scheduler (Note [update
  // count]). A parameter on several contexts first has its gradients summed over them, so that
  // every copy gets the same update. With a loss scaler (amp::init_trainer) the gradients are
  // also divided by its scale, and a step whose gradients hold an inf or a nan updates nothing
  // (and counts no update) and lowers the scale.
  void step(std::int64_t batch_size);
  // The gradient reduction alone (step does it), and the update alone. Both queue their work on
  // each context's stream and return without waiting.
  void allreduce_grads();
  void update(std::int64_t batch_size);

  // The optimizer's rate; with a scheduler, scheduler(num_update()), as MXNet's learning_rate
  // property (which calls, and so may advance, the scheduler).
  double learning_rate() const;
  // mx::ValueError naming lr, and the rate unchanged, unless lr is finite and >= 0; also when the
  // rate follows a scheduler (MXNet raises then too: the next step would overwrite it).
  void set_learning_rate(double lr);
  Optimizer& optimizer() { return *optimizer_; }
  // The parameters of each gradient bucket, the first summed first (Note [gradient buckets]);
  // empty where there are none.
  std::vector<std::vector<std::string>> bucket_layout() const;
  // The scheduler given to the constructor, or null.
  const std::shared_ptr<lr_scheduler::LRScheduler>& lr_scheduler() const { return lr_scheduler_; }
  // The updates made so far (MXNet's optimizer.num_update; Note [update count]).
  std::int64_t num_update() const { return num_update_; }

  // Note [trainer states]: gluon.Trainer's save_states / load_states, in MXNet's NDArray file (the
  // key layout: docs/FILE_FORMATS.md, "Trainer states"). The file holds what the next steps depend
  // on: every parameter copy's optimizer state arrays (optimizer().state_names()), float32 master
  // copy and update counts, num_update, the optimizer's name, state count and learning rate, the
  // lr_scheduler's position (LRScheduler::state) and the loss scaler's scale and counts. So that
  //
  //   net.save_parameters("net.params"); trainer.save_states("net.states");
  //   ... a new net and Trainer (the same optimizer and hyper-parameters, scheduler, loss scaler):
  //   net.load_parameters("net.params", ctx); trainer.load_states("net.states");
  //
  // makes the next steps those the first Trainer would have made, bit for bit. Load the parameters
  // first: a parameter given new values after load_states gets its master copy made again from
  // them (Parameter::data_version). The hyper-parameters themselves (momentum, betas, wd, the
  // scheduler's kind and settings) are the Trainer's: they are not in the file, which MXNet's
  // pickled optimizer holds.
  //
  // Parameters are matched by their place in the Trainer's dict, as MXNet's Trainer keys its states
  // by index (a net made again in the same process, "dense1_weight" for "dense0_weight", loads
  // them); the file records each name, which errors show. States of copy c go to the copy on the
  // parameter's c-th context; a copy the file lacks (saved on fewer contexts) gets copy 0's, which
  // every copy equals after a step, as MXNet loads one updater's states into every device's.
  //
  // save_states: mx::FileError naming the path when it cannot be written (an old file is then
  // unchanged). load_states checks the whole file against this Trainer before anything changes,
  // and throws, naming the path and the parameter: mx::FileError for a file that is missing,
  // truncated or corrupt, or not a Trainer states file (an unknown entry, a scalar of the wrong
  // dtype or shape, a count < 0); mx::ValueError for another optimizer or state count, another
  // parameter set (a parameter missing or extra), a scheduler or loss scaler here and not in the
  // file or the other way round, or a scheduler of another kind or position; mx::ShapeError /
  // mx::DTypeError for a state whose shape or dtype does not fit its parameter.
  void save_states(const std::string& path) const;
  void load_states(const std::string& path);
  // The bytes save_states writes, and load_states of bytes already read (`source` names them in
  // errors as the path does).
  std::string save_states_tobuffer() const;
  void load_states_frombuffer(std::string_view bytes, const std::string& source = "");

  // amp's dynamic loss scaling (gluon/amp.hpp); null: none.
  void set_loss_scaler(std::shared_ptr<amp::LossScaler> scaler) { loss_scaler_ = std::move(scaler); }
  const std::shared_ptr<amp::LossScaler>& loss_scaler() const { return loss_scaler_; }

 private:
  // Throws, before anything changes, unless batch_size > 0 and every trained parameter is
  // initialised with a floating-point gradient of its own shape on each of its contexts (each a
  // GPU with kvstore "nccl").
  void check_ready(const char* op, std::int64_t batch_size) const;
  void apply_updates(const char* op, std::int64_t batch_size, double loss_scale = 1);
  // optimizer_->update_multi of these, a bucket at a time (Note [updates in turn]); names[i]: the
  // parameter of keys[i].
  void update_in_turn(const std::vector<StateKey>& keys, const std::vector<nd::NDArray>& weights,
                      const std::vector<nd::NDArray>& grads, const std::vector<const std::string*>& names);
  // With a loss scaler: false, and the scale lowered, when the gradients overflowed; else true,
  // with loss_scale set to the scale the loss was multiplied with. Without one: true.
  bool unscale(double& loss_scale);

  ParameterDict params_;
  std::unique_ptr<Optimizer> optimizer_;
  std::shared_ptr<lr_scheduler::LRScheduler> lr_scheduler_;  // null: the optimizer's own rate
  std::map<StateKey, std::int64_t> update_counts_;  // updates of each parameter copy
  // Each parameter's data_version at its last update: a newer one (set_data, load_parameters)
  // makes the optimizer's master copies again from the weights.
  std::map<std::size_t, std::uint64_t> data_versions_;
  std::int64_t num_update_ = 0;  // the largest of update_counts_
  double rescale_grad_ = 1;
  nd::ReduceAlgo reduce_algo_;
  bool dist_ = false;                // kvstore dist_sync
  std::set<std::string> broadcast_;  // parameters made rank 0's already (dist_sync)
  void broadcast_new_parameters();
  std::shared_ptr<amp::LossScaler> loss_scaler_;
  bool check_finite_ = false;
  std::size_t bucket_cap_bytes_;  // Note [gradient buckets]; 0: none
  bool bucket_cap_given_;         // bucket_cap_mb was in optimizer_params
  std::shared_ptr<GradientBuckets> buckets_;
  // The gradients that go to buckets, from the parameters initialised now; and buckets for them
  // when there are none yet, or new ones when the parameters changed (made again, re-initialised).
  void prepare_buckets();
  // Throws mx::NonFiniteError naming the trained parameters whose gradient is not finite.
  void check_gradients_finite(const char* op) const;
};

}  // namespace mx::gluon
