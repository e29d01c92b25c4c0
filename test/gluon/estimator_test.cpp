// gluon::contrib::estimator: fit against the hand-written loop it stands for (bit for bit, on every
// context and data-parallel over all of them), a regression whose loss falls, the default metrics,
// the handlers' order, stopping by batches and early, the checkpoints' files (MXNet's names, the
// best one, the symbol file, the oldest removed), resuming from them, the log, and the errors.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"
#include "test/support/files.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gluon/amp.hpp>
#include <gluon/contrib/estimator.hpp>
#include <gluon/data.hpp>
#include <gluon/loss.hpp>
#include <gluon/lr_scheduler.hpp>
#include <gluon/metric.hpp>
#include <gluon/nn.hpp>
#include <gluon/trainer.hpp>
#include <gluon/utils.hpp>
#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace gluon = mx::gluon;
namespace nn = mx::gluon::nn;
namespace gdata = mx::gluon::data;
namespace est = mx::gluon::contrib::estimator;
namespace ag = mx::autograd;
namespace fs = std::filesystem;
namespace tt = boost::test_tools;
using mx::DType;
using ndg_test::Values;

namespace {

// 24 samples of 4 features and 3 classes (the largest of three fixed projections), batches of 8:
// three per epoch.
constexpr std::int64_t kSamples = 24, kBatch = 8;

gdata::ArrayDataset classification(unsigned seed) {
  const Values x = ndg_test::uniform_values(kSamples * 4, seed);
  Values labels;
  for (std::int64_t i = 0; i < kSamples; ++i) {
    const double* r = &x[static_cast<std::size_t>(i * 4)];
    const double s[3] = {r[0] + r[1], r[2] - r[0], r[3] - r[1]};
    labels.push_back(static_cast<double>(std::max_element(s, s + 3) - s));
  }
  return {nd::array(x, {kSamples, 4}, mx::cpu(), DType::float32), nd::array(labels, {kSamples}, mx::cpu(), DType::float32)};
}

// y = X·(2, -3.4, 1.7) + 4.2, (N, 1).
gdata::ArrayDataset regression(unsigned seed) {
  const Values x = ndg_test::uniform_values(kSamples * 3, seed);
  Values y;
  for (std::int64_t i = 0; i < kSamples; ++i) {
    const double* r = &x[static_cast<std::size_t>(i * 3)];
    y.push_back(2 * r[0] - 3.4 * r[1] + 1.7 * r[2] + 4.2);
  }
  return {nd::array(x, {kSamples, 3}, mx::cpu(), DType::float32), nd::array(y, {kSamples, 1}, mx::cpu(), DType::float32)};
}

// 4 -> 8 (tanh) -> 3, with the same values every time, on ctxs.
nn::Sequential classifier(const std::vector<mx::Context>& ctxs) {
  nn::Sequential net;
  net.add(nn::Dense(8, "tanh", true, 4), nn::Dense(3, "", true, 8));
  net.initialize(mx::init::Zero(), ctxs);
  unsigned seed = 11;
  for (auto& [name, param] : net.collect_params()) {
    param.set_data(nd::array(ndg_test::uniform_values(static_cast<std::size_t>(param.shape().numel()), seed++),
                             param.shape(), mx::cpu(), DType::float32));
  }
  return net;
}

std::shared_ptr<gluon::Trainer> sgd(nn::Sequential& net, double lr = 0.1) {
  return std::make_shared<gluon::Trainer>(net.collect_params(), "sgd",
                                          gluon::HyperParams{{"learning_rate", lr}, {"momentum", 0.9}});
}

// Every parameter copy's values, in order.
std::vector<Values> parameters(const nn::Sequential& net) {
  std::vector<Values> values;
  for (const auto& [name, param] : net.collect_params()) {
    for (const nd::NDArray& copy : param.list_data()) values.push_back(ndg_test::values(copy));
  }
  return values;
}

void check_same_parameters(const nn::Sequential& got, const nn::Sequential& want) {
  const std::vector<Values> a = parameters(got), b = parameters(want);
  BOOST_TEST_REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) BOOST_TEST(a[i] == b[i], "parameter copy " << i << tt::per_element());
}

