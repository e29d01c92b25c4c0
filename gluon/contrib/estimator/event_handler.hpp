#pragma once
// The Estimator's event handlers, as mxnet.gluon.contrib.estimator.event_handler (MXNet 1.9).
//
// A handler derives from the events it reacts to (TrainBegin, TrainEnd, EpochBegin, EpochEnd,
// BatchBegin, BatchEnd) and is given to Estimator::fit or evaluate as a shared_ptr, so that the
// caller can read it afterwards:
//
//   class PrintLoss : public estimator::EpochEnd {
//    public:
//     bool epoch_end(estimator::Estimator& est) override {
//       for (auto& m : est.train_metrics()) std::cout << m->get().first << " " << m->get().second << "\n";
//       return false;  // true stops the training
//     }
//   };
//   est.fit(train, &val, 10, {std::make_shared<PrintLoss>()});
//
// Note [handler order]: at each event the handlers run in ascending priority() (MXNet's sort, which
// is stable: equal priorities keep their order, the caller's handlers before the defaults fit adds).
// GradientUpdateHandler (-2000) steps the trainer first, then MetricHandler and ValidationHandler
// (-1000) update the metrics, then the handlers of priority 0 (the default: StoppingHandler,
// CheckpointHandler, EarlyStoppingHandler and the caller's) read them, and LoggingHandler (+inf)
// prints last. Every batch_end (epoch_end) handler runs; training stops after them when any
// returned true.
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gluon/data/data_loader.hpp"
#include "gluon/metric.hpp"
#include "ndarray/core/array.hpp"

namespace mx::gluon::contrib::estimator {

class Estimator;

using MetricPtr = std::shared_ptr<metric::EvalMetric>;
using Metrics = std::vector<MetricPtr>;

// One batch through the net, per context: its slices of the data and the labels
// (utils::split_and_load), the predictions and the per-sample losses (B_k,).
struct BatchResult {
  std::vector<nd::NDArray> data, label, pred, loss;
};

class EventHandler {
 public:
  virtual ~EventHandler() = default;
  // Note [handler order]; MXNet's default, for a handler without one, is 0.
  virtual double priority() const { return 0; }
  // The metrics the handler reads. When the caller's handlers are mixed with the defaults fit adds,
  // each of these must be one of the Estimator's train_metrics or val_metrics (MXNet's
  // _check_handler_metric_ref).
  virtual Metrics metrics_used() const { return {}; }
};

class TrainBegin : public virtual EventHandler {
 public:
  virtual void train_begin(Estimator& estimator) = 0;
};

class TrainEnd : public virtual EventHandler {
 public:
  virtual void train_end(Estimator& estimator) = 0;
};

class EpochBegin : public virtual EventHandler {
 public:
  virtual void epoch_begin(Estimator& estimator) = 0;
};

class EpochEnd : public virtual EventHandler {
 public:
  // true: stop training after this epoch.
  virtual bool epoch_end(Estimator& estimator) = 0;
};

class BatchBegin : public virtual EventHandler {
 public:
  // batch: as the loader gave it.
  virtual void batch_begin(Estimator& estimator, const data::Batch& batch) = 0;
};

class BatchEnd : public virtual EventHandler {
 public:
  // batch: as the loader gave it; result: what fit_batch (or evaluate_batch) made of it. true:
  // stop training after this batch.
  virtual bool batch_end(Estimator& estimator, const data::Batch& batch, const BatchResult& result) = 0;
};

using EventHandlers = std::vector<std::shared_ptr<EventHandler>>;

// Stops the training after max_epoch epochs or max_batch batches (0: no limit), which train_begin
// takes from the Estimator (fit's epochs / batches). fit always adds one.
class StoppingHandler : public TrainBegin, public BatchEnd, public EpochEnd {
 public:
  explicit StoppingHandler(std::int64_t max_epoch = 0, std::int64_t max_batch = 0)
      : max_epoch_(max_epoch), max_batch_(max_batch) {}
  void train_begin(Estimator& estimator) override;
  bool batch_end(Estimator& estimator, const data::Batch& batch, const BatchResult& result) override;
  bool epoch_end(Estimator& estimator) override;

  std::int64_t current_epoch() const { return current_epoch_; }
  std::int64_t current_batch() const { return current_batch_; }
  bool stop_training() const { return stop_training_; }

 private:
  std::int64_t max_epoch_, max_batch_, current_epoch_ = 0, current_batch_ = 0;
  bool stop_training_ = false;
};

// Resets the metrics at each epoch's start and updates them at each batch's end: a metric::Loss
// with the losses, the others with the labels and the predictions, one pair per context.
class MetricHandler : public EpochBegin, public BatchEnd {
 public:
  explicit MetricHandler(Metrics metrics, double priority = -1000);
  void epoch_begin(Estimator& estimator) override;
  bool batch_end(Estimator& estimator, const data::Batch& batch, const BatchResult& result) override;
  double priority() const override { return priority_; }
  Metrics metrics_used() const override { return metrics_; }

