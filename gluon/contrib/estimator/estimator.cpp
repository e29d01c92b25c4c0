#include "gluon/contrib/estimator/estimator.hpp"

#include <algorithm>
#include <iostream>
#include <set>

#include "context/device.hpp"
#include "context/error.hpp"
#include "gluon/amp.hpp"
#include "gluon/utils.hpp"
#include "ndarray/autograd/autograd.hpp"

namespace mx::gluon::contrib::estimator {

namespace {

// MXNet's name of a loss block without its counter ("softmaxcrossentropyloss0" less the "0"), for
// the loss metric.
std::string loss_name(const loss::Loss& loss) {
  if (dynamic_cast<const loss::SoftmaxCrossEntropyLoss*>(&loss)) return "softmaxcrossentropyloss";
  if (dynamic_cast<const loss::SigmoidBinaryCrossEntropyLoss*>(&loss)) return "sigmoidbinarycrossentropyloss";
  if (dynamic_cast<const loss::L2Loss*>(&loss)) return "l2loss";
  if (dynamic_cast<const loss::L1Loss*>(&loss)) return "l1loss";
  return "loss";
}

// Python's str.replace(old, new): every occurrence.
std::string replace_all(std::string text, const std::string& old, const std::string& with) {
  for (std::size_t at = text.find(old); at != std::string::npos; at = text.find(old, at + with.size())) {
    text.replace(at, old.size(), with);
  }
  return text;
}

template <class H>
bool has_handler(const EventHandlers& handlers) {
  return std::any_of(handlers.begin(), handlers.end(), [](const auto& h) { return dynamic_cast<H*>(h.get()); });
}

// MXNet's _check_handler_metric_ref: each metric a handler reads is one of `known`.
void check_metric_refs(const char* op, const EventHandlers& handlers, const Metrics& known) {
  for (const auto& handler : handlers) {
    for (const MetricPtr& metric : handler->metrics_used()) {
      if (std::find(known.begin(), known.end(), metric) != known.end()) continue;
      throw ValueError(std::string(op) + ": an event handler reads metric '" + (metric ? metric->name() : "null") +
                       "', which is none of the Estimator's train_metrics and val_metrics; give it one of those "
                       "(estimator.train_metrics()[i], estimator.val_metrics()[i]), which the MetricHandler "
                       "added by default updates");
    }
  }
}

// Stable by priority (MXNet's list.sort): equal priorities keep their order.
void sort_by_priority(EventHandlers& handlers) {
  std::stable_sort(handlers.begin(), handlers.end(),
                   [](const auto& a, const auto& b) { return a->priority() < b->priority(); });
}

// The handlers of each event, in order (MXNet's _categorize_handlers).
template <class Event>
std::vector<Event*> of(const EventHandlers& handlers) {
  std::vector<Event*> out;
  for (const auto& h : handlers) {
    if (auto* e = dynamic_cast<Event*>(h.get())) out.push_back(e);
  }
  return out;
}

}  // namespace

void Estimator::throw_sliced(const char* dynamic_type, const char* static_type) {
  throw ValueError(std::string("Estimator: the net is a ") + dynamic_type + " passed as a " + static_type +
                   "; copied as that type it would lose its own forward. Pass the net as its own type");
}

Estimator::Estimator(std::shared_ptr<Block> net, std::shared_ptr<const loss::Loss> loss, Metrics train_metrics,
                     std::shared_ptr<Trainer> trainer, std::vector<Context> context, Metrics val_metrics,
                     init::InitializerRef initializer)
    : net_(std::move(net)), loss_(std::move(loss)), logger_(&std::cout) {
  if (!net_) throw ValueError("Estimator: net is null");
  if (!loss_) throw ValueError("Estimator: loss is null");
  for (const Metrics* list : {&train_metrics, &val_metrics}) {
    for (const MetricPtr& m : *list) {
      if (!m) throw ValueError("Estimator: a null metric among the train_metrics or val_metrics");
    }
  }
  // The contexts, checked before anything changes.
  if (context.empty()) context = {num_gpus() > 0 ? gpu(0) : cpu()};
  for (Context ctx : context) check_context(ctx);
  // Default training metrics, and the validation ones copied before any is renamed.
  if (train_metrics.empty()) {
    if (dynamic_cast<const loss::SoftmaxCrossEntropyLoss*>(loss_.get())) {
      train_metrics.push_back(std::make_shared<metric::Accuracy>());
    }
    train_metrics.push_back(std::make_shared<metric::Loss>(loss_name(*loss_)));
  }
  if (val_metrics.empty()) {
    for (const MetricPtr& m : train_metrics) val_metrics.push_back(std::shared_ptr<metric::EvalMetric>(m->clone()));
  }
  for (const MetricPtr& m : train_metrics) m->set_name("training " + m->name());
  for (const MetricPtr& m : val_metrics) {
    m->set_name(m->name().find("training") != std::string::npos ? replace_all(m->name(), "training", "validation")
                                                                  : "validation " + m->name());
  }
  train_metrics_ = std::move(train_metrics);
  val_metrics_ = std::move(val_metrics);
  context_ = std::move(context);
  // Initialise what is not (MXNet's _initialize); a net already initialised is left as it is.
  bool all_initialized = true;
  ParameterDict params = net_->collect_params();
  for (auto& [name, param] : params) {
    if (param.is_initialized() || param.is_deferred()) continue;
    all_initialized = false;
    param.initialize(initializer ? *initializer : static_cast<const init::Initializer&>(init::Uniform()), context_);
  }
  if (all_initialized && initializer) {
    std::cerr << "Warning: Estimator: the network is already fully initialized, skipping initialization; use "
                 "net.initialize(init, ctx, /*force_reinit=*/true) to initialize it again\n";
  }
  if (!trainer) {
    std::cerr << "Warning: Estimator: no trainer specified, the default SGD optimizer with learning rate 0.001 is "
                 "used\n";
    trainer = std::make_shared<Trainer>(params, "sgd", HyperParams{{"learning_rate", 0.001}});
  }
  trainer_ = std::move(trainer);
}

void Estimator::split(const data::Batch& batch, int batch_axis, BatchResult& result) const {
  result.data = utils::split_and_load(batch.data, context_, batch_axis, /*even_split=*/false);
  result.label = utils::split_and_load(batch.label, context_, batch_axis, /*even_split=*/false);
}

BatchResult Estimator::fit_batch(const data::Batch& batch, int batch_axis) {
  BatchResult result;
  split(batch, batch_axis, result);
  std::vector<nd::NDArray> heads;
  {
    auto recording = autograd::record();
    for (std::size_t k = 0; k < result.data.size(); ++k) {
      result.pred.push_back((*net_)(result.data[k]));
      result.loss.push_back((*loss_)(result.pred.back(), result.label[k]));
      heads.push_back(trainer_->loss_scaler() ? amp::scale_loss(result.loss.back(), *trainer_) : result.loss.back());
    }
  }
  for (const nd::NDArray& head : heads) head.backward();
  return result;
}

BatchResult Estimator::evaluate_batch(const data::Batch& batch, int batch_axis) {
  BatchResult result;
  split(batch, batch_axis, result);
  for (std::size_t k = 0; k < result.data.size(); ++k) {
    result.pred.push_back((*net_)(result.data[k]));
    result.loss.push_back((*loss_)(result.pred.back(), result.label[k]));
  }
  return result;
}

EventHandlers Estimator::prepare_fit_handlers(data::DataLoader* val_data, const EventHandlers& given) {
  for (const auto& h : given) {
    if (!h) throw ValueError("Estimator::fit: a null event handler");
  }
  EventHandlers handlers = given;
  EventHandlers added;
  added.push_back(std::make_shared<StoppingHandler>(max_epoch_, max_batch_));
  if (!has_handler<GradientUpdateHandler>(given)) added.push_back(std::make_shared<GradientUpdateHandler>());
  if (!has_handler<MetricHandler>(given)) added.push_back(std::make_shared<MetricHandler>(train_metrics_));
  if (!has_handler<ValidationHandler>(given) && val_data) {
    added.push_back(std::make_shared<ValidationHandler>(
        *val_data, [this](data::DataLoader& data, int axis) { run_evaluation(data, axis, {}, /*log=*/false); }));
  }
  if (!has_handler<LoggingHandler>(given)) {
    Metrics logged = train_metrics_;
    if (val_data) logged.insert(logged.end(), val_metrics_.begin(), val_metrics_.end());
    added.push_back(std::make_shared<LoggingHandler>(0, logged));
  }
  if (!given.empty()) {
    Metrics known = train_metrics_;
    known.insert(known.end(), val_metrics_.begin(), val_metrics_.end());
    check_metric_refs("Estimator::fit", given, known);
  }
  handlers.insert(handlers.end(), added.begin(), added.end());
  sort_by_priority(handlers);
  return handlers;
}

void Estimator::fit(data::DataLoader& train_data, data::DataLoader* val_data, std::int64_t epochs,
                    const EventHandlers& event_handlers, std::int64_t batches, int batch_axis) {
  if (epochs < 0 || batches < 0 || (epochs > 0) == (batches > 0)) {
    throw ValueError("Estimator::fit: give exactly one of epochs and batches, a number > 0 (epochs " +
                     std::to_string(epochs) + ", batches " + std::to_string(batches) + ")");
  }
  max_epoch_ = epochs;
  max_batch_ = batches;
  batch_axis_ = batch_axis;
  const EventHandlers handlers = prepare_fit_handlers(val_data, event_handlers);
  const auto train_begin = of<TrainBegin>(handlers);
  const auto epoch_begin = of<EpochBegin>(handlers);
  const auto batch_begin = of<BatchBegin>(handlers);
  const auto batch_end = of<BatchEnd>(handlers);
  const auto epoch_end = of<EpochEnd>(handlers);
  const auto train_end = of<TrainEnd>(handlers);
  struct Current {  // current_data_ for the loop, cleared however it ends
    data::DataLoader*& slot;
    ~Current() { slot = nullptr; }
  } current{current_data_};
  current_data_ = &train_data;
  for (TrainBegin* h : train_begin) h->train_begin(*this);
  while (true) {
    for (EpochBegin* h : epoch_begin) h->epoch_begin(*this);
    for (const data::Batch& batch : train_data) {
      for (BatchBegin* h : batch_begin) h->batch_begin(*this, batch);
      const BatchResult result = fit_batch(batch, batch_axis);
      bool stop = false;
      for (BatchEnd* h : batch_end) stop = h->batch_end(*this, batch, result) || stop;
      if (stop) break;
    }
    bool stop = false;
    for (EpochEnd* h : epoch_end) stop = h->epoch_end(*this) || stop;
    if (stop) break;
  }
  for (TrainEnd* h : train_end) h->train_end(*this);
}

EventHandlers Estimator::prepare_evaluate_handlers(const EventHandlers& given, bool log) {
  for (const auto& h : given) {
    if (!h) throw ValueError("Estimator::evaluate: a null event handler");
  }
  EventHandlers handlers = given;
  EventHandlers added;
  if (!has_handler<MetricHandler>(given)) added.push_back(std::make_shared<MetricHandler>(val_metrics_));
  if (log && !has_handler<LoggingHandler>(given)) added.push_back(std::make_shared<LoggingHandler>(0, val_metrics_));
  if (!given.empty() && !added.empty()) check_metric_refs("Estimator::evaluate", given, val_metrics_);
  handlers.insert(handlers.end(), added.begin(), added.end());
  sort_by_priority(handlers);
  return handlers;
}

void Estimator::evaluate(data::DataLoader& val_data, int batch_axis, const EventHandlers& event_handlers) {
  run_evaluation(val_data, batch_axis, event_handlers, /*log=*/true);
}

void Estimator::run_evaluation(data::DataLoader& val_data, int batch_axis, const EventHandlers& given, bool log) {
  const EventHandlers handlers = prepare_evaluate_handlers(given, log);
  for (const MetricPtr& m : val_metrics_) m->reset();
  data::DataLoader* const outer = current_data_;  // the training loader, when fit validates
  struct Current {
    data::DataLoader*& slot;
    data::DataLoader* restore;
    ~Current() { slot = restore; }
  } current{current_data_, outer};
  current_data_ = &val_data;
  for (EpochBegin* h : of<EpochBegin>(handlers)) h->epoch_begin(*this);
  const auto batch_begin = of<BatchBegin>(handlers);
  const auto batch_end = of<BatchEnd>(handlers);
  for (const data::Batch& batch : val_data) {
    for (BatchBegin* h : batch_begin) h->batch_begin(*this, batch);
    const BatchResult result = evaluate_batch(batch, batch_axis);
    for (BatchEnd* h : batch_end) h->batch_end(*this, batch, result);
  }
  for (EpochEnd* h : of<EpochEnd>(handlers)) h->epoch_end(*this);
}

}  // namespace mx::gluon::contrib::estimator
