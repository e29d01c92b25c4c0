#include "gluon/contrib/estimator/event_handler.hpp"

#include <unistd.h>  // isatty

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <system_error>

#include "context/error.hpp"
#include "gluon/contrib/estimator/estimator.hpp"
#include "ndarray/core/describe.hpp"

namespace mx::gluon::contrib::estimator {

namespace fs = std::filesystem;

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// "%.4f", "%.3f" of value.
std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", digits, value);
  return text;
}

void check_period(const char* handler, const char* what, std::int64_t period) {
  if (period < 0) {
    throw ValueError(std::string(handler) + ": " + what + " must be >= 0 (0: never), got " + std::to_string(period));
  }
}

// Whether a monitored metric is better when larger: mode "max", or "auto" with "acc" or "f1" in its
// name (MXNet's intent; see CheckpointHandler).
bool maximizes(const char* handler, const std::string& mode, const metric::EvalMetric& monitor) {
  if (mode == "max") return true;
  if (mode == "min") return false;
  if (mode != "auto") {
    throw ValueError(std::string(handler) + ": mode must be 'auto', 'min' or 'max', got '" + mode + "'");
  }
  std::string name = monitor.name();
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name.find("acc") != std::string::npos || name.find("f1") != std::string::npos;
}

// The tutorials' rule (tutorials/training.hpp, draws_progress): a bar only when standard output and
// error are both terminals, and the lines go to standard output.
bool draws_progress(const Estimator& estimator) {
  static const bool terminal = isatty(fileno(stdout)) == 1 && isatty(fileno(stderr)) == 1;
  return terminal && &estimator.logger() == &std::cout;
}

// "  [=========>          ] 120/235" on stderr, redrawn in place.
void draw_progress(std::int64_t done, std::int64_t total) {
  constexpr int width = 30;
  const int filled = total > 0 ? static_cast<int>(width * std::min(done, total) / total) : width;
  std::string bar(static_cast<std::size_t>(width), ' ');
  for (int i = 0; i < filled; ++i) bar[static_cast<std::size_t>(i)] = '=';
  if (filled < width) bar[static_cast<std::size_t>(filled)] = '>';
  std::fprintf(stderr, "\r  [%s] %lld/%lld", bar.c_str(), static_cast<long long>(done), static_cast<long long>(total));
  std::fflush(stderr);
}

void erase_progress() {
  std::fprintf(stderr, "\r%*s\r", 60, "");
  std::fflush(stderr);
}

// Throws mx::FileError unless `folder` exists (made if missing) and a file can be written in it.
void check_writable_folder(const char* handler, const std::string& folder) {
  std::error_code error;
  fs::create_directories(folder, error);
  if (error || !fs::is_directory(folder)) {
    throw FileError(std::string(handler) + ": cannot make the checkpoint folder '" + folder +
                    "': " + (error ? error.message() : "a file of that name exists"));
  }
  const fs::path probe = fs::path(folder) / (".ndgluon-write-test-" + std::to_string(::getpid()));
  bool written = false;
  {
    std::ofstream out(probe);
    written = static_cast<bool>(out << "x") && static_cast<bool>(out.flush());
  }
  fs::remove(probe, error);
  if (!written) {
    throw FileError(std::string(handler) + ": the checkpoint folder '" + folder +
                    "' is not writable; give a model_dir this process can write to");
  }
}

}  // namespace

// ---- StoppingHandler ------------------------------------------------------------------------------

void StoppingHandler::train_begin(Estimator& estimator) {
  max_epoch_ = estimator.max_epoch();
  max_batch_ = estimator.max_batch();
  current_epoch_ = current_batch_ = 0;
  stop_training_ = false;
}

bool StoppingHandler::batch_end(Estimator&, const data::Batch&, const BatchResult&) {
  if (++current_batch_ == max_batch_) stop_training_ = true;
  return stop_training_;
}

bool StoppingHandler::epoch_end(Estimator&) {
  if (++current_epoch_ == max_epoch_) stop_training_ = true;
  return stop_training_;
}

