// D2L chapter 11 (Optimization Algorithms, MXNet edition) in C++: the experiments of sections 11.5
// to 11.10, linear regression trained by minibatch SGD, momentum, AdaGrad, RMSProp, Adadelta and
// Adam, each from scratch (its update written with nd ops, the gradients from autograd, as the
// book's train_ch11) and concisely (a gluon::Trainer by the optimizer's name, the loop run by the
// Estimator, as the book's train_concise_ch11).
//
//   optimization [--optimizer sgd|momentum|adagrad|rmsprop|adadelta|adam|all] [--ctx cpu|gpu|gpu:N]
//                [--epochs N] [--csv FILE] [--seed N] [--check [--tolerance REL] [--max-loss L]]
//
// The data. The book trains on NASA's airfoil self-noise data (its first 1,500 examples: 5
// features and a target, standardized), which it downloads. This program makes data of that form
// from --seed instead (airfoil_like below): 1,500 examples of 5 standardized features with
// airfoil's correlations, and a standardized target, airfoil's best linear function of them plus
// noise. The noise is orthogonal to the features and sized so that the best linear model's loss
// (squared_loss, (y_hat - y)^2 / 2, averaged) is 0.242 exactly, about what the book's runs come
// down to on airfoil: the final losses printed here read against the book's. Gradient descent
// meets airfoil's own loss surface (kCorrelation below); the minibatch runs see other examples
// with the same moments, and so other noise.
//
// Each run starts from the seed (weights normal(0, 0.01), bias 0, the same minibatches), evaluates
// the loss on the whole data set every 200 examples and at the end, as train_ch11 does, and prints
// its final loss, its training time per epoch (evaluations excluded; the book's timer.avg() is the
// time between two evaluations, though it prints "sec/epoch") and the book's final loss.
// The curves go to a CSV (run, examples_seen, loss) and, when gnuplot is installed, to a PNG next
// to it. --check compares each concise run with the from-scratch run of the same hyper-parameters
// and exits 1 unless their final losses agree within --tolerance (relative) and every final loss
// is at most --max-loss (0.3).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <gluon/contrib/estimator.hpp>
#include <gluon/data.hpp>
#include <gluon/loss.hpp>
#include <gluon/nn.hpp>
#include <gluon/trainer.hpp>
#include <ndarray/ndarray.hpp>

#include "tutorials/cli.hpp"
#include "tutorials/common.hpp"

namespace nd = mx::nd;
namespace nn = mx::gluon::nn;
namespace gdata = mx::gluon::data;
namespace est = mx::gluon::contrib::estimator;

