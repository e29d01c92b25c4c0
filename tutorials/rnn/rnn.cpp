// D2L chapters 8 and 9 (Recurrent Neural Networks, Modern Recurrent Neural Networks; MXNet edition)
// in C++: character-level language models of H. G. Wells's The Time Machine, each from scratch
// (its parameters as arrays, its step written with nd ops, the gradients from autograd, as the
// book's RNNModelScratch) and concisely (a gluon::rnn layer and a Dense output in a Block, trained
// by a gluon::Trainer, as the book's RNNModel):
//   8.5  rnn-scratch         an RNN of 512 hidden units, sequential partitioning, lr 1
//        rnn-scratch-random  the same with random partitioning
//   8.6  rnn-concise         rnn::RNN(256) (MXNet's default activation, relu), lr 1
//   9.1  gru-scratch, gru-concise     256 hidden units, lr 1
//   9.2  lstm-scratch, lstm-concise   256 hidden units, lr 1
//   9.3  deep-lstm           rnn::LSTM(256, 2 layers), lr 2
//
//   rnn [--model rnn|gru|lstm|deep-lstm|all] [--data PATH] [--ctx cpu|gpu|gpu:N] [--epochs N]
//       [--max-tokens N] [--csv FILE] [--seed N]
//
// As the book's train_ch8: the first 10,000 characters of the book (load_data_time_machine's
// max_tokens) in minibatches of 32 subsequences of 35 characters; the inputs one-hot encoded; a
// softmax cross-entropy loss averaged over the minibatch's tokens; gradients clipped to a global
// norm of 1; plain SGD, the update not divided by the batch (the loss is a mean already); the
// concise models initialised by Normal(0.01), the scratch ones drawn from normal(0, 0.01). With
// sequential partitioning the hidden state carries from one minibatch to the next, detached; with
// random partitioning each minibatch starts from zeros. A row every 10 epochs, as the book's
// train_ch8 prints, gives the perplexity (exp of the epoch's mean loss) and the book's sample, 50
// characters predicted greedily after "time traveller"; each run ends with its perplexity, its
// tokens/s, the book's perplexity for it, and predictions after "time traveller" and "traveller".
// The curves go to a CSV (run, epoch, perplexity) and, when gnuplot is installed, to a PNG next
// to it.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gluon/data.hpp>
#include <gluon/loss.hpp>
#include <gluon/nn.hpp>
#include <gluon/rnn.hpp>
#include <gluon/trainer.hpp>
#include <gluon/utils.hpp>
#include <ndarray/ndarray.hpp>

#include "tutorials/cli.hpp"
#include "tutorials/common.hpp"

namespace nd = mx::nd;
namespace gluon = mx::gluon;
namespace nn = mx::gluon::nn;
namespace rnn = mx::gluon::rnn;
namespace text = mx::gluon::data::text;

namespace {

using States = std::vector<nd::NDArray>;

// What training and prediction need of a model, from scratch or concise.
class LanguageModel {
 public:
  virtual ~LanguageModel() = default;
  // Zero states for a batch: {H} (N, hidden), or {H, C} for an LSTM (layers first for a layer).
  virtual States begin_state(std::int64_t batch, mx::Context ctx) = 0;
  // X (N, T) token ids -> the scores (T·N, vocab), time-major as the book's, and the last states.
  virtual std::pair<nd::NDArray, States> forward(const nd::NDArray& X, const States& state) = 0;
  // The gradients the book's grad_clipping scales.
  virtual std::vector<nd::NDArray> gradients() = 0;
  // One SGD step at lr (the book's updater(batch_size=1)).
  virtual void update(double lr) = 0;
};

// ---------------------------------------------------------------------------------------------
// From scratch (8.5, 9.1, 9.2): the book's get_params, init_*_state and the step functions.

class ScratchModel : public LanguageModel {
 public:
  // cell: "rnn", "gru" or "lstm".
  ScratchModel(std::string cell, std::int64_t vocab_size, std::int64_t num_hiddens, mx::Context ctx)
      : cell_(std::move(cell)), vocab_size_(vocab_size), num_hiddens_(num_hiddens) {
    const auto normal = [&](const mx::Shape& shape) { return nd::random::normal(0, 0.01, shape, ctx); };
    // Per gate: W_x (vocab, hidden), W_h (hidden, hidden), b (hidden,). The RNN has one (its hidden
    // state), the GRU three (update z, reset r, candidate h), the LSTM four (input, forget, output
    // gates, candidate memory c).
    const int gates = cell_ == "rnn" ? 1 : cell_ == "gru" ? 3 : 4;
    for (int g = 0; g < gates; ++g) {
      params_.push_back(normal({vocab_size, num_hiddens}));
      params_.push_back(normal({num_hiddens, num_hiddens}));
      params_.push_back(nd::zeros({num_hiddens}, ctx));
    }
    params_.push_back(normal({num_hiddens, vocab_size}));  // W_hq
    params_.push_back(nd::zeros({vocab_size}, ctx));       // b_q
    for (nd::NDArray& p : params_) p.attach_grad();
  }