 private:
  Metrics metrics_;
  double priority_;
};

// Runs eval_fn(val_data, batch_axis) every epoch_period epochs and every batch_period batches (0:
// never). The caller keeps val_data alive while the training runs. fit adds one that calls the
// Estimator's evaluate when it is given validation data.
class ValidationHandler : public TrainBegin, public BatchEnd, public EpochEnd {
 public:
  using EvalFn = std::function<void(data::DataLoader& val_data, int batch_axis)>;
  // mx::ValueError for a negative period or an empty eval_fn.
  ValidationHandler(data::DataLoader& val_data, EvalFn eval_fn, std::int64_t epoch_period = 1,
                    std::int64_t batch_period = 0, double priority = -1000);
  void train_begin(Estimator& estimator) override;
  bool batch_end(Estimator& estimator, const data::Batch& batch, const BatchResult& result) override;
  bool epoch_end(Estimator& estimator) override;
  double priority() const override { return priority_; }

 private:
  data::DataLoader* val_data_;
  EvalFn eval_fn_;
  std::int64_t epoch_period_, batch_period_, current_epoch_ = 0, current_batch_ = 0;
  double priority_;
};

// Reports the training on the Estimator's logger (std::cout unless set_logger changed it): the
// optimizer and the length at the start, a line per epoch with its time, learning rate and every
// metric given ("[Epoch 2] Finished in 0.512s, learning rate 0.1000, training accuracy: 0.8672,
// ..."), and the totals at the end; with log_interval k > 0 also a line every k batches (MXNet's
// log_interval=k; 0 is MXNet's 'epoch'). Evaluating alone (metrics without "training" in their
// names), one line: "Validation finished in 0.041s, validation accuracy: 0.8516, ...".
// While stdout and stderr are both terminals, a progress bar on stderr is redrawn after each batch
// and erased at the epoch's end, as the tutorials draw it (tutorials/training.hpp); in a log (a file,
// a pipe) the lines above are the whole output. mx::ValueError for a negative log_interval.
class LoggingHandler : public TrainBegin,
                       public TrainEnd,
                       public EpochBegin,
                       public EpochEnd,
                       public BatchBegin,
                       public BatchEnd {
 public:
  explicit LoggingHandler(std::int64_t log_interval = 0, Metrics metrics = {},
                          double priority = std::numeric_limits<double>::infinity());
  void train_begin(Estimator& estimator) override;
  void train_end(Estimator& estimator) override;
  void epoch_begin(Estimator& estimator) override;
  bool epoch_end(Estimator& estimator) override;
  void batch_begin(Estimator& estimator, const data::Batch& batch) override;
  bool batch_end(Estimator& estimator, const data::Batch& batch, const BatchResult& result) override;
  double priority() const override { return priority_; }
  Metrics metrics_used() const override { return metrics_; }

 private:
  std::string metric_values() const;  // "training accuracy: 0.8672, ..."
  bool training() const;              // whether the metrics are training ones (MXNet's name test)
  std::int64_t log_interval_;
  Metrics metrics_;
  double priority_;
  std::int64_t current_epoch_ = 0, batch_index_ = 0, processed_samples_ = 0;
  double train_start_ = 0, epoch_start_ = 0, batch_start_ = 0, interval_time_ = 0;
  bool progress_drawn_ = false;
};

// CheckpointHandler's settings, with MXNet's names and defaults.
struct CheckpointOptions {
  std::string model_prefix = "model";
  // The metric that decides the best checkpoint (one of the Estimator's train or val metrics).
  MetricPtr monitor = nullptr;
  int verbose = 0;         // > 0: a line on the logger for every checkpoint saved (and a symbol file not)
  bool save_best = false;  // also keep <prefix>-best.params / .states for the best monitored value
  // "min", "max", or "auto": max for a monitor whose name holds "acc" or "f1", min otherwise.
  std::string mode = "auto";
  std::int64_t epoch_period = 1;  // save every epoch_period epochs (0: never at an epoch's end)
  std::int64_t batch_period = 0;  // save every batch_period batches (0: never at a batch's end)
  std::int64_t max_checkpoints = 5;  // the epoch/batch checkpoints kept; older ones are removed
  // At train_begin, load the latest checkpoint of model_dir (parameters and trainer states) and
  // train only what is left of fit's epochs (batches).
  bool resume_from_checkpoint = false;
};

// Saves the parameters (Block::save_parameters) and the trainer's states (Trainer::save_states)
// into model_dir as MXNet's CheckpointHandler names them: <prefix>-epoch<E>batch<B>.params and
// .states, where E counts the epochs finished and B the batches (at an epoch's end, every batch so
// far; at a batch's end, that batch's index), <prefix>-best.params / .states with save_best, and
// <prefix>-symbol.json after the first batch when the net is hybridized (its graph, as
// Block::export_model writes it; with verbose, a line says when it is not). With resume_from_checkpoint, the checkpoint of the largest epoch,
// then batch, is loaded at train_begin, fit's epochs (batches) become what is left, and the later
// checkpoints are numbered on from it: resuming at an epoch's end continues as the first run
// would have (with a loader that does not shuffle, whose epochs are the same).
//
// Differences from MXNet 1.9, on purpose: mode "auto" uses max only for "acc" and "f1" (MXNet's test
// `'acc' or 'f1' in name` always holds); an unknown mode is an mx::ValueError (MXNet warns and
// uses auto); removing an old checkpoint removes its two files, not every file whose name starts
// with its prefix; the checkpoints found when resuming count towards max_checkpoints.
//
// Errors: model_dir is made if missing; a folder that cannot be made or written is an
// mx::FileError naming it, thrown by the constructor and again by train_begin, before anything
// trains. mx::ValueError for save_best without a monitor, an unknown mode, a negative period or
// max_checkpoints < 1; at train_begin when resuming, for periods of the other kind than fit's
// (epochs and batch_period, or batches and epoch_period), a file named like a checkpoint whose
// numbers do not parse, and a checkpoint that already reached fit's epochs (batches);
// mx::FileError for a checkpoint whose .states file is missing; and the errors of load_parameters
// and load_states.
class CheckpointHandler : public TrainBegin, public BatchEnd, public EpochEnd {
 public:
  explicit CheckpointHandler(std::string model_dir, CheckpointOptions options = {});
  void train_begin(Estimator& estimator) override;
  bool batch_end(Estimator& estimator, const data::Batch& batch, const BatchResult& result) override;
  bool epoch_end(Estimator& estimator) override;
  Metrics metrics_used() const override { return options_.monitor ? Metrics{options_.monitor} : Metrics{}; }