// Records each event it sees, after `tag`, in a shared log; and what the Estimator showed then.
class Recorder : public est::TrainBegin,
                 public est::TrainEnd,
                 public est::EpochBegin,
                 public est::EpochEnd,
                 public est::BatchBegin,
                 public est::BatchEnd {
 public:
  Recorder(std::string tag, double priority, std::shared_ptr<std::vector<std::string>> log)
      : tag_(std::move(tag)), priority_(priority), log_(std::move(log)) {}
  double priority() const override { return priority_; }
  void train_begin(est::Estimator&) override { log_->push_back(tag_ + ":train_begin"); }
  void train_end(est::Estimator&) override { log_->push_back(tag_ + ":train_end"); }
  void epoch_begin(est::Estimator&) override { log_->push_back(tag_ + ":epoch_begin"); }
  bool epoch_end(est::Estimator& e) override {
    log_->push_back(tag_ + ":epoch_end");
    std::vector<double> values;
    for (const auto& m : e.train_metrics()) values.push_back(m->get().second);
    for (const auto& m : e.val_metrics()) values.push_back(m->get().second);
    epoch_metrics.push_back(values);
    return false;
  }
  void batch_begin(est::Estimator&, const gdata::Batch&) override { log_->push_back(tag_ + ":batch_begin"); }
  bool batch_end(est::Estimator& e, const gdata::Batch&, const est::BatchResult& result) override {
    log_->push_back(tag_ + ":batch_end");
    num_updates.push_back(e.trainer().num_update());
    metric_counts.push_back(e.train_metrics()[0]->num_inst());
    batch_slices.push_back(result.loss.size());
    return false;
  }
  std::vector<std::vector<double>> epoch_metrics;  // train then validation metrics, per epoch
  std::vector<std::int64_t> num_updates, metric_counts;
  std::vector<std::size_t> batch_slices;

 private:
  std::string tag_;
  double priority_;
  std::shared_ptr<std::vector<std::string>> log_;
};

std::shared_ptr<Recorder> recorder(double priority = 0, const std::string& tag = "r") {
  return std::make_shared<Recorder>(tag, priority, std::make_shared<std::vector<std::string>>());
}

// What Estimator::fit stands for, written out: per epoch the metrics reset, per batch the slices
// through the net under record, backward (of the scaled loss with a loss scaler), one step, the
// metrics updated; then the validation metrics over the validation data.
struct HandLoop {
  HandLoop(nn::Sequential n, std::vector<mx::Context> c) : net(std::move(n)), ctxs(std::move(c)) {}
  nn::Sequential net;
  std::shared_ptr<gluon::Trainer> trainer;
  std::vector<mx::Context> ctxs;
  mx::metric::Accuracy acc{"training accuracy"};
  mx::metric::Loss loss_metric{"training softmaxcrossentropyloss"};
  mx::metric::Accuracy val_acc{"validation accuracy"};
  mx::metric::Loss val_loss{"validation softmaxcrossentropyloss"};
  std::vector<std::vector<double>> epoch_metrics;

  void fit(gdata::DataLoader& train, gdata::DataLoader& val, int epochs) {
    const gluon::loss::SoftmaxCrossEntropyLoss loss;
    for (int epoch = 0; epoch < epochs; ++epoch) {
      acc.reset();
      loss_metric.reset();
      for (auto& [X, y] : train) {
        const auto xs = gluon::utils::split_and_load(X, ctxs, 0, false), ys = gluon::utils::split_and_load(y, ctxs, 0, false);
        std::vector<nd::NDArray> preds, losses, heads;
        {
          auto recording = ag::record();
          for (std::size_t k = 0; k < xs.size(); ++k) {
            preds.push_back(net(xs[k]));
            losses.push_back(loss(preds.back(), ys[k]));
            heads.push_back(trainer->loss_scaler() ? mx::amp::scale_loss(losses.back(), *trainer) : losses.back());
          }
        }
        for (const auto& h : heads) h.backward();
        trainer->step(X.shape()[0]);
        acc.update(ys, preds);
        loss_metric.update(ys, losses);
      }
      val_acc.reset();
      val_loss.reset();
      for (auto& [X, y] : val) {
        const auto xs = gluon::utils::split_and_load(X, ctxs, 0, false), ys = gluon::utils::split_and_load(y, ctxs, 0, false);
        for (std::size_t k = 0; k < xs.size(); ++k) {
          const nd::NDArray pred = net(xs[k]);
          val_acc.update(ys[k], pred);
          val_loss.update(loss(pred, ys[k]));
        }
      }
      epoch_metrics.push_back({acc.get().second, loss_metric.get().second, val_acc.get().second, val_loss.get().second});
    }
  }
};

// fit of an Estimator on ctxs against HandLoop, with `make_trainer`'s trainer.
void check_fit_equals_hand_loop(const std::vector<mx::Context>& ctxs,
                                const std::function<std::shared_ptr<gluon::Trainer>(nn::Sequential&)>& make_trainer) {
  constexpr int epochs = 3;
  const gdata::ArrayDataset train_set = classification(1), val_set = classification(2);
  mx::random::seed(3);  // the shuffled order of the training batches
  gdata::DataLoader train(train_set, kBatch, /*shuffle=*/true), val(val_set, kBatch);
  nn::Sequential net = classifier(ctxs);
  est::Estimator estimator(net, gluon::loss::SoftmaxCrossEntropyLoss(), {}, make_trainer(net), ctxs);
  std::ostringstream log;
  estimator.set_logger(log);
  const auto r = recorder();
  estimator.fit(train, &val, epochs, {r});

  mx::random::seed(3);
  gdata::DataLoader hand_train(train_set, kBatch, true), hand_val(val_set, kBatch);
  HandLoop hand(classifier(ctxs), ctxs);
  hand.trainer = make_trainer(hand.net);
  hand.fit(hand_train, hand_val, epochs);

  check_same_parameters(net, hand.net);
  BOOST_TEST(estimator.trainer().num_update() == hand.trainer->num_update());
  BOOST_TEST_REQUIRE(r->epoch_metrics.size() == hand.epoch_metrics.size());
  for (std::size_t e = 0; e < hand.epoch_metrics.size(); ++e) {
    BOOST_TEST(r->epoch_metrics[e] == hand.epoch_metrics[e], "epoch " << e << tt::per_element());
  }
  // Each batch split over the contexts.
  for (std::size_t slices : r->batch_slices) BOOST_TEST(slices == ctxs.size());
}

}  // namespace