// ---- MetricHandler --------------------------------------------------------------------------------

MetricHandler::MetricHandler(Metrics metrics, double priority) : metrics_(std::move(metrics)), priority_(priority) {
  for (const MetricPtr& m : metrics_) {
    if (!m) throw ValueError("MetricHandler: a null metric");
  }
}

void MetricHandler::epoch_begin(Estimator&) {
  for (const MetricPtr& m : metrics_) m->reset();
}

bool MetricHandler::batch_end(Estimator&, const data::Batch&, const BatchResult& result) {
  for (const MetricPtr& m : metrics_) {
    if (dynamic_cast<metric::Loss*>(m.get())) m->update(result.label, result.loss);
    else m->update(result.label, result.pred);
  }
  return false;
}

// ---- ValidationHandler ----------------------------------------------------------------------------

ValidationHandler::ValidationHandler(data::DataLoader& val_data, EvalFn eval_fn, std::int64_t epoch_period,
                                     std::int64_t batch_period, double priority)
    : val_data_(&val_data), eval_fn_(std::move(eval_fn)), epoch_period_(epoch_period), batch_period_(batch_period),
      priority_(priority) {
  if (!eval_fn_) throw ValueError("ValidationHandler: eval_fn is empty");
  check_period("ValidationHandler", "epoch_period", epoch_period);
  check_period("ValidationHandler", "batch_period", batch_period);
}

void ValidationHandler::train_begin(Estimator&) { current_epoch_ = current_batch_ = 0; }

bool ValidationHandler::batch_end(Estimator& estimator, const data::Batch&, const BatchResult&) {
  ++current_batch_;
  if (batch_period_ > 0 && current_batch_ % batch_period_ == 0) eval_fn_(*val_data_, estimator.batch_axis());
  return false;
}

bool ValidationHandler::epoch_end(Estimator& estimator) {
  ++current_epoch_;
  if (epoch_period_ > 0 && current_epoch_ % epoch_period_ == 0) eval_fn_(*val_data_, estimator.batch_axis());
  return false;
}

// ---- LoggingHandler -------------------------------------------------------------------------------

LoggingHandler::LoggingHandler(std::int64_t log_interval, Metrics metrics, double priority)
    : log_interval_(log_interval), metrics_(std::move(metrics)), priority_(priority) {
  if (log_interval < 0) {
    throw ValueError("LoggingHandler: log_interval must be a number of batches > 0, or 0 for a line per epoch; got " +
                     std::to_string(log_interval));
  }
  for (const MetricPtr& m : metrics_) {
    if (!m) throw ValueError("LoggingHandler: a null metric");
  }
}

std::string LoggingHandler::metric_values() const {
  std::string text;
  for (const MetricPtr& m : metrics_) {
    const auto [name, value] = m->get();
    text += (text.empty() ? "" : ", ") + name + ": " + fixed(value, 4);
  }
  return text;
}

bool LoggingHandler::training() const {
  return std::any_of(metrics_.begin(), metrics_.end(),
                     [](const MetricPtr& m) { return m->name().find("training") != std::string::npos; });
}

void LoggingHandler::train_begin(Estimator& estimator) {
  train_start_ = now();
  estimator.logger() << "Training begin: using optimizer " << estimator.trainer().optimizer().name()
                     << " with current learning rate " << fixed(estimator.trainer().optimizer().learning_rate(), 4)
                     << "\n";
  if (estimator.max_epoch() > 0) estimator.logger() << "Train for " << estimator.max_epoch() << " epochs.\n";
  else estimator.logger() << "Train for " << estimator.max_batch() << " batches.\n";
  estimator.logger().flush();
  current_epoch_ = batch_index_ = processed_samples_ = 0;
  interval_time_ = 0;
}