namespace {

// ---------------------------------------------------------------------------------------------
// The data: d2l's get_data_ch11, made rather than downloaded.

constexpr std::int64_t kExamples = 1500, kFeatures = 5;
constexpr double kBestLoss = 0.242;  // the best linear model's loss, by construction
// Airfoil's own second moments, to two or three decimals: its features' correlations (frequency,
// angle of attack, chord length, free-stream velocity, suction side displacement thickness) and
// its least-squares coefficients in standard units (R^2 0.516). The loss on the whole data set is
// a quadratic in w and b that these alone fix, so gradient descent meets the book's loss surface:
// the Hessian's eigenvalues run from 0.18 to 2.10, and with the book's learning rate of 1 the
// steepest direction slowly diverges (|1 - 2.10| > 1) while the others converge: progress stalls
// after a few steps, as the book says, and the loss creeps back up.
constexpr double kCorrelation[kFeatures][kFeatures] = {{1.000, -0.272, -0.004, 0.134, -0.231},
                                                       {-0.272, 1.000, -0.505, 0.059, 0.753},
                                                       {-0.004, -0.505, 1.000, 0.004, -0.221},
                                                       {0.134, 0.059, 0.004, 1.000, -0.003},
                                                       {-0.231, 0.753, -0.221, -0.003, 1.000}};
constexpr double kWeights[kFeatures] = {-0.585, -0.362, -0.485, 0.225, -0.282};

struct Data {
  nd::NDArray features;  // (1500, 5) on cpu(0), each column of mean 0 and variance 1
  nd::NDArray labels;    // (1500,), mean 0 and variance 1
};

using Column = std::vector<double>;  // (1500,)

double dot(const Column& a, const Column& b) {
  double sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
  return sum;
}

// Makes the columns orthonormal, each against those before it (modified Gram-Schmidt).
void orthonormalize(std::vector<Column>& columns) {
  for (std::size_t k = 0; k < columns.size(); ++k) {
    for (std::size_t j = 0; j < k; ++j) {
      const double along = dot(columns[j], columns[k]);
      for (std::size_t i = 0; i < columns[k].size(); ++i) columns[k][i] -= along * columns[j][i];
    }
    const double norm = std::sqrt(dot(columns[k], columns[k]));
    for (double& v : columns[k]) v /= norm;
  }
}

// The lower-triangular L with L L^T = kCorrelation (Cholesky).
std::vector<Column> cholesky() {
  std::vector<Column> L(kFeatures, Column(kFeatures, 0.0));
  for (int i = 0; i < kFeatures; ++i) {
    for (int j = 0; j <= i; ++j) {
      double s = kCorrelation[i][j];
      for (int k = 0; k < j; ++k) s -= L[i][k] * L[j][k];
      L[i][j] = i == j ? std::sqrt(s) : s / L[j][j];
    }
  }
  return L;
}

// Draws 6 columns of normal values from the seed and makes them exactly uncorrelated, of mean 0
// and variance 1 (orthonormal, and orthogonal to a column of ones); the first 5 are mixed into
// features of exactly kCorrelation, the last is the noise. The target, features . kWeights plus
// the noise scaled so that it leaves 2 kBestLoss of the target's variance unexplained, is then
// standardized: the least-squares fit leaves exactly the noise, whose squared_loss is kBestLoss.
Data airfoil_like(std::uint64_t seed) {
  mx::random::seed(seed);
  const std::vector<float> draws = nd::random::normal(0, 1, {kFeatures + 1, kExamples}, mx::cpu()).asvector<float>();
  std::vector<Column> columns = {Column(kExamples, 1.0)};
  for (int k = 0; k <= kFeatures; ++k) {
    columns.emplace_back(draws.begin() + k * kExamples, draws.begin() + (k + 1) * kExamples);
  }
  orthonormalize(columns);
  const double unit = std::sqrt(static_cast<double>(kExamples));  // an orthonormal column times it: variance 1
  const std::vector<Column> L = cholesky();
  // The signal's variance is kWeights' quadratic form in kCorrelation.
  double signal_variance = 0;
  for (int f = 0; f < kFeatures; ++f) {
    for (int g = 0; g < kFeatures; ++g) signal_variance += kWeights[f] * kCorrelation[f][g] * kWeights[g];
  }
  const double noise_scale = std::sqrt(signal_variance * 2 * kBestLoss / (1 - 2 * kBestLoss));
  const double target_scale = std::sqrt(signal_variance + noise_scale * noise_scale);
  std::vector<float> features(kExamples * kFeatures), labels(kExamples);
  for (std::int64_t i = 0; i < kExamples; ++i) {
    double target = noise_scale * unit * columns[kFeatures + 1][i];
    for (int f = 0; f < kFeatures; ++f) {
      double x = 0;
      for (int k = 0; k <= f; ++k) x += L[f][k] * unit * columns[1 + k][i];
      features[i * kFeatures + f] = static_cast<float>(x);
      target += kWeights[f] * x;
    }
    labels[i] = static_cast<float>(target / target_scale);
  }
  return {nd::array(features, {kExamples, kFeatures}, mx::cpu()), nd::array(labels, {kExamples}, mx::cpu())};
}

// ---------------------------------------------------------------------------------------------
// The runs: each section's experiments, with the book's hyper-parameters.

using Params = std::vector<nd::NDArray>;               // {w (5, 1), b (1,)}
using States = std::vector<std::vector<nd::NDArray>>;  // per parameter, zeros like it at first
using HyperParams = std::map<std::string, double>;     // the book's dict of hyper-parameters

// The book's update functions (trainer_fn), one step from the gradients of the mean loss. They
// write the parameters and states in place (the book's p[:] = ...).

void sgd(Params& params, States& /*states*/, HyperParams& h) {  // 11.5
  for (nd::NDArray& p : params) p -= h["lr"] * p.grad();
}

void sgd_momentum(Params& params, States& states, HyperParams& h) {  // 11.6
  for (std::size_t i = 0; i < params.size(); ++i) {
    nd::NDArray& v = states[i][0];
    v *= h["momentum"];
    v += params[i].grad();
    params[i] -= h["lr"] * v;
  }
}

void adagrad(Params& params, States& states, HyperParams& h) {  // 11.7
  const double eps = 1e-6;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const nd::NDArray g = params[i].grad();
    nd::NDArray& s = states[i][0];
    s += nd::square(g);
    params[i] -= h["lr"] * g / nd::sqrt(s + eps);
  }
}

