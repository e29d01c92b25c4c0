#pragma once
// mx::gluon::contrib::estimator::Estimator: the training loop of MXNet 1.9's
// mxnet.gluon.contrib.estimator, driven by event handlers (event_handler.hpp).
//
//   namespace est = mx::gluon::contrib::estimator;
//   auto trainer = std::make_shared<gluon::Trainer>(net.collect_params(), "sgd", gluon::HyperParams{{"learning_rate", 0.1}});
//   est::Estimator estimator(net, gluon::loss::SoftmaxCrossEntropyLoss(),
//                            {std::make_shared<mx::metric::Accuracy>()}, trainer, {mx::gpu(0), mx::gpu(1)});
//   auto checkpoints = std::make_shared<est::CheckpointHandler>(
//       "ckpt", est::CheckpointOptions{.monitor = estimator.val_metrics()[0], .save_best = true});
//   estimator.fit(train_loader, &val_loader, /*epochs=*/10, {checkpoints});
//
// Each batch of the loader is split over the contexts (utils::split_and_load, the first slices one
// sample larger when it does not divide), each slice goes through the net under
// autograd::record(), and each loss's backward runs (the loss multiplied by the scale first when
// the trainer has a loss scaler: amp::init_trainer); the handlers then step the trainer, update
// the metrics, validate, save, log and stop. So fit makes exactly the steps of the hand-written
// loop (split_and_load, record, backward, trainer.step(batch size), metric updates), bit for bit.
//
// Metrics: those given become the training metrics and are renamed "training <name>" (the same
// objects: a handler given one of them reads what fit measured); without any, the loss's suggested
// metric (Accuracy for SoftmaxCrossEntropyLoss) and a metric::Loss named after the loss
// ("softmaxcrossentropyloss", "l2loss", ...). The validation metrics are copies of those
// (EvalMetric::clone), named "validation <name>", unless given.
//
// Differences from MXNet on purpose: the default LoggingHandler prints the validation metrics on
// the epoch's line, and the validation that fit runs prints nothing of its own (MXNet's evaluate
// logs two lines per validation); a batch that does not divide over the contexts is split unevenly
// rather than refused.
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "context/context.hpp"
#include "gluon/block.hpp"
#include "gluon/contrib/estimator/event_handler.hpp"
#include "gluon/data/data_loader.hpp"
#include "gluon/init.hpp"
#include "gluon/loss.hpp"
#include "gluon/metric.hpp"
#include "gluon/trainer.hpp"

namespace mx::gluon::contrib::estimator {

class Estimator {
 public:
  // net and loss are kept as the same objects (a block is a handle; the loss is copied). Throws,
  // before anything changes: mx::DeviceError for a context that does not exist; mx::ValueError for
  // a null metric, a training metric that cannot be copied when val_metrics are not given, and a
  // net passed as a reference to its base class (its forward would be lost). context: the
  // contexts to train on, default gpu(0) when there is a GPU, else cpu(0) (MXNet's: one GPU).
  // A net whose parameters are not all initialised is initialised on them with initializer (default
  // init::Uniform()), the others left as they are; without a trainer, SGD with learning rate 0.001
  // (MXNet's default, with its warning on stderr).
  template <class Net, class LossFn>
    requires std::is_base_of_v<Block, Net> && std::is_base_of_v<loss::Loss, LossFn>
  Estimator(const Net& net, const LossFn& loss, Metrics train_metrics = {}, std::shared_ptr<Trainer> trainer = nullptr,
            std::vector<Context> context = {}, Metrics val_metrics = {}, init::InitializerRef initializer = {})
      : Estimator(make_net(net), std::make_shared<LossFn>(loss), std::move(train_metrics), std::move(trainer),
                  std::move(context), std::move(val_metrics), std::move(initializer)) {}
  Estimator(std::shared_ptr<Block> net, std::shared_ptr<const loss::Loss> loss, Metrics train_metrics,
            std::shared_ptr<Trainer> trainer, std::vector<Context> context, Metrics val_metrics,
            init::InitializerRef initializer);
  virtual ~Estimator() = default;
  Estimator(const Estimator&) = delete;
  Estimator& operator=(const Estimator&) = delete;