void LoggingHandler::train_end(Estimator& estimator) {
  const double seconds = now() - train_start_;
  std::string line = "Train finished using total " + std::to_string(static_cast<long long>(seconds)) + "s with " +
                     std::to_string(current_epoch_) + " epochs.";
  const std::string values = metric_values();
  estimator.logger() << line << (values.empty() ? "" : " " + values) << "\n";
  estimator.logger().flush();
}

void LoggingHandler::epoch_begin(Estimator&) {
  epoch_start_ = now();
  progress_drawn_ = false;
}

bool LoggingHandler::epoch_end(Estimator& estimator) {
  if (progress_drawn_) erase_progress();
  const double seconds = now() - epoch_start_;
  const std::string values = metric_values();
  if (training()) {
    estimator.logger() << "[Epoch " << current_epoch_ << "] Finished in " << fixed(seconds, 3) << "s, learning rate "
                       << fixed(estimator.trainer().optimizer().learning_rate(), 4)
                       << (values.empty() ? "" : ", " + values) << "\n";
  } else {
    estimator.logger() << "Validation finished in " << fixed(seconds, 3) << "s" << (values.empty() ? "" : ", " + values)
                       << "\n";
  }
  estimator.logger().flush();
  ++current_epoch_;
  batch_index_ = 0;
  return false;
}

void LoggingHandler::batch_begin(Estimator&, const data::Batch&) { batch_start_ = now(); }

bool LoggingHandler::batch_end(Estimator& estimator, const data::Batch& batch, const BatchResult&) {
  processed_samples_ += batch.data.is_none() || batch.data.ndim() == 0 ? 0 : batch.data.shape()[0];
  if (log_interval_ > 0) {
    interval_time_ += now() - batch_start_;
    if (batch_index_ % log_interval_ == 0) {
      if (progress_drawn_) erase_progress();
      const std::string values = metric_values();
      estimator.logger() << "[Epoch " << current_epoch_ << "][Batch " << batch_index_ << "][Samples "
                         << processed_samples_ << "] time/interval: " << fixed(interval_time_, 3) << "s"
                         << (values.empty() ? "" : " " + values) << "\n";
      estimator.logger().flush();
      interval_time_ = 0;
    }
  }
  ++batch_index_;
  if (draws_progress(estimator) && estimator.current_data()) {
    draw_progress(batch_index_, estimator.current_data()->size());
    progress_drawn_ = true;
  }
  return false;
}

// ---- CheckpointHandler ----------------------------------------------------------------------------

CheckpointHandler::CheckpointHandler(std::string model_dir, CheckpointOptions options)
    : model_dir_(std::move(model_dir)), options_(std::move(options)) {
  if (options_.save_best && !options_.monitor) {
    throw ValueError("CheckpointHandler: save_best needs a monitor: one of the metric objects of "
                     "estimator.train_metrics() or estimator.val_metrics()");
  }
  if (options_.monitor) maximize_ = maximizes("CheckpointHandler", options_.mode, *options_.monitor);
  else if (options_.mode != "auto" && options_.mode != "min" && options_.mode != "max") {
    throw ValueError("CheckpointHandler: mode must be 'auto', 'min' or 'max', got '" + options_.mode + "'");
  }
  check_period("CheckpointHandler", "epoch_period", options_.epoch_period);
  check_period("CheckpointHandler", "batch_period", options_.batch_period);
  if (options_.max_checkpoints < 1) {
    throw ValueError("CheckpointHandler: max_checkpoints must be >= 1, got " + std::to_string(options_.max_checkpoints));
  }
  if (options_.model_prefix.empty() || options_.model_prefix.find('/') != std::string::npos) {
    throw ValueError("CheckpointHandler: model_prefix must be a file name without '/', got '" + options_.model_prefix +
                     "'");
  }
  check_writable_folder("CheckpointHandler", model_dir_);
}

bool CheckpointHandler::improved(double value) const { return maximize_ ? value > best_ : value < best_; }