void rmsprop(Params& params, States& states, HyperParams& h) {  // 11.8
  const double gamma = h["gamma"], eps = 1e-6;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const nd::NDArray g = params[i].grad();
    nd::NDArray& s = states[i][0];
    s *= gamma;
    s += (1 - gamma) * nd::square(g);
    params[i] -= h["lr"] * g / nd::sqrt(s + eps);
  }
}

void adadelta(Params& params, States& states, HyperParams& h) {  // 11.9: no learning rate
  const double rho = h["rho"], eps = 1e-5;
  for (std::size_t i = 0; i < params.size(); ++i) {
    nd::NDArray& s = states[i][0];
    nd::NDArray& delta = states[i][1];
    s *= rho;
    s += (1 - rho) * nd::square(params[i].grad());
    const nd::NDArray g = nd::sqrt(delta + eps) / nd::sqrt(s + eps) * params[i].grad();  // the rescaled gradient
    params[i] -= g;
    delta *= rho;
    delta += (1 - rho) * g * g;
  }
}

void adam(Params& params, States& states, HyperParams& h) {  // 11.10
  const double beta1 = 0.9, beta2 = 0.999, eps = 1e-6;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const nd::NDArray g = params[i].grad();
    nd::NDArray& v = states[i][0];
    nd::NDArray& s = states[i][1];
    v *= beta1;
    v += (1 - beta1) * g;
    s *= beta2;
    s += (1 - beta2) * nd::square(g);
    const nd::NDArray v_bias_corr = v / (1 - std::pow(beta1, h["t"]));
    const nd::NDArray s_bias_corr = s / (1 - std::pow(beta2, h["t"]));
    params[i] -= h["lr"] * v_bias_corr / (nd::sqrt(s_bias_corr) + eps);
  }
  h["t"] += 1;
}

using Update = void (*)(Params&, States&, HyperParams&);

struct Run {
  std::string key;   // its name in the output and the CSV
  std::string what;  // its settings, as printed
  std::int64_t batch_size;
  int epochs;         // the book's, unless --epochs
  HyperParams hyper;  // from scratch: the book's dict; concise: the Trainer's optimizer_params
  // From scratch: the update and its number of state arrays per parameter. Concise: the Trainer's
  // optimizer by name, and the from-scratch run of the same hyper-parameters (--check).
  Update update;
  int states_per_param;
  std::string trainer, twin;
  double book_loss;  // the final loss the book prints for this run
};

Run from_scratch(std::string key, std::string what, std::int64_t batch_size, int epochs, Update update,
                 int states_per_param, HyperParams hyper, double book_loss) {
  return {std::move(key), std::move(what), batch_size, epochs, std::move(hyper), update, states_per_param, "", "",
          book_loss};
}

std::string number(double x) {  // 0.05, 1, 1e-06
  char text[32];
  std::snprintf(text, sizeof text, "%g", x);
  return text;
}

// Batch 10 and 2 epochs, as the book's train_concise_ch11 runs them.
Run concise(std::string key, std::string trainer, HyperParams hyper, std::string twin, double book_loss) {
  std::string what = "Trainer '" + trainer + "'";
  for (const auto& [name, value] : hyper) what += ", " + name + " " + number(value);
  return {std::move(key), what, 10, 2, std::move(hyper), nullptr, 0, std::move(trainer), std::move(twin), book_loss};
}

// One section of the chapter: its --optimizer value, its title and its runs.
struct Section {
  std::string optimizer, title;
  std::vector<Run> runs;
};