  // Trains for `epochs` epochs or `batches` batches of train_data (exactly one > 0, else
  // mx::ValueError), validating on val_data (when not null) after every epoch. Besides
  // event_handlers, fit adds a StoppingHandler and, unless one of the same kind is given, a
  // GradientUpdateHandler, a MetricHandler of the training metrics, a ValidationHandler (with
  // val_data) and a LoggingHandler of the training and validation metrics; when handlers given and
  // added are mixed, every metric a given one reads must be one of this Estimator's (mx::ValueError
  // naming it). The order: Note [handler order]. batch_axis: the axis of the samples in the data.
  void fit(data::DataLoader& train_data, data::DataLoader* val_data = nullptr, std::int64_t epochs = 0,
           const EventHandlers& event_handlers = {}, std::int64_t batches = 0, int batch_axis = 0);
  // One pass over val_data in prediction mode (outside autograd::record), the validation metrics
  // reset first; adds a MetricHandler of the validation metrics and a LoggingHandler unless given.
  void evaluate(data::DataLoader& val_data, int batch_axis = 0, const EventHandlers& event_handlers = {});

  // One batch, as fit and evaluate run it; override them for another kind of model (MXNet's
  // fit_batch / evaluate_batch). fit_batch records the forward and runs the backward; it does not
  // step the trainer (GradientUpdateHandler does).
  virtual BatchResult fit_batch(const data::Batch& batch, int batch_axis = 0);
  virtual BatchResult evaluate_batch(const data::Batch& batch, int batch_axis = 0);

  Block& net() { return *net_; }
  const loss::Loss& loss() const { return *loss_; }
  Trainer& trainer() { return *trainer_; }
  const std::vector<Context>& context() const { return context_; }
  const Metrics& train_metrics() const { return train_metrics_; }
  const Metrics& val_metrics() const { return val_metrics_; }

  // What fit was asked for, which handlers may change (CheckpointHandler when resuming): 0 for the
  // kind not asked.
  std::int64_t max_epoch() const { return max_epoch_; }
  std::int64_t max_batch() const { return max_batch_; }
  void set_max_epoch(std::int64_t epochs) { max_epoch_ = epochs; }
  void set_max_batch(std::int64_t batches) { max_batch_ = batches; }
  int batch_axis() const { return batch_axis_; }
  // The loader fit or evaluate is going through now (null outside them): its size() is the number
  // of batches of the epoch.
  data::DataLoader* current_data() const { return current_data_; }

  // Where the handlers write their lines (MXNet's estimator.logger): std::cout unless set here. The
  // stream must outlive the Estimator's use of it.
  std::ostream& logger() const { return *logger_; }
  void set_logger(std::ostream& stream) { logger_ = &stream; }

 private:
  template <class Net>
  static std::shared_ptr<Block> make_net(const Net& net) {
    if (typeid(net) != typeid(Net)) throw_sliced(typeid(net).name(), typeid(Net).name());
    return std::make_shared<Net>(net);
  }
  [[noreturn]] static void throw_sliced(const char* dynamic_type, const char* static_type);
  // The handlers fit (evaluate) runs: the given ones and the defaults, checked and in order.
  EventHandlers prepare_fit_handlers(data::DataLoader* val_data, const EventHandlers& given);
  EventHandlers prepare_evaluate_handlers(const EventHandlers& given, bool log);
  // evaluate, and the quiet one fit's ValidationHandler calls (no LoggingHandler added).
  void run_evaluation(data::DataLoader& val_data, int batch_axis, const EventHandlers& given, bool log);
  // The data and labels of a batch, one slice per context.
  void split(const data::Batch& batch, int batch_axis, BatchResult& result) const;

  std::shared_ptr<Block> net_;
  std::shared_ptr<const loss::Loss> loss_;
  Metrics train_metrics_, val_metrics_;
  std::vector<Context> context_;
  std::shared_ptr<Trainer> trainer_;
  std::int64_t max_epoch_ = 0, max_batch_ = 0;
  int batch_axis_ = 0;
  data::DataLoader* current_data_ = nullptr;
  std::ostream* logger_;
};

}  // namespace mx::gluon::contrib::estimator