BOOST_AUTO_TEST_SUITE(estimator)

BOOST_AUTO_TEST_CASE(fit_equals_the_hand_written_loop_bit_for_bit) {
  const std::vector<std::pair<std::string, std::function<std::shared_ptr<gluon::Trainer>(nn::Sequential&)>>> trainers = {
      {"sgd", [](nn::Sequential& net) { return sgd(net); }},
      {"adam with a schedule and a loss scaler", [](nn::Sequential& net) {
         auto t = std::make_shared<gluon::Trainer>(net.collect_params(), "adam", gluon::HyperParams{{"learning_rate", 0.05}},
                                                   std::make_shared<mx::lr_scheduler::FactorScheduler>(2, 0.5));
         mx::amp::init_trainer(*t, std::make_shared<mx::amp::LossScaler>(256.0, 2.0, 2));
         return t;
       }},
  };
  for (const auto& trainer : trainers) {
    const std::string& name = trainer.first;
    const auto& make = trainer.second;
    ndg_test::for_each_context([&](mx::Context ctx) {
      BOOST_TEST_CONTEXT(name) { check_fit_equals_hand_loop({ctx}, make); }
    });
    BOOST_TEST_CONTEXT(name << ", data-parallel on every context") {
      check_fit_equals_hand_loop(ndg_test::all_contexts(), make);
    }
  }
}

BOOST_AUTO_TEST_CASE(the_loss_of_a_regression_falls) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const gdata::ArrayDataset train_set = regression(5), val_set = regression(6);
    gdata::DataLoader train(train_set, kBatch, true), val(val_set, kBatch);
    nn::Dense net(1, "", true, 3);
    net.initialize(mx::init::Normal(0.01), ctx);
    auto trainer = std::make_shared<gluon::Trainer>(net.collect_params(), "sgd", gluon::HyperParams{{"learning_rate", 0.1}});
    est::Estimator estimator(net, gluon::loss::L2Loss(), {}, trainer, {ctx});
    std::ostringstream log;
    estimator.set_logger(log);
    BOOST_TEST_REQUIRE(estimator.train_metrics().size() == 1u);  // no accuracy for a regression
    BOOST_TEST(estimator.train_metrics()[0]->name() == "training l2loss");
    BOOST_TEST(estimator.val_metrics()[0]->name() == "validation l2loss");
    const auto r = recorder();
    estimator.fit(train, &val, 30, {r});
    BOOST_TEST_REQUIRE(r->epoch_metrics.size() == 30u);
    const double first = r->epoch_metrics.front()[0], last = r->epoch_metrics.back()[0];
    BOOST_TEST(last < first / 100, "training loss " << first << " -> " << last);
    BOOST_TEST(r->epoch_metrics.back()[1] < 0.05);  // validation
    const Values w = ndg_test::values(net.weight().data(ctx));
    BOOST_TEST(std::abs(w[0] - 2.0) < 0.3);
    BOOST_TEST(std::abs(w[1] + 3.4) < 0.3);
  });
}

BOOST_AUTO_TEST_CASE(default_metrics_context_initialisation_and_trainer) {
  nn::Sequential net;
  net.add(nn::Dense(3, "", true, 4));
  est::Estimator estimator(net, gluon::loss::SoftmaxCrossEntropyLoss());
  std::vector<std::string> names;
  for (const auto& m : estimator.train_metrics()) names.push_back(m->name());
  for (const auto& m : estimator.val_metrics()) names.push_back(m->name());
  BOOST_TEST(names == (std::vector<std::string>{"training accuracy", "training softmaxcrossentropyloss",
                                                "validation accuracy", "validation softmaxcrossentropyloss"}),
             tt::per_element());
  BOOST_TEST(estimator.val_metrics()[0] != estimator.train_metrics()[0]);  // copies
  BOOST_TEST(estimator.context() == std::vector<mx::Context>{mx::num_gpus() > 0 ? mx::gpu(0) : mx::cpu()});
  for (const auto& [name, param] : net.collect_params()) BOOST_TEST(param.is_initialized());
  BOOST_TEST(estimator.trainer().optimizer().name() == std::string("sgd"));
  BOOST_TEST(estimator.trainer().optimizer().learning_rate() == 0.001);
  // Given metrics are the same objects, renamed; validation ones "training" -> "validation".
  auto top3 = std::make_shared<mx::metric::TopKAccuracy>(3);
  auto given_val = std::make_shared<mx::metric::Accuracy>("training acc");
  nn::Sequential other;
  other.add(nn::Dense(3, "", true, 4));
  est::Estimator named(other, gluon::loss::SoftmaxCrossEntropyLoss(), {top3}, nullptr, {mx::cpu()}, {given_val});
  BOOST_TEST(named.train_metrics()[0] == top3);
  BOOST_TEST(top3->name() == "training top_k_accuracy_3");
  BOOST_TEST(given_val->name() == "validation acc");
}