// The book's experiments with its settings. The last number of each run is the final loss the
// book prints for it (D2L, MXNet edition, to three decimals), trained on the real airfoil data.
std::vector<Section> sections() {
  return {
      {"sgd",
       "11.5 Minibatch stochastic gradient descent",
       {from_scratch("gd", "gradient descent, batch 1500, lr 1", 1500, 10, sgd, 0, {{"lr", 1}}, 0.253),
        from_scratch("sgd", "stochastic, batch 1, lr 0.005", 1, 2, sgd, 0, {{"lr", 0.005}}, 0.243),
        from_scratch("minibatch-100", "batch 100, lr 0.4", 100, 2, sgd, 0, {{"lr", 0.4}}, 0.243),
        from_scratch("minibatch-10", "batch 10, lr 0.05", 10, 2, sgd, 0, {{"lr", 0.05}}, 0.245),
        concise("sgd-concise", "sgd", {{"learning_rate", 0.05}}, "minibatch-10", 0.244)}},
      {"momentum",
       "11.6 Momentum",
       {from_scratch("momentum-0.02-0.5", "lr 0.02, momentum 0.5", 10, 2, sgd_momentum, 1,
                     {{"lr", 0.02}, {"momentum", 0.5}}, 0.244),
        from_scratch("momentum-0.01-0.9", "lr 0.01, momentum 0.9", 10, 2, sgd_momentum, 1,
                     {{"lr", 0.01}, {"momentum", 0.9}}, 0.251),
        from_scratch("momentum-0.005-0.9", "lr 0.005, momentum 0.9", 10, 2, sgd_momentum, 1,
                     {{"lr", 0.005}, {"momentum", 0.9}}, 0.244),
        concise("momentum-concise", "sgd", {{"learning_rate", 0.005}, {"momentum", 0.9}}, "momentum-0.005-0.9",
                0.245)}},
      {"adagrad",
       "11.7 AdaGrad",
       {from_scratch("adagrad", "lr 0.1", 10, 2, adagrad, 1, {{"lr", 0.1}}, 0.242),
        concise("adagrad-concise", "adagrad", {{"learning_rate", 0.1}}, "adagrad", 0.242)}},
      {"rmsprop",
       "11.8 RMSProp",
       {from_scratch("rmsprop", "lr 0.01, gamma 0.9", 10, 2, rmsprop, 1, {{"lr", 0.01}, {"gamma", 0.9}}, 0.246),
        concise("rmsprop-concise", "rmsprop", {{"learning_rate", 0.01}, {"gamma1", 0.9}}, "rmsprop", 0.245)}},
      {"adadelta",
       "11.9 Adadelta",
       {from_scratch("adadelta", "rho 0.9", 10, 2, adadelta, 2, {{"rho", 0.9}}, 0.243),
        concise("adadelta-concise", "adadelta", {{"rho", 0.9}}, "adadelta", 0.243)}},
      {"adam",
       "11.10 Adam",
       {from_scratch("adam", "lr 0.01", 10, 2, adam, 2, {{"lr", 0.01}, {"t", 1}}, 0.243),
        concise("adam-concise", "adam", {{"learning_rate", 0.01}}, "adam", 0.244)}},
  };
}

// ---------------------------------------------------------------------------------------------
// Training.

// A run's curve: the loss on the whole data set after so many examples, and the training time.
struct Curve {
  struct Point {
    std::int64_t examples_seen;
    double loss;
  };
  std::vector<Point> points;
  double seconds = 0;  // training only: the evaluations left out
};

// Records a Curve as the book's train_ch11 does: the loss on the whole data set every 200
// examples, and here at the end too.
class LossRecorder {
 public:
  explicit LossRecorder(std::function<double()> full_loss) : full_loss_(std::move(full_loss)) {}

  void start() { started_ = Clock::now(); }
  // After a step on `examples` more examples: records the loss when the examples seen so far are a
  // multiple of 200 (the book's n % 200 == 0: gradient descent, 1500 a step, every other epoch).
  void trained(std::int64_t examples) {
    seen_ += examples;
    if (seen_ % 200 == 0) record();
  }
  // The end of training: records it, unless it was just recorded.
  void finish() {
    if (curve_.points.empty() || curve_.points.back().examples_seen != seen_) record();
  }
  const Curve& curve() const { return curve_; }