  States begin_state(std::int64_t batch, mx::Context ctx) override {
    States state = {nd::zeros({batch, num_hiddens_}, ctx)};
    if (cell_ == "lstm") state.push_back(nd::zeros({batch, num_hiddens_}, ctx));
    return state;
  }

  std::pair<nd::NDArray, States> forward(const nd::NDArray& X, const States& state) override {
    const nd::NDArray inputs = nd::one_hot(X.T(), vocab_size_);  // (T, N, vocab)
    nd::NDArray H = state[0], C = cell_ == "lstm" ? state[1] : nd::NDArray();
    const nd::NDArray &W_hq = params_[params_.size() - 2], &b_q = params_.back();
    std::vector<nd::NDArray> outputs;
    for (std::int64_t t = 0; t < inputs.shape()[0]; ++t) {
      const nd::NDArray x = inputs[t];  // (N, vocab)
      if (cell_ == "rnn") {
        H = nd::tanh(nd::dot(x, p(0)) + nd::dot(H, p(1)) + p(2));
      } else if (cell_ == "gru") {
        const nd::NDArray Z = nd::sigmoid(gate(0, x, H)), R = nd::sigmoid(gate(1, x, H));
        const nd::NDArray H_tilda = nd::tanh(nd::dot(x, p(6)) + nd::dot(R * H, p(7)) + p(8));
        H = Z * H + (1 - Z) * H_tilda;
      } else {
        const nd::NDArray I = nd::sigmoid(gate(0, x, H)), F = nd::sigmoid(gate(1, x, H));
        const nd::NDArray O = nd::sigmoid(gate(2, x, H)), C_tilda = nd::tanh(gate(3, x, H));
        C = F * C + I * C_tilda;
        H = O * nd::tanh(C);
      }
      outputs.push_back(nd::dot(H, W_hq) + b_q);
    }
    States next = {H};
    if (cell_ == "lstm") next.push_back(C);
    return {nd::concat(outputs, 0), next};
  }

  std::vector<nd::NDArray> gradients() override {
    std::vector<nd::NDArray> grads;
    for (const nd::NDArray& p : params_) grads.push_back(p.grad());
    return grads;
  }

  void update(double lr) override {  // the book's d2l.sgd(params, lr, batch_size=1)
    for (nd::NDArray& p : params_) p -= lr * p.grad();
  }

 private:
  const nd::NDArray& p(std::size_t i) const { return params_[i]; }
  // x W_x + H W_h + b of gate g.
  nd::NDArray gate(std::size_t g, const nd::NDArray& x, const nd::NDArray& H) const {
    return nd::dot(x, p(3 * g)) + nd::dot(H, p(3 * g + 1)) + p(3 * g + 2);
  }

  std::string cell_;
  std::int64_t vocab_size_, num_hiddens_;
  std::vector<nd::NDArray> params_;  // the gates' (W_x, W_h, b)..., then W_hq (hidden, vocab), b_q (vocab,)
};

// ---------------------------------------------------------------------------------------------
// Concise (8.6, 9.1-9.3): the book's RNNModel, a recurrent layer and a Dense output layer.

// Layer: rnn::RNN, rnn::GRU or rnn::LSTM.
template <class Layer>
class RNNModel : public gluon::Block {
 public:
  RNNModel(const Layer& layer, std::int64_t vocab_size)
      : Block("rnnmodel"), rnn_(register_child(layer, "rnn")),
        dense_(register_child(nn::Dense(vocab_size), "dense")), vocab_size_(vocab_size) {}

  // inputs (N, T) token ids -> the scores (T·N, vocab) and the layer's last states.
  std::pair<nd::NDArray, States> forward(const nd::NDArray& inputs, const States& state) {
    const nd::NDArray X = nd::one_hot(inputs.T(), vocab_size_);  // (T, N, vocab): the layer's "TNC"
    auto [Y, next] = rnn_(X, state);                              // Y (T, N, hidden)
    return {dense_(Y.reshape({-1, Y.shape()[2]})), std::move(next)};
  }
  nd::NDArray forward(const nd::NDArray& inputs) override { return forward(inputs, {}).first; }
  States begin_state(std::int64_t batch, mx::Context ctx) const { return rnn_.begin_state(batch, ctx); }