BOOST_AUTO_TEST_CASE(fit_by_batches_stops_within_an_epoch) {
  const gdata::ArrayDataset data = classification(1);
  gdata::DataLoader train(data, kBatch);
  nn::Sequential net = classifier({mx::cpu()});
  est::Estimator estimator(net, gluon::loss::SoftmaxCrossEntropyLoss(), {}, sgd(net), {mx::cpu()});
  std::ostringstream log;
  estimator.set_logger(log);
  const auto r = recorder();
  estimator.fit(train, nullptr, 0, {r}, /*batches=*/5);
  BOOST_TEST(estimator.trainer().num_update() == 5);
  BOOST_TEST(r->epoch_metrics.size() == 2u);  // 3 batches, then 2 and the epoch's end
  BOOST_TEST(log.str().find("Train for 5 batches.") != std::string::npos);
}

// Note [handler order]: ascending priority, the caller's before the defaults at equal priority;
// the defaults' work seen where it must be.
BOOST_AUTO_TEST_CASE(handlers_run_in_the_order_of_their_priorities) {
  const gdata::ArrayDataset data = classification(1);
  gdata::DataLoader train(data, kBatch);
  nn::Sequential net = classifier({mx::cpu()});
  est::Estimator estimator(net, gluon::loss::SoftmaxCrossEntropyLoss(), {}, sgd(net), {mx::cpu()});
  std::ostringstream log;
  estimator.set_logger(log);
  auto shared = std::make_shared<std::vector<std::string>>();
  const auto late = std::make_shared<Recorder>("late", 5, shared);
  const auto first = std::make_shared<Recorder>("first", -3000, shared);  // before the step
  const auto between = std::make_shared<Recorder>("between", -1500, shared);  // after the step, before the metrics
  const auto zero_a = std::make_shared<Recorder>("zero_a", 0, shared), zero_b = std::make_shared<Recorder>("zero_b", 0, shared);
  const auto last = std::make_shared<Recorder>("last", std::numeric_limits<double>::infinity(), shared);
  estimator.fit(train, nullptr, 1, {late, zero_a, last, between, first, zero_b});
  const auto events = [&](const std::string& event) {
    std::vector<std::string> tags;
    for (const std::string& entry : *shared) {
      if (entry.size() > event.size() && entry.compare(entry.size() - event.size(), event.size(), event) == 0 &&
          entry[entry.size() - event.size() - 1] == ':') {
        tags.push_back(entry.substr(0, entry.size() - event.size() - 1));
      }
    }
    return tags;
  };
  const std::vector<std::string> order = {"first", "between", "zero_a", "zero_b", "late", "last"};
  BOOST_TEST(events("train_begin") == order, tt::per_element());
  BOOST_TEST(events("epoch_end") == order, tt::per_element());
  std::vector<std::string> three = order;
  for (int i = 0; i < 2; ++i) three.insert(three.end(), order.begin(), order.end());
  BOOST_TEST(events("batch_end") == three, tt::per_element());
  BOOST_TEST(first->num_updates == (std::vector<std::int64_t>{0, 1, 2}), tt::per_element());
  BOOST_TEST(between->num_updates == (std::vector<std::int64_t>{1, 2, 3}), tt::per_element());
  BOOST_TEST(between->metric_counts == (std::vector<std::int64_t>{0, 8, 16}), tt::per_element());
  BOOST_TEST(zero_a->metric_counts == (std::vector<std::int64_t>{8, 16, 24}), tt::per_element());
}