void CheckpointHandler::train_begin(Estimator& estimator) {
  check_writable_folder("CheckpointHandler", model_dir_);  // again: the folder may have gone since
  current_epoch_ = current_batch_ = 0;
  if (options_.save_best) best_ = maximize_ ? -kInfinity : kInfinity;
  if (options_.resume_from_checkpoint) {
    const char* periods = "CheckpointHandler: to resume from a checkpoint, save with the same kind of period as "
                          "you train for: with fit's epochs, epoch_period > 0 and batch_period 0; with batches, "
                          "batch_period > 0 and epoch_period 0";
    if (estimator.max_batch() > 0 && (options_.batch_period == 0 || options_.epoch_period != 0)) throw ValueError(periods);
    if (estimator.max_epoch() > 0 && (options_.epoch_period == 0 || options_.batch_period != 0)) throw ValueError(periods);
    resume(estimator);
  }
}

bool CheckpointHandler::batch_end(Estimator& estimator, const data::Batch&, const BatchResult&) {
  if (current_batch_ == 0) save_symbol(estimator);
  if (options_.batch_period > 0 && (current_batch_ + 1) % options_.batch_period == 0) save_checkpoint(estimator);
  ++current_batch_;
  return false;
}

bool CheckpointHandler::epoch_end(Estimator& estimator) {
  if (options_.epoch_period > 0 && (current_epoch_ + 1) % options_.epoch_period == 0) save_checkpoint(estimator);
  ++current_epoch_;
  return false;
}

void CheckpointHandler::save_checkpoint(Estimator& estimator) {
  // MXNet's numbering: after a resume, on from the checkpoint loaded.
  std::int64_t epoch = current_epoch_, batch = current_batch_;
  if (options_.resume_from_checkpoint && trained_epoch_ >= 0) {
    epoch = current_epoch_ + trained_epoch_ + 1;
    batch = current_batch_ + trained_batch_ + (estimator.max_epoch() > 0 ? 0 : 1);
  }
  const std::string prefix = options_.model_prefix + "-epoch" + std::to_string(epoch) + "batch" + std::to_string(batch);
  save_params_and_trainer(estimator, prefix);
  if (options_.verbose > 0) {
    estimator.logger() << "[Epoch " << current_epoch_ << "] CheckpointHandler: trained total " << current_batch_ + 1
                       << " batches, saving model at " << model_dir_ << " with prefix: " << prefix << "\n";
  }
  if (!options_.save_best) return;
  const auto [name, value] = options_.monitor->get();
  if (std::isnan(value)) {
    estimator.logger() << "CheckpointHandler: skipping save best because " << name << " is not updated; make sure "
                       << "you pass one of the metric objects estimator.train_metrics() and "
                       << "estimator.val_metrics() as monitor\n";
  } else if (improved(value)) {
    if (options_.verbose > 0) {
      estimator.logger() << "[Epoch " << current_epoch_ << "] CheckpointHandler: " << name << " improved from "
                         << fixed(best_, 5) << " to " << fixed(value, 5) << ", updating best model at " << model_dir_
                         << " with prefix: " << options_.model_prefix << "-best\n";
    }
    save_params_and_trainer(estimator, options_.model_prefix + "-best");
    best_ = value;
  } else if (options_.verbose > 0) {
    estimator.logger() << "[Epoch " << current_epoch_ << "] CheckpointHandler: " << name << " did not improve from "
                       << fixed(best_, 5) << ", skipping updating best model\n";
  }
}

void CheckpointHandler::save_params_and_trainer(Estimator& estimator, const std::string& prefix) {
  const fs::path dir(model_dir_);
  estimator.net().save_parameters((dir / (prefix + ".params")).string());
  estimator.trainer().save_states((dir / (prefix + ".states")).string());
  if (prefix == options_.model_prefix + "-best") return;  // not counted
  saved_checkpoints_.push_back(prefix);
  while (static_cast<std::int64_t>(saved_checkpoints_.size()) > options_.max_checkpoints) {
    const std::string oldest = saved_checkpoints_.front();
    saved_checkpoints_.erase(saved_checkpoints_.begin());
    std::error_code ignored;  // a file already gone is no error
    fs::remove(dir / (oldest + ".params"), ignored);
    fs::remove(dir / (oldest + ".states"), ignored);
  }
}