 private:
  using Clock = std::chrono::steady_clock;
  void record() {
    nd::waitall();  // the steps queued on a GPU belong to the training time
    curve_.seconds += std::chrono::duration<double>(Clock::now() - started_).count();
    curve_.points.push_back({seen_, full_loss_()});
    started_ = Clock::now();
  }
  std::function<double()> full_loss_;
  Curve curve_;
  std::int64_t seen_ = 0;
  Clock::time_point started_ = Clock::now();
};

nd::NDArray linreg(const nd::NDArray& X, const nd::NDArray& w, const nd::NDArray& b) { return nd::dot(X, w) + b; }

// (y_hat - y)^2 / 2 per example: y_hat (B, 1), y (B,) -> (B, 1)
nd::NDArray squared_loss(const nd::NDArray& y_hat, const nd::NDArray& y) {
  return nd::square(y_hat - y.reshape(y_hat.shape())) / 2;
}

// The whole data set on the context the runs train on (for the evaluations).
struct Full {
  nd::NDArray X, y;
};

// The book's train_ch11: w, b and the update by hand, the gradients from autograd.
Curve train_from_scratch(const Run& run, int epochs, gdata::DataLoader& data_iter, const Full& full,
                         mx::Context ctx) {
  nd::NDArray w = nd::random::normal(0, 0.01, {kFeatures, 1}, ctx), b = nd::zeros({1}, ctx);
  w.attach_grad();
  b.attach_grad();
  Params params = {w, b};
  States states(params.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    for (int k = 0; k < run.states_per_param; ++k) states[i].push_back(nd::zeros(params[i].shape(), ctx));
  }
  HyperParams hyper = run.hyper;
  LossRecorder recorder([&] { return squared_loss(linreg(full.X, w, b), full.y).mean().asscalar<float>(); });
  recorder.start();
  for (int epoch = 0; epoch < epochs; ++epoch) {
    for (auto& [X, y] : data_iter) {
      nd::NDArray l;
      {
        auto recording = mx::autograd::record();
        l = squared_loss(linreg(X.as_in_context(ctx), w, b), y.as_in_context(ctx)).mean();
      }
      l.backward();
      run.update(params, states, hyper);
      recorder.trained(X.shape()[0]);
    }
  }
  recorder.finish();
  return recorder.curve();
}

// An event handler of the Estimator's loop: after each batch's step (GradientUpdateHandler runs
// first, at priority -2000; this one at the default 0), it counts the examples, and its recorder
// evaluates the loss on the whole data set every 200 of them.
class RecordLoss : public est::TrainBegin, public est::BatchEnd, public est::TrainEnd {
 public:
  explicit RecordLoss(LossRecorder& recorder) : recorder_(recorder) {}
  void train_begin(est::Estimator& /*estimator*/) override { recorder_.start(); }
  bool batch_end(est::Estimator& /*estimator*/, const gdata::Batch& batch,
                 const est::BatchResult& /*result*/) override {
    recorder_.trained(batch.data.shape()[0]);
    return false;  // do not stop
  }
  void train_end(est::Estimator& /*estimator*/) override { recorder_.finish(); }

 private:
  LossRecorder& recorder_;
};

// The book's train_concise_ch11: a Dense(1) network, a Trainer by the optimizer's name, L2Loss
// (the same (y_hat - y)^2 / 2) and, instead of the hand-written loop, the Estimator's fit: for each
// batch it records forward and loss, runs backward and steps the trainer (trainer.step(batch
// size) scales the summed gradients by 1 / batch size: the gradients of the mean loss).
Curve train_concise(const Run& run, int epochs, gdata::DataLoader& data_iter, const Full& full, mx::Context ctx) {
  nn::Sequential net;
  net.add(nn::Dense(1, "", true, kFeatures));
  net.initialize(mx::init::Normal(0.01), ctx);
  auto trainer = std::make_shared<mx::gluon::Trainer>(net.collect_params(), run.trainer, run.hyper);
  const mx::gluon::loss::L2Loss loss;
  est::Estimator estimator(net, loss, {}, trainer, {ctx});
  std::ostream silent(nullptr);  // fit's LoggingHandler prints a line per epoch; the curve is what we show
  estimator.set_logger(silent);
  LossRecorder recorder([&] { return loss(net(full.X), full.y).mean().asscalar<float>(); });
  estimator.fit(data_iter, /*val_data=*/nullptr, epochs, {std::make_shared<RecordLoss>(recorder)});
  return recorder.curve();
}