BOOST_AUTO_TEST_CASE(early_stopping_stops_at_the_right_epoch) {
  const gdata::ArrayDataset train_set = classification(1), val_set = classification(2);
  const auto run = [&](double lr, const std::function<std::shared_ptr<est::EarlyStoppingHandler>(est::Estimator&)>& make,
                       int epochs = 10) {
    gdata::DataLoader train(train_set, kBatch), val(val_set, kBatch);
    nn::Sequential net = classifier({mx::cpu()});
    est::Estimator estimator(net, gluon::loss::SoftmaxCrossEntropyLoss(), {}, sgd(net, lr), {mx::cpu()});
    std::ostringstream log;
    estimator.set_logger(log);
    const auto handler = make(estimator);
    const auto r = recorder();
    estimator.fit(train, &val, epochs, {handler, r});
    return std::make_tuple(handler, r->epoch_metrics.size(), log.str());
  };
  // A constant loss (lr 0): better than +inf at epoch 0, then not; patience 2 stops at epoch 2.
  {
    const auto [h, epochs, log] = run(0.0, [](est::Estimator& e) {
      return std::make_shared<est::EarlyStoppingHandler>(e.val_metrics()[1], 0, 2, "min");
    });
    BOOST_TEST(epochs == 3u);
    BOOST_TEST(h->stopped_epoch() == 2);
    BOOST_TEST(h->stop_training());
    BOOST_TEST(log.find("[Epoch 2] EarlyStoppingHandler: early stopping due to validation softmaxcrossentropyloss "
                        "not improving") != std::string::npos);
  }
  // A baseline no loss beats: stops at the first epoch's end (stopped_epoch 0, as MXNet).
  {
    const auto [h, epochs, log] = run(0.1, [](est::Estimator& e) {
      return std::make_shared<est::EarlyStoppingHandler>(e.val_metrics()[1], 0, 1, "min", -1.0);
    });
    BOOST_TEST(epochs == 1u);
    BOOST_TEST(h->stopped_epoch() == 0);
    BOOST_TEST(h->best() == -1.0);
  }
  // A falling loss with a min_delta larger than any fall: stops at epoch 1 with patience 1.
  {
    const auto [h, epochs, log] = run(0.1, [](est::Estimator& e) {
      return std::make_shared<est::EarlyStoppingHandler>(e.train_metrics()[1], 1e9, 1, "min");
    });
    BOOST_TEST(epochs == 2u);
    BOOST_TEST(h->stopped_epoch() == 1);
  }
  // The same loss in mode "auto" (min for a loss) keeps improving: all 6 epochs; in mode "max" it
  // never improves after the first.
  {
    const auto [h, epochs, log] = run(0.1, [](est::Estimator& e) {
      return std::make_shared<est::EarlyStoppingHandler>(e.train_metrics()[1], 0, 1, "auto");
    }, 6);
    BOOST_TEST(epochs == 6u);
    BOOST_TEST(!h->stop_training());
    const auto [h2, epochs2, log2] = run(0.1, [](est::Estimator& e) {
      return std::make_shared<est::EarlyStoppingHandler>(e.train_metrics()[1], 0, 1, "max");
    }, 6);
    BOOST_TEST(epochs2 == 2u);
  }
}

BOOST_AUTO_TEST_CASE(checkpoints_are_written_with_mxnets_names) {
  const ndg_test::TempDir dir;
  const gdata::ArrayDataset train_set = classification(1), val_set = classification(2);
  gdata::DataLoader train(train_set, kBatch), val(val_set, kBatch);
  nn::Sequential net = classifier({mx::cpu()});
  net.hybridize();
  est::Estimator estimator(net, gluon::loss::SoftmaxCrossEntropyLoss(), {}, sgd(net), {mx::cpu()});
  std::ostringstream log;
  estimator.set_logger(log);
  const std::string folder = dir.file("ckpt");  // made by the handler
  const auto checkpoints = std::make_shared<est::CheckpointHandler>(
      folder, est::CheckpointOptions{.model_prefix = "net", .monitor = estimator.val_metrics()[0], .verbose = 1,
                                     .save_best = true, .epoch_period = 1, .batch_period = 2, .max_checkpoints = 2});
  estimator.fit(train, &val, 2, {checkpoints});
  // Saved in turn: epoch0batch1, epoch0batch3 (epoch 0's end), epoch1batch3, epoch1batch5,
  // epoch1batch6 (epoch 1's end); the last two kept.
  std::set<std::string> files;
  for (const auto& entry : fs::directory_iterator(folder)) files.insert(entry.path().filename().string());
  const std::set<std::string> want = {"net-epoch1batch5.params", "net-epoch1batch5.states", "net-epoch1batch6.params",
                                      "net-epoch1batch6.states", "net-best.params",         "net-best.states",
                                      "net-symbol.json"};
  BOOST_TEST(files == want, tt::per_element());
  BOOST_TEST(checkpoints->saved_checkpoints() == (std::vector<std::string>{"net-epoch1batch5", "net-epoch1batch6"}),
             tt::per_element());
  BOOST_TEST(log.str().find("saving model at " + folder + " with prefix: net-epoch0batch1") != std::string::npos);
  // The last checkpoint is the trained net; its states load into a new Trainer.
  nn::Sequential loaded = classifier({mx::cpu()});
  loaded.load_parameters(folder + "/net-epoch1batch6.params", mx::cpu());
  check_same_parameters(loaded, net);
  gluon::Trainer trainer(loaded.collect_params(), "sgd", {{"learning_rate", 0.1}, {"momentum", 0.9}});
  trainer.load_states(folder + "/net-epoch1batch6.states");
  BOOST_TEST(trainer.num_update() == 6);
  // The symbol file is MXNet's JSON of the net.
  const std::string json = ndg_test::read_bytes(folder + "/net-symbol.json");
  BOOST_TEST(json.find("\"FullyConnected\"") != std::string::npos);
  // A net that is not hybridized: no symbol file, and a line saying so.
  const ndg_test::TempDir other;
  nn::Sequential eager = classifier({mx::cpu()});
  est::Estimator eager_estimator(eager, gluon::loss::SoftmaxCrossEntropyLoss(), {}, sgd(eager), {mx::cpu()});
  std::ostringstream eager_log;
  eager_estimator.set_logger(eager_log);
  eager_estimator.fit(train, nullptr, 1,
                      {std::make_shared<est::CheckpointHandler>(other.str(), est::CheckpointOptions{.verbose = 1})});
  BOOST_TEST(fs::exists(other.file("model-epoch0batch3.params")));
  BOOST_TEST(fs::exists(other.file("model-epoch0batch3.states")));
  BOOST_TEST(!fs::exists(other.file("model-symbol.json")));
  BOOST_TEST(eager_log.str().find("not saved") != std::string::npos);
}