void CheckpointHandler::save_symbol(Estimator& estimator) {
  const fs::path symbol = fs::path(model_dir_) / (options_.model_prefix + "-symbol.json");
  if (!estimator.net().is_hybridized()) {
    if (options_.verbose > 0) {
      estimator.logger() << "Model architecture (symbol file) is not saved: call net.hybridize() before fit to save "
                         << "it as " << symbol.string() << "\n";
    }
    return;
  }
  // export_model writes the graph and the parameters; the parameters go to a folder of their own.
  const fs::path scratch = fs::path(model_dir_) / (".export-" + std::to_string(::getpid()));
  std::error_code error;
  fs::create_directories(scratch, error);
  try {
    estimator.net().export_model((scratch / "net").string());
    fs::rename(scratch / "net-symbol.json", symbol);
  } catch (const std::exception& e) {  // a graph that cannot be exported: training goes on
    estimator.logger() << "Model architecture (symbol file) is not saved: " << e.what() << "\n";
  }
  fs::remove_all(scratch, error);
}

void CheckpointHandler::resume(Estimator& estimator) {
  // The checkpoints in model_dir: <prefix>-epoch<E>batch<B>.params, the largest E, then B.
  const std::string head = options_.model_prefix + "-epoch";
  struct Found {
    std::int64_t epoch, batch;
    std::string prefix;
  };
  std::vector<Found> found;
  for (const fs::directory_entry& entry : fs::directory_iterator(model_dir_)) {
    const std::string file = entry.path().filename().string();
    if (file.rfind(head, 0) != 0 || file.size() < head.size() + 7 || file.compare(file.size() - 7, 7, ".params") != 0) {
      continue;
    }
    const std::string numbers = file.substr(head.size(), file.size() - head.size() - 7);  // "3batch12"
    const std::size_t at = numbers.find("batch");
    const auto parse = [&](const std::string& digits, std::int64_t& out) {
      if (digits.empty() || digits.size() > 15 || digits.find_first_not_of("0123456789") != std::string::npos) {
        return false;
      }
      out = std::stoll(digits);
      return true;
    };
    Found f{0, 0, file.substr(0, file.size() - 7)};
    if (at == std::string::npos || !parse(numbers.substr(0, at), f.epoch) || !parse(numbers.substr(at + 5), f.batch)) {
      throw ValueError("CheckpointHandler: cannot parse the checkpoint file '" + (fs::path(model_dir_) / file).string() +
                       "'; checkpoints are named " + head + "<epoch>batch<batch>.params, each with a .states file");
    }
    found.push_back(f);
  }
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    return a.epoch != b.epoch ? a.epoch < b.epoch : a.batch < b.batch;
  });
  if (found.empty()) {
    trained_epoch_ = trained_batch_ = -1;
    estimator.logger() << "CheckpointHandler: no checkpoint found, training from scratch for "
                       << (estimator.max_batch() > 0 ? std::to_string(estimator.max_batch()) + " batches"
                                                     : std::to_string(estimator.max_epoch()) + " epochs")
                       << "\n";
    return;
  }
  const Found& last = found.back();
  if (estimator.max_epoch() > 0 && last.epoch >= estimator.max_epoch() - 1) {
    throw ValueError("CheckpointHandler: found a checkpoint (" + last.prefix + ") that reached the " +
                     std::to_string(estimator.max_epoch()) + " epochs to train; set resume_from_checkpoint to false "
                     "to train from scratch");
  }
  if (estimator.max_batch() > 0 && last.batch >= estimator.max_batch() - 1) {
    throw ValueError("CheckpointHandler: found a checkpoint (" + last.prefix + ") that reached the " +
                     std::to_string(estimator.max_batch()) + " batches to train; set resume_from_checkpoint to false "
                     "to train from scratch");
  }
  const fs::path dir(model_dir_);
  const std::string params = (dir / (last.prefix + ".params")).string(), states = (dir / (last.prefix + ".states")).string();
  if (!fs::exists(states)) {
    throw FileError("CheckpointHandler: cannot resume from checkpoint " + last.prefix + ": '" + states +
                    "' does not exist (each .params checkpoint has a .states file beside it)");
  }
  estimator.net().load_parameters(params, estimator.context());
  estimator.trainer().load_states(states);
  trained_epoch_ = last.epoch;
  trained_batch_ = last.batch;
  std::string left;
  if (estimator.max_epoch() > 0) {
    estimator.set_max_epoch(estimator.max_epoch() - last.epoch - 1);
    left = std::to_string(estimator.max_epoch()) + " epochs";
  } else {
    estimator.set_max_batch(estimator.max_batch() - last.batch - 1);
    left = std::to_string(estimator.max_batch()) + " batches";
  }
  // The checkpoints found count towards max_checkpoints, oldest first.
  saved_checkpoints_.clear();
  for (const Found& f : found) {
    if (fs::exists(dir / (f.prefix + ".states"))) saved_checkpoints_.push_back(f.prefix);
  }
  estimator.logger() << "CheckpointHandler: checkpoint resumed from epoch " << last.epoch << " batch " << last.batch
                     << ", continue to train for " << left << "\n";
}