 private:
  Layer rnn_;
  nn::Dense dense_;
  std::int64_t vocab_size_;
};

template <class Layer>
class ConciseModel : public LanguageModel {
 public:
  ConciseModel(const Layer& layer, std::int64_t vocab_size, double lr, mx::Context ctx)
      : net_(layer, vocab_size), ctx_(ctx) {
    net_.initialize(mx::init::Normal(0.01), ctx);
    trainer_ = std::make_unique<gluon::Trainer>(net_.collect_params(), "sgd", gluon::HyperParams{{"learning_rate", lr}});
  }
  States begin_state(std::int64_t batch, mx::Context ctx) override { return net_.begin_state(batch, ctx); }
  std::pair<nd::NDArray, States> forward(const nd::NDArray& X, const States& state) override {
    return net_.forward(X, state);
  }
  std::vector<nd::NDArray> gradients() override {
    std::vector<nd::NDArray> grads;
    for (const auto& [name, param] : net_.collect_params()) grads.push_back(param.grad(ctx_));
    return grads;
  }
  void update(double /*lr: the Trainer's*/) override { trainer_->step(1); }

 private:
  RNNModel<Layer> net_;
  mx::Context ctx_;
  std::unique_ptr<gluon::Trainer> trainer_;
};

// ---------------------------------------------------------------------------------------------
// Training and prediction: the book's predict_ch8, train_epoch_ch8 and train_ch8.

// num_preds characters predicted greedily after prefix, the state warmed up on the prefix.
std::string predict(const std::string& prefix, int num_preds, LanguageModel& net, const text::Vocab& vocab,
                    mx::Context ctx) {
  States state = net.begin_state(1, ctx);
  std::vector<std::int64_t> outputs = {vocab[std::string(1, prefix[0])]};
  const auto last = [&] {
    return nd::array(std::vector<std::int32_t>{static_cast<std::int32_t>(outputs.back())}, {1, 1}, ctx);
  };
  for (std::size_t i = 1; i < prefix.size(); ++i) {
    state = net.forward(last(), state).second;
    outputs.push_back(vocab[std::string(1, prefix[i])]);
  }
  for (int i = 0; i < num_preds; ++i) {
    auto [y, next] = net.forward(last(), state);
    state = std::move(next);
    outputs.push_back(static_cast<std::int64_t>(y.argmax(1).asscalar<float>()));
  }
  std::string out;
  for (const std::int64_t index : outputs) out += vocab.to_tokens(index);
  return out;
}

struct Epoch {
  double perplexity;
  double tokens;
};

Epoch train_epoch(LanguageModel& net, text::SeqDataLoader& train_iter, double lr, mx::Context ctx, bool random_iter) {
  const gluon::loss::SoftmaxCrossEntropyLoss loss;
  States state;
  nd::NDArray loss_sum = nd::zeros({1}, ctx);  // the sum of each minibatch's mean loss times its tokens
  double tokens = 0;
  for (auto& [X, Y] : train_iter) {
    if (state.empty() || random_iter) {
      state = net.begin_state(X.shape()[0], ctx);
    } else {
      for (nd::NDArray& s : state) s = s.detach();  // the text goes on, its gradient does not
    }
    const nd::NDArray y = Y.T().reshape({Y.size()}).as_in_context(ctx);  // time-major, as the scores
    nd::NDArray l;
    {
      auto recording = mx::autograd::record();
      auto [y_hat, next] = net.forward(X.as_in_context(ctx), state);
      state = std::move(next);
      l = loss(y_hat, y).mean();
    }
    l.backward();
    gluon::utils::clip_global_norm(net.gradients(), 1.0);  // the book's grad_clipping(net, 1)
    net.update(lr);
    loss_sum += l * static_cast<double>(y.size());
    tokens += static_cast<double>(y.size());
  }
  return {std::exp(loss_sum.asscalar<double>() / tokens), tokens};
}

struct Run {
  std::string key, section, what;
  std::string model;   // its --model family: rnn, gru, lstm, deep-lstm
  std::string cell;    // rnn, gru, lstm
  bool concise;
  std::int64_t hidden, layers;
  double lr;
  bool random_iter;
  double book_perplexity;  // what the book prints for this run after its 500 epochs
};

// The book's runs with its settings, and the final perplexity it prints for each, to one decimal
// (D2L 0.17.5, MXNet edition, on a GPU, 500 epochs: its executed notebooks).
std::vector<Run> runs() {
  return {
      {"rnn-scratch", "8.5", "RNN from scratch, 512 hidden, lr 1, sequential", "rnn", "rnn", false, 512, 1, 1, false, 1.0},
      {"rnn-scratch-random", "8.5", "RNN from scratch, 512 hidden, lr 1, random", "rnn", "rnn", false, 512, 1, 1, true,
       1.5},
      {"rnn-concise", "8.6", "rnn::RNN(256), lr 1", "rnn", "rnn", true, 256, 1, 1, false, 1.2},
      {"gru-scratch", "9.1", "GRU from scratch, 256 hidden, lr 1", "gru", "gru", false, 256, 1, 1, false, 1.1},
      {"gru-concise", "9.1", "rnn::GRU(256), lr 1", "gru", "gru", true, 256, 1, 1, false, 1.1},
      {"lstm-scratch", "9.2", "LSTM from scratch, 256 hidden, lr 1", "lstm", "lstm", false, 256, 1, 1, false, 1.1},
      {"lstm-concise", "9.2", "rnn::LSTM(256), lr 1", "lstm", "lstm", true, 256, 1, 1, false, 1.1},
      {"deep-lstm", "9.3", "rnn::LSTM(256, 2 layers), lr 2", "deep-lstm", "lstm", true, 256, 2, 2, false, 1.1},
  };
}

std::unique_ptr<LanguageModel> make_model(const Run& run, std::int64_t vocab_size, mx::Context ctx) {
  if (!run.concise) return std::make_unique<ScratchModel>(run.cell, vocab_size, run.hidden, ctx);
  if (run.cell == "rnn") {
    return std::make_unique<ConciseModel<rnn::RNN>>(rnn::RNN(run.hidden, run.layers), vocab_size, run.lr, ctx);
  }
  if (run.cell == "gru") {
    return std::make_unique<ConciseModel<rnn::GRU>>(rnn::GRU(run.hidden, run.layers), vocab_size, run.lr, ctx);
  }
  return std::make_unique<ConciseModel<rnn::LSTM>>(rnn::LSTM(run.hidden, run.layers), vocab_size, run.lr, ctx);
}

struct Options {
  std::string model = "all";
  std::string data;  // "" : $TIME_MACHINE
  std::string ctx;   // "" : gpu(0) when there is a GPU, else cpu(0)
  int epochs = 500;
  std::int64_t max_tokens = 10000;
  std::string csv = "rnn.csv";
  std::uint64_t seed = 0;
};

constexpr const char* kWhereToGetIt =
    "The Time Machine is Project Gutenberg's eBook #35 (https://www.gutenberg.org/ebooks/35, the plain text "
    "UTF-8 file); D2L's copy is http://d2l-data.s3-accelerate.amazonaws.com/timemachine.txt";

int run_all(const Options& o) {
  const mx::Context ctx = o.ctx.empty() ? mx::try_gpu() : *tutorial::context_named(o.ctx);
  const std::optional<std::string> text = tutorial::text_path(o.data, "TIME_MACHINE", "the text of The Time Machine",
                                                              kWhereToGetIt);
  if (!text) return 2;
  const std::string& path = *text;
  const auto tokens = text::tokenize(text::read_time_machine(path), "char");
  const text::Vocab vocab(tokens);
  const std::vector<std::int64_t> corpus = text::corpus_indices(tokens, vocab, o.max_tokens);
  constexpr std::int64_t kBatchSize = 32, kNumSteps = 35;
  std::printf("The Time Machine from %s: %zu characters in training, a vocabulary of %lld\n", path.c_str(),
              corpus.size(), static_cast<long long>(vocab.size()));
  std::printf("training on %s%s\n", ctx.str().c_str(),
              ctx.is_gpu() ? (" (" + mx::gpu_name(ctx.device_id()) + ")").c_str() : "");
  std::FILE* csv = tutorial::open_csv(o.csv, "run,epoch,perplexity");
  if (!csv) return 1;

  const int every = o.epochs >= 10 ? 10 : 1;  // the book's: a sample every 10 epochs
  std::string keys;  // of the runs made, for the plot
  std::string section;
  for (const Run& run : runs()) {
    if (o.model != "all" && o.model != run.model) continue;
    if (run.section != section) std::printf("\n%s\n", run.section.c_str());
    section = run.section;
    std::printf("  %s: %s, batch %lld, %lld steps, %d epochs\n", run.key.c_str(), run.what.c_str(),
                static_cast<long long>(kBatchSize), static_cast<long long>(kNumSteps), o.epochs);
    std::fflush(stdout);
    mx::random::seed(o.seed);  // every run from the seed: its initial values, the same minibatches
    text::SeqDataLoader train_iter(corpus, kBatchSize, kNumSteps, run.random_iter, ctx);
    const std::unique_ptr<LanguageModel> net = make_model(run, vocab.size(), ctx);
    double seconds = 0, tokens_seen = 0, perplexity = 0;
    for (int epoch = 1; epoch <= o.epochs; ++epoch) {
      const auto start = std::chrono::steady_clock::now();
      const Epoch e = train_epoch(*net, train_iter, run.lr, ctx, run.random_iter);  // reads the loss: waits
      seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      tokens_seen += e.tokens;
      perplexity = e.perplexity;
      std::fprintf(csv, "%s,%d,%.6g\n", run.key.c_str(), epoch, perplexity);
      if (epoch % every == 0 || epoch == o.epochs) {
        std::printf("    epoch %4d  perplexity %8.3f  %s\n", epoch, perplexity,
                    predict("time traveller", 50, *net, vocab, ctx).c_str());
        std::fflush(stdout);
      }
    }
    std::printf("  %s: perplexity %.2f, %.1f tokens/sec on %s   (book: %.1f)\n", run.key.c_str(), perplexity,
                tokens_seen / seconds, ctx.str().c_str(), run.book_perplexity);
    std::printf("    %s\n    %s\n", predict("time traveller", 50, *net, vocab, ctx).c_str(),
                predict("traveller", 50, *net, vocab, ctx).c_str());
    std::fflush(stdout);
    keys += (keys.empty() ? "" : " ") + run.key;
  }

  const std::optional<std::string> write_failed = tutorial::close_csv(csv);
  if (write_failed) {
    std::fprintf(stderr, "error: writing the curves to %s failed: %s\n", o.csv.c_str(), write_failed->c_str());
    return 1;
  }
  std::printf("\ncurves written to %s\n", o.csv.c_str());
  tutorial::plot_png(o.csv, "set xlabel 'epoch'\nset ylabel 'perplexity'\nset logscale y\nset grid\nplot for [r in '" +
                                keys + "'] '" + o.csv + "' using (strcol(1) eq r ? $2 : NaN):3 with lines title r\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"D2L chapters 8-9 (MXNet edition): character-level language models of The Time Machine, an RNN (8.5, "
               "8.6), a GRU (9.1), an LSTM (9.2), each from scratch (nd ops and autograd) and concisely (gluon::rnn "
               "layers), and a deep LSTM (9.3)."};
  app.footer("Quick check: rnn --data timemachine.txt --ctx cpu --model gru --epochs 1 --max-tokens 2000");
  Options o;
  app.add_option("--model", o.model, "the runs to make: rnn is 8.5 and 8.6, gru 9.1, lstm 9.2, deep-lstm 9.3")
      ->capture_default_str()
      ->check(CLI::IsMember({"rnn", "gru", "lstm", "deep-lstm", "all"}));
  app.add_option("--data", o.data,
                 "the text of The Time Machine (Project Gutenberg's eBook #35 or D2L's timemachine.txt)")
      ->type_name("PATH")
      ->default_str("$TIME_MACHINE")
      ->check(tutorial::existing_text(kWhereToGetIt));
  app.add_option("--ctx", o.ctx, "train on this context: cpu, gpu (that is gpu:0) or gpu:N")
      ->type_name("CTX")
      ->default_str("gpu:0, else cpu")
      ->check(tutorial::existing_context());
  app.add_option("--epochs", o.epochs, "epochs per run")->capture_default_str()->check(cli::integer(1, 1'000'000));
  app.add_option("--max-tokens", o.max_tokens, "characters of the book to train on (the book's max_tokens)")
      ->capture_default_str()
      ->check(cli::integer(1121));  // one minibatch of 32 x 35 and the one character after it
  app.add_option("--csv", o.csv, "where to write the curves (run, epoch, perplexity); a PNG of them goes next to it")
      ->type_name("FILE")
      ->capture_default_str()
      ->check(cli::file_to_write());
  app.add_option("--seed", o.seed, "the random seed of each run's initial values and minibatches")
      ->capture_default_str()
      ->check(cli::integer(0));
  if (const std::optional<int> exit_code = cli::parse(app, argc, argv)) return *exit_code;
  try {
    return run_all(o);
  } catch (const mx::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