struct Options {
  std::string optimizer = "all";
  std::string ctx;                      // "" : gpu(0) when there is a GPU, else cpu(0)
  std::optional<int> epochs;            // each run's book value when not given
  std::string csv = "optimization.csv";
  std::uint64_t seed = 0;
  bool check = false;
  double tolerance = 1e-3;
  double max_loss = 0.3;  // --check: every final loss must be at most this
};

int run_all(const Options& o) {
  const mx::Context ctx = o.ctx.empty() ? mx::try_gpu() : *tutorial::context_named(o.ctx);
  const Data data = airfoil_like(o.seed);
  const Full full{data.features.as_in_context(ctx), data.labels.as_in_context(ctx)};
  std::printf("airfoil-style data (seed %llu): %lld examples, %lld standardized features; the best linear "
              "model's loss is %.4f\n",
              static_cast<unsigned long long>(o.seed), static_cast<long long>(kExamples),
              static_cast<long long>(kFeatures), kBestLoss);
  std::printf("training on %s%s\n", ctx.str().c_str(),
              ctx.is_gpu() ? (" (" + mx::gpu_name(ctx.device_id()) + ")").c_str() : "");
  std::FILE* csv = tutorial::open_csv(o.csv, "run,examples_seen,loss");
  if (!csv) return 1;

  std::map<std::string, double> final_loss;  // by run key
  std::vector<const Run*> concise_runs;
  struct Panel {
    std::string title, from_scratch, concise;  // the run keys, separated by spaces
  };
  std::vector<Panel> panels;  // per section run
  const std::vector<Section> book = sections();
  // "gd: gradient descent: batch 1500, lr 1", and the epochs when --epochs changes them.
  const auto name = [&](const Run& run) {
    const int epochs = o.epochs.value_or(run.epochs);
    return run.key + ": " + run.what +
           (epochs == run.epochs ? "" : ", " + std::to_string(epochs) + (epochs == 1 ? " epoch" : " epochs"));
  };
  std::size_t width = 0;
  for (const Section& section : book) {
    for (const Run& run : section.runs) width = std::max(width, name(run).size());
  }
  for (const Section& section : book) {
    if (o.optimizer != "all" && o.optimizer != section.optimizer) continue;
    std::printf("\n%s\n", section.title.c_str());
    panels.push_back({section.title, "", ""});
    for (const Run& run : section.runs) {
      const int epochs = o.epochs.value_or(run.epochs);
      // Every run from the seed: the same initial weights and the same minibatches.
      mx::random::seed(o.seed);
      gdata::DataLoader data_iter(gdata::ArrayDataset(data.features, data.labels), run.batch_size, /*shuffle=*/true);
      const Curve curve = run.update ? train_from_scratch(run, epochs, data_iter, full, ctx)
                                         : train_concise(run, epochs, data_iter, full, ctx);
      const double loss = curve.points.back().loss;
      std::printf("  %-*s  loss %.4f, %.5f sec/epoch   (book: %.3f)\n", static_cast<int>(width),
                  name(run).c_str(), loss, curve.seconds / epochs, run.book_loss);
      std::fflush(stdout);
      for (const Curve::Point& p : curve.points) {
        std::fprintf(csv, "%s,%lld,%.6g\n", run.key.c_str(), static_cast<long long>(p.examples_seen), p.loss);
      }
      final_loss[run.key] = loss;
      if (!run.trainer.empty()) concise_runs.push_back(&run);
      std::string& keys = run.trainer.empty() ? panels.back().from_scratch : panels.back().concise;
      keys += (keys.empty() ? "" : " ") + run.key;
    }
  }

  const std::optional<std::string> write_failed = tutorial::close_csv(csv);
  if (write_failed) {
    std::fprintf(stderr, "error: writing the curves to %s failed: %s\n", o.csv.c_str(), write_failed->c_str());
    return 1;
  }
  std::printf("\ncurves written to %s\n", o.csv.c_str());
  // The book's plots, a panel per section: the loss against epochs, from 0.22 to 0.35; the concise
  // runs dashed over their from-scratch twins.
  std::string script = "set xlabel 'epoch'\nset ylabel 'loss'\nset yrange [0.22:0.35]\nset grid\n";
  const std::size_t rows = panels.size() > 3 ? 2 : 1, columns = (panels.size() + rows - 1) / rows;
  script += "set multiplot layout " + std::to_string(rows) + "," + std::to_string(columns) + "\n";
  const auto each_run = [&](const std::string& keys) {
    return "for [r in '" + keys + "'] '" + o.csv + "' using (strcol(1) eq r ? $2 / " + std::to_string(kExamples) +
           ". : NaN):3";
  };
  for (const Panel& panel : panels) {
    script += "set title '" + panel.title + "'\nplot " + each_run(panel.from_scratch) + " with lines title r, " +
              each_run(panel.concise) + " with lines dashtype 2 title r\n";
  }
  script += "unset multiplot\n";
  tutorial::plot_png(o.csv, script, std::to_string(500 * columns) + "," + std::to_string(400 * rows));
  if (!o.check) return 0;

  // --check: each concise run against its from-scratch twin, and every loss against --max-loss.
  bool ok = true;
  std::printf("\n");
  for (const Run* run : concise_runs) {
    const double a = final_loss.at(run->twin), b = final_loss.at(run->key);
    const double relative = std::abs(a - b) / std::abs(a);
    const bool agree = relative <= o.tolerance;  // false for a NaN too
    ok = ok && agree;
    std::printf("check: %s %.6f and %s %.6f %s (relative difference %.2g, tolerance %.2g)\n", run->twin.c_str(), a,
                run->key.c_str(), b, agree ? "agree" : "DIFFER", relative, o.tolerance);
  }
  for (const auto& [key, loss] : final_loss) {
    if (loss <= o.max_loss) continue;  // a NaN is not
    ok = false;
    std::printf("check: %s's final loss %.4f is above %g\n", key.c_str(), loss, o.max_loss);
  }
  std::printf("check %s\n", ok ? "passed" : "failed");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"D2L chapter 11, Optimization Algorithms (sections 11.5-11.10): linear regression on airfoil-style "
               "data trained by minibatch SGD, momentum, AdaGrad, RMSProp, Adadelta and Adam, each from scratch "
               "(nd ops and autograd) and concisely (gluon::Trainer and the Estimator)."};
  app.footer("Quick check: optimization --ctx cpu --epochs 1");
  Options o;
  app.add_option("--optimizer", o.optimizer, "the section(s) to run: sgd is 11.5 (gradient descent, SGD, minibatches)")
      ->capture_default_str()
      ->check(CLI::IsMember({"sgd", "momentum", "adagrad", "rmsprop", "adadelta", "adam", "all"}));
  app.add_option("--ctx", o.ctx, "train on this context: cpu, gpu (that is gpu:0) or gpu:N")
      ->type_name("CTX")
      ->default_str("gpu:0, else cpu")
      ->check(tutorial::existing_context());
  app.add_option("--epochs", o.epochs, "epochs per run")
      ->type_name("INT")
      ->default_str("the book's: 10 for gradient descent, 2 for the others")
      ->check(cli::integer(1, 1'000'000));
  app.add_option("--csv", o.csv, "where to write the curves (run, examples_seen, loss); a PNG of them goes next to it")
      ->type_name("FILE")
      ->capture_default_str()
      ->check(cli::file_to_write());
  app.add_option("--seed", o.seed, "the random seed of the data, each run's initial weights and its minibatches")
      ->capture_default_str()
      ->check(cli::integer(0));
  app.add_flag("--check", o.check,
               "exit 1 unless each concise run's final loss agrees with its from-scratch twin's within --tolerance "
               "and every final loss is at most --max-loss");
  app.add_option("--tolerance", o.tolerance, "--check: the relative difference allowed")
      ->capture_default_str()
      ->check(cli::positive_number());
  app.add_option("--max-loss", o.max_loss, "--check: the largest final loss allowed")
      ->capture_default_str()
      ->check(cli::positive_number());
  if (const std::optional<int> exit_code = cli::parse(app, argc, argv)) return *exit_code;
  try {
    return run_all(o);
  } catch (const mx::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