// Training 2 epochs, then resuming to 4 from the checkpoints, equals 4 epochs at once, bit for
// bit, with the same checkpoint names.
BOOST_AUTO_TEST_CASE(resuming_from_a_checkpoint_continues_identically) {
  const gdata::ArrayDataset train_set = classification(1);
  const auto make_trainer = [](nn::Sequential& net) {
    return std::make_shared<gluon::Trainer>(net.collect_params(), "adam", gluon::HyperParams{{"learning_rate", 0.05}},
                                            std::make_shared<mx::lr_scheduler::FactorScheduler>(4, 0.5));
  };
  const auto run = [&](const std::string& folder, int epochs, bool resume, nn::Sequential& net) {
    gdata::DataLoader train(train_set, kBatch);
    est::Estimator estimator(net, gluon::loss::SoftmaxCrossEntropyLoss(), {}, make_trainer(net), {mx::cpu()});
    std::ostringstream log;
    estimator.set_logger(log);
    const auto handler = std::make_shared<est::CheckpointHandler>(
        folder, est::CheckpointOptions{.max_checkpoints = 10, .resume_from_checkpoint = resume});
    estimator.fit(train, nullptr, epochs, {handler});
    return std::make_pair(handler, log.str());
  };
  const auto files = [](const std::string& folder) {
    std::set<std::string> names;
    for (const auto& entry : fs::directory_iterator(folder)) names.insert(entry.path().filename().string());
    return names;
  };
  const ndg_test::TempDir straight_dir, paused_dir;
  nn::Sequential straight = classifier({mx::cpu()});
  run(straight_dir.str(), 4, false, straight);

  nn::Sequential first = classifier({mx::cpu()});
  run(paused_dir.str(), 2, false, first);
  nn::Sequential resumed = classifier({mx::cpu()});
  const auto [handler, log] = run(paused_dir.str(), 4, true, resumed);
  BOOST_TEST(handler->trained_epoch() == 1);
  BOOST_TEST(handler->trained_batch() == 6);
  BOOST_TEST(log.find("checkpoint resumed from epoch 1 batch 6, continue to train for 2 epochs") != std::string::npos);
  check_same_parameters(resumed, straight);
  BOOST_TEST(files(paused_dir.str()) == files(straight_dir.str()), tt::per_element());
  // Resuming again: the checkpoint reached the 4 epochs.
  nn::Sequential again = classifier({mx::cpu()});
  BOOST_CHECK_EXCEPTION(run(paused_dir.str(), 4, true, again), mx::ValueError,
                        ndg_test::message_has({"model-epoch3batch12", "4 epochs"}));
  // No checkpoint: from scratch, and a line saying so.
  const ndg_test::TempDir empty;
  nn::Sequential scratch = classifier({mx::cpu()});
  const auto [none, none_log] = run(empty.str(), 1, true, scratch);
  BOOST_TEST(none->trained_epoch() == -1);
  BOOST_TEST(none_log.find("no checkpoint found, training from scratch for 1 epochs") != std::string::npos);
  BOOST_TEST(fs::exists(empty.file("model-epoch0batch3.params")));
}

BOOST_AUTO_TEST_CASE(resuming_by_batches) {
  const ndg_test::TempDir dir;
  const gdata::ArrayDataset train_set = classification(1);
  const auto run = [&](int batches, bool resume) {
    gdata::DataLoader train(train_set, kBatch);
    nn::Sequential net = classifier({mx::cpu()});
    est::Estimator estimator(net, gluon::loss::SoftmaxCrossEntropyLoss(), {}, sgd(net), {mx::cpu()});
    std::ostringstream log;
    estimator.set_logger(log);
    estimator.fit(train, nullptr, 0,
                  {std::make_shared<est::CheckpointHandler>(
                      dir.str(), est::CheckpointOptions{.epoch_period = 0, .batch_period = 2, .resume_from_checkpoint = resume})},
                  batches);
    return estimator.trainer().num_update();
  };
  BOOST_TEST(run(4, false) == 4);  // saves model-epoch0batch1 and model-epoch1batch3
  BOOST_TEST(fs::exists(dir.file("model-epoch1batch3.params")));
  BOOST_TEST(run(7, true) == 7);  // loads 4 updates' states, trains 3 more batches
  BOOST_TEST(fs::exists(dir.file("model-epoch2batch5.params")));  // MXNet's numbering after a resume
}