// ---- EarlyStoppingHandler -------------------------------------------------------------------------

EarlyStoppingHandler::EarlyStoppingHandler(MetricPtr monitor, double min_delta, std::int64_t patience,
                                           const std::string& mode, std::optional<double> baseline)
    : monitor_(std::move(monitor)), min_delta_(min_delta), patience_(patience), baseline_(baseline) {
  if (!monitor_) {
    throw ValueError("EarlyStoppingHandler: give one of the metric objects of estimator.train_metrics() or "
                     "estimator.val_metrics() as monitor");
  }
  maximize_ = maximizes("EarlyStoppingHandler", mode, *monitor_);
  if (!(min_delta >= 0 && std::isfinite(min_delta))) {
    throw ValueError("EarlyStoppingHandler: min_delta must be a finite number >= 0, got " + nd::shortest_text(min_delta));
  }
  if (patience < 0) throw ValueError("EarlyStoppingHandler: patience must be >= 0, got " + std::to_string(patience));
}

void EarlyStoppingHandler::train_begin(Estimator&) {
  wait_ = stopped_epoch_ = current_epoch_ = 0;
  stop_training_ = false;
  best_ = baseline_ ? *baseline_ : maximize_ ? -kInfinity : kInfinity;
}

bool EarlyStoppingHandler::epoch_end(Estimator& estimator) {
  const auto [name, value] = monitor_->get();
  if (std::isnan(value)) {
    estimator.logger() << "EarlyStoppingHandler: " << name << " is not updated; make sure you pass one of the "
                       << "metric objects of estimator.train_metrics() and estimator.val_metrics() as monitor\n";
  } else if (maximize_ ? value - min_delta_ > best_ : value + min_delta_ < best_) {
    best_ = value;
    wait_ = 0;
  } else if (++wait_ >= patience_) {
    stopped_epoch_ = current_epoch_;
    stop_training_ = true;
  }
  ++current_epoch_;
  return stop_training_;
}

void EarlyStoppingHandler::train_end(Estimator& estimator) {
  if (stopped_epoch_ > 0) {
    estimator.logger() << "[Epoch " << stopped_epoch_ << "] EarlyStoppingHandler: early stopping due to "
                       << monitor_->get().first << " not improving\n";
  }
}

// ---- GradientUpdateHandler ------------------------------------------------------------------------

bool GradientUpdateHandler::batch_end(Estimator& estimator, const data::Batch&, const BatchResult& result) {
  std::int64_t batch_size = 0;
  for (const nd::NDArray& l : result.loss) batch_size += l.ndim() == 0 ? 1 : l.shape()[0];
  estimator.trainer().step(batch_size);
  return false;
}

}  // namespace mx::gluon::contrib::estimator