  const std::string& model_dir() const { return model_dir_; }
  // The prefixes of the checkpoints kept, oldest first ("model-epoch3batch12").
  const std::vector<std::string>& saved_checkpoints() const { return saved_checkpoints_; }
  // The best monitored value so far (save_best).
  double best() const { return best_; }
  // Where resume_from_checkpoint found its checkpoint (-1: none found).
  std::int64_t trained_epoch() const { return trained_epoch_; }
  std::int64_t trained_batch() const { return trained_batch_; }

 private:
  void save_checkpoint(Estimator& estimator);
  void save_params_and_trainer(Estimator& estimator, const std::string& prefix);
  void save_symbol(Estimator& estimator);
  void resume(Estimator& estimator);
  bool improved(double value) const;
  std::string model_dir_;
  CheckpointOptions options_;
  bool maximize_ = false;
  double best_ = 0;
  std::int64_t current_epoch_ = 0, current_batch_ = 0, trained_epoch_ = -1, trained_batch_ = -1;
  std::vector<std::string> saved_checkpoints_;
};

// Stops the training when the monitored metric has not improved for `patience` epochs: an epoch
// improves when its value beats the best so far (or baseline, when given) by more than min_delta,
// in the direction of mode ("min", "max", or "auto": max for a name holding "acc" or "f1", min
// otherwise; see CheckpointHandler for MXNet's own test). An epoch whose value is NaN (a metric not
// updated) is skipped with a line on the logger. mx::ValueError for no monitor, an unknown mode,
// and a negative patience or min_delta.
class EarlyStoppingHandler : public TrainBegin, public EpochEnd, public TrainEnd {
 public:
  explicit EarlyStoppingHandler(MetricPtr monitor, double min_delta = 0, std::int64_t patience = 0,
                                const std::string& mode = "auto", std::optional<double> baseline = std::nullopt);
  void train_begin(Estimator& estimator) override;
  bool epoch_end(Estimator& estimator) override;
  void train_end(Estimator& estimator) override;
  Metrics metrics_used() const override { return {monitor_}; }

  // The epoch (from 0) at whose end the training stopped; 0 also when it did not stop (MXNet's).
  std::int64_t stopped_epoch() const { return stopped_epoch_; }
  std::int64_t wait() const { return wait_; }
  double best() const { return best_; }
  bool stop_training() const { return stop_training_; }

 private:
  MetricPtr monitor_;
  double min_delta_;
  std::int64_t patience_;
  bool maximize_ = false;
  std::optional<double> baseline_;
  double best_ = 0;
  std::int64_t wait_ = 0, stopped_epoch_ = 0, current_epoch_ = 0;
  bool stop_training_ = false;
};

// Steps the trainer at each batch's end with the batch's sample count (the losses' lengths summed
// over the contexts). fit adds one unless given one.
class GradientUpdateHandler : public BatchEnd {
 public:
  explicit GradientUpdateHandler(double priority = -2000) : priority_(priority) {}
  bool batch_end(Estimator& estimator, const data::Batch& batch, const BatchResult& result) override;
  double priority() const override { return priority_; }

 private:
  double priority_;
};

}  // namespace mx::gluon::contrib::estimator