BOOST_AUTO_TEST_CASE(checkpoint_errors) {
  const ndg_test::TempDir dir;
  // A folder that cannot be made (a file is in the way), before any training.
  ndg_test::write_bytes(dir.file("file"), "x");
  NDG_CHECK_THROWS_WITH(est::CheckpointHandler(dir.file("file/ckpt")), mx::FileError, dir.file("file/ckpt"));
  NDG_CHECK_THROWS_WITH(est::CheckpointHandler(dir.file("file")), mx::FileError, dir.file("file"));
  NDG_CHECK_THROWS_WITH(est::CheckpointHandler(dir.str(), {.save_best = true}), mx::ValueError, "save_best", "monitor");
  const auto monitor = std::make_shared<mx::metric::Accuracy>();
  NDG_CHECK_THROWS_WITH(est::CheckpointHandler(dir.str(), {.monitor = monitor, .mode = "largest"}), mx::ValueError,
                        "'largest'");
  NDG_CHECK_THROWS_WITH(est::CheckpointHandler(dir.str(), {.epoch_period = -1}), mx::ValueError, "epoch_period", "-1");
  NDG_CHECK_THROWS_WITH(est::CheckpointHandler(dir.str(), {.max_checkpoints = 0}), mx::ValueError, "max_checkpoints");

  const gdata::ArrayDataset data = classification(1);
  gdata::DataLoader train(data, kBatch);
  nn::Sequential net = classifier({mx::cpu()});
  est::Estimator estimator(net, gluon::loss::SoftmaxCrossEntropyLoss(), {}, sgd(net), {mx::cpu()});
  std::ostringstream log;
  estimator.set_logger(log);
  // The folder removed after the handler was made: train_begin says so before a step.
  const std::string gone = dir.file("gone");
  const auto handler = std::make_shared<est::CheckpointHandler>(gone);
  fs::remove_all(gone);
  ndg_test::write_bytes(gone, "now a file");
  NDG_CHECK_THROWS_WITH(estimator.fit(train, nullptr, 1, {handler}), mx::FileError, gone);
  BOOST_TEST(estimator.trainer().num_update() == 0);
  // Resuming with a period of the other kind.
  const std::string folder = dir.file("resume");
  NDG_CHECK_THROWS_WITH(
      estimator.fit(train, nullptr, 1,
                    {std::make_shared<est::CheckpointHandler>(folder, est::CheckpointOptions{.batch_period = 2,
                                                                                             .resume_from_checkpoint = true})}),
      mx::ValueError, "same kind of period");
  // A file named like a checkpoint whose numbers do not parse; a checkpoint without its .states.
  ndg_test::write_bytes(folder + "/model-epochXbatch1.params", "x");
  const auto resume = std::make_shared<est::CheckpointHandler>(folder, est::CheckpointOptions{.resume_from_checkpoint = true});
  NDG_CHECK_THROWS_WITH(estimator.fit(train, nullptr, 3, {resume}), mx::ValueError, "model-epochXbatch1.params");
  fs::remove(folder + "/model-epochXbatch1.params");
  net.save_parameters(folder + "/model-epoch0batch3.params");
  NDG_CHECK_THROWS_WITH(estimator.fit(train, nullptr, 3, {resume}), mx::FileError, "model-epoch0batch3.states");
  BOOST_TEST(estimator.trainer().num_update() == 0);
}

BOOST_AUTO_TEST_CASE(the_log_has_a_line_per_epoch) {
  const gdata::ArrayDataset train_set = classification(1), val_set = classification(2);
  gdata::DataLoader train(train_set, kBatch), val(val_set, kBatch);
  nn::Sequential net = classifier({mx::cpu()});
  est::Estimator estimator(net, gluon::loss::SoftmaxCrossEntropyLoss(), {}, sgd(net), {mx::cpu()});
  std::ostringstream log;
  estimator.set_logger(log);
  estimator.fit(train, &val, 2);
  std::vector<std::string> lines;
  std::istringstream in(log.str());
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  BOOST_TEST_REQUIRE(lines.size() == 5u, log.str());
  BOOST_TEST(lines[0] == "Training begin: using optimizer sgd with current learning rate 0.1000");
  BOOST_TEST(lines[1] == "Train for 2 epochs.");
  for (int e = 0; e < 2; ++e) {
    const std::string& line = lines[static_cast<std::size_t>(2 + e)];
    BOOST_TEST(line.rfind("[Epoch " + std::to_string(e) + "] Finished in ", 0) == 0, line);
    for (const char* part : {"learning rate 0.1000", "training accuracy: ", "training softmaxcrossentropyloss: ",
                             "validation accuracy: ", "validation softmaxcrossentropyloss: "}) {
      BOOST_TEST(line.find(part) != std::string::npos, line << " lacks " << part);
    }
  }
  BOOST_TEST(lines[4].rfind("Train finished using total ", 0) == 0, lines[4]);
  BOOST_TEST(lines[4].find("with 2 epochs. training accuracy: ") != std::string::npos, lines[4]);
  // Every k batches with log_interval k; evaluate alone, one line.
  std::ostringstream batches;
  estimator.set_logger(batches);
  estimator.fit(train, nullptr, 1, {std::make_shared<est::LoggingHandler>(2, estimator.train_metrics())});
  BOOST_TEST(batches.str().find("[Epoch 0][Batch 0][Samples 8] time/interval: ") != std::string::npos, batches.str());
  BOOST_TEST(batches.str().find("[Epoch 0][Batch 2][Samples 24]") != std::string::npos, batches.str());
  BOOST_TEST(batches.str().find("[Batch 1]") == std::string::npos);
  std::ostringstream evaluation;
  estimator.set_logger(evaluation);
  estimator.evaluate(val);
  const std::string evaluated = evaluation.str();
  BOOST_TEST(evaluated.rfind("Validation finished in ", 0) == 0, evaluated);
  BOOST_TEST(std::count(evaluated.begin(), evaluated.end(), '\n') == 1);
  BOOST_TEST(estimator.val_metrics()[0]->num_inst() == kSamples);
}

// A metric that cannot be copied, for the error when no val_metrics are given.
class Plain : public mx::metric::EvalMetric {
 public:
  Plain() : EvalMetric("Plain", "plain") {}

 protected:
  Measure evaluate(const nd::NDArray&, const nd::NDArray& preds) const override { return {0, preds.shape()[0]}; }
};

BOOST_AUTO_TEST_CASE(estimator_and_handler_errors) {
  const gdata::ArrayDataset data = classification(1);
  gdata::DataLoader train(data, kBatch);
  nn::Sequential net = classifier({mx::cpu()});
  est::Estimator estimator(net, gluon::loss::SoftmaxCrossEntropyLoss(), {}, sgd(net), {mx::cpu()});
  std::ostringstream log;
  estimator.set_logger(log);
  NDG_CHECK_THROWS_WITH(estimator.fit(train), mx::ValueError, "exactly one of epochs and batches");
  NDG_CHECK_THROWS_WITH(estimator.fit(train, nullptr, 2, {}, 3), mx::ValueError, "exactly one");
  NDG_CHECK_THROWS_WITH(estimator.fit(train, nullptr, -1), mx::ValueError, "epochs -1");
  // A handler that reads a metric the Estimator does not update.
  const auto foreign = std::make_shared<mx::metric::Accuracy>("mine");
  NDG_CHECK_THROWS_WITH(estimator.fit(train, nullptr, 1, {std::make_shared<est::EarlyStoppingHandler>(foreign)}),
                        mx::ValueError, "'mine'", "train_metrics");
  BOOST_TEST(estimator.trainer().num_update() == 0);
  NDG_CHECK_THROWS_WITH(est::EarlyStoppingHandler(nullptr), mx::ValueError, "monitor");
  NDG_CHECK_THROWS_WITH(est::EarlyStoppingHandler(foreign, 0, -1), mx::ValueError, "patience", "-1");
  NDG_CHECK_THROWS_WITH(est::EarlyStoppingHandler(foreign, 0, 0, "up"), mx::ValueError, "'up'");
  NDG_CHECK_THROWS_WITH(est::LoggingHandler(-2), mx::ValueError, "log_interval", "-2");
  NDG_CHECK_THROWS_WITH(est::ValidationHandler(train, nullptr), mx::ValueError, "eval_fn");
  // Contexts that do not exist; a metric that cannot be copied into a validation metric.
  nn::Sequential other = classifier({mx::cpu()});
  NDG_CHECK_THROWS_WITH(est::Estimator(other, gluon::loss::L2Loss(), {}, nullptr, {mx::gpu(mx::num_gpus() + 3)}),
                        mx::DeviceError, "gpu(" + std::to_string(mx::num_gpus() + 3) + ")");
  NDG_CHECK_THROWS_WITH(est::Estimator(other, gluon::loss::L2Loss(), {std::make_shared<Plain>()}, nullptr, {mx::cpu()}),
                        mx::ValueError, "Plain", "clone");
  BOOST_CHECK_NO_THROW(est::Estimator(other, gluon::loss::L2Loss(), {std::make_shared<Plain>()}, nullptr, {mx::cpu()},
                                      {std::make_shared<Plain>()}));
}

BOOST_AUTO_TEST_SUITE_END()
