// Recurrent networks against PyTorch, in one run on one GPU (and cpu(0)):
//   - an LSTM language model (vocabulary 10,000, embedding 512, 2 LSTM layers of 1,024, sequence
//     64, batch 64), trained with SGD and gradient clipping by global norm: tokens/s in float32
//     (TF32 off on both sides, then on: ndgluon's set_matmul_precision("high"), PyTorch's
//     allow_tf32) and under bfloat16 autocast, against PyTorch's nn.LSTM (cuDNN);
//   - one generation step at batch 1 (embedding, the 2-layer LSTM, the output layer, top-k),
//     hybridized, against PyTorch eager;
//   - the LSTM and GRU layers alone, forward and backward, through cuDNN and through the unfused
//     path (which nd::set_rnn_cudnn chooses between);
//   - cpu(0): a small LSTM model (vocabulary 1,000, embedding 128, 2 layers of 256, sequence 35,
//     batch 32) against PyTorch's CPU nn.LSTM.
// Run from the source root: build/bench/rnn_bench bench/torch_peer.py
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <gluon/loss.hpp>
#include <gluon/nn.hpp>
#include <gluon/rnn.hpp>
#include <gluon/trainer.hpp>
#include <gluon/utils.hpp>
#include <ndarray/amp/amp.hpp>
#include <ndarray/ndarray.hpp>
#include <ndarray/ops/rnn.hpp>

#include "bench/bench_util.hpp"
#include "bench/peer_cli.hpp"

namespace nd = mx::nd;
namespace gluon = mx::gluon;
namespace nn = mx::gluon::nn;
namespace rnn = mx::gluon::rnn;

namespace {

struct Size {
  std::int64_t vocab, embed, hidden, layers, seq, batch;
};
constexpr Size kLarge{10000, 512, 1024, 2, 64, 64};
constexpr Size kSmall{1000, 128, 256, 2, 35, 32};

// Embedding -> LSTM -> Dense over every step: (T, N) token ids -> (T·N, vocab) scores.
class LanguageModel : public gluon::Block {
 public:
  explicit LanguageModel(const Size& s)
      : Block("lm"), hidden_(s.hidden),
        embedding_(register_child(nn::Embedding(s.vocab, s.embed), "embedding")),
        lstm_(register_child(rnn::LSTM(s.hidden, s.layers), "lstm")),
        output_(register_child(nn::Dense(s.vocab, "", true, s.hidden), "output")) {}
  nd::NDArray forward(const nd::NDArray& x) override {
    return output_(lstm_(embedding_(x)).reshape({x.size(), hidden_}));
  }

 private:
  std::int64_t hidden_;
  nn::Embedding embedding_;
  rnn::LSTM lstm_;
  nn::Dense output_;
};

nd::NDArray tokens(const Size& s, mx::Context ctx) {
  return nd::random::uniform(0, static_cast<double>(s.vocab) - 0.5, {s.seq, s.batch}, ctx).astype(mx::DType::int32);
}

// Seconds per training step: forward, loss, backward, clip to global norm 1, SGD.
double train_seconds(const Size& s, mx::Context ctx, std::optional<mx::DType> autocast, int reps) {
  LanguageModel net(s);
  net.initialize(mx::init::Xavier(), ctx);
  gluon::Trainer trainer(net.collect_params(), "sgd", {{"learning_rate", 1.0}});
  gluon::loss::SoftmaxCrossEntropyLoss loss;
  const nd::NDArray x = tokens(s, ctx), y = tokens(s, ctx).reshape({s.seq * s.batch});
  std::vector<nd::NDArray> grads;
  const auto step = [&] {
    {
      auto record = mx::autograd::record();
      const auto scope = mx::amp::autocast(autocast);  // nullopt: float32 throughout
      loss(net(x), y).mean().backward();
    }
    if (grads.empty()) {
      for (const auto& [name, param] : net.collect_params()) grads.push_back(param.grad(ctx));
    }
    gluon::utils::clip_global_norm(grads, 1.0);
    trainer.step(1);
  };
  return bench::median_seconds(step, [] { nd::waitall(); }, reps, 3);
}

// Seconds per generation step: one token through the hybridized model, then top-5 of its scores.
double generation_seconds(const Size& s, mx::Context ctx, int reps) {
  LanguageModel net(s);
  net.initialize(mx::init::Xavier(), ctx);
  net.hybridize();
  const nd::NDArray token = nd::full({1, 1}, 7, ctx, mx::DType::int32);
  nd::NDArray best;
  const auto step = [&] { best = nd::topk(net(token), -1, 5); };
  return bench::median_seconds(step, [] { nd::waitall(); }, reps, 5);
}

// Seconds per forward + backward of the recurrent layers alone (rnn::LSTM or rnn::GRU) on
// (T, N, embed) inputs.
template <class Layer>
double layers_seconds(const Size& s, mx::Context ctx, bool cudnn, int reps) {
  const bool previous = nd::set_rnn_cudnn(cudnn);
  Layer layer(s.hidden, s.layers);
  layer.initialize(mx::init::Xavier(), ctx);
  nd::NDArray x = nd::random::uniform(-1, 1, {s.seq, s.batch, s.embed}, ctx);
  x.attach_grad();
  const auto step = [&] {
    auto record = mx::autograd::record();
    layer(x).sum().backward();
  };
  const double seconds = bench::median_seconds(step, [] { nd::waitall(); }, reps, 3);
  nd::set_rnn_cudnn(previous);
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Recurrent networks on gpu(0) and cpu(0) against PyTorch in one run: an LSTM language model's training "
               "tokens/s (float32, TF32, bfloat16 autocast), a generation step's latency, the LSTM layers through "
               "cuDNN and unfused. Run from the source root: build/bench/rnn_bench bench/torch_peer.py"};
  std::string peer_script;
  int reps = 10;
  app.add_option("--reps", reps, "steps per timed trial")->capture_default_str()->check(cli::integer(1));
  if (const std::optional<int> exit_code = bench::parse_peer_command_line(app, argc, argv, peer_script)) {
    return *exit_code;
  }
  const mx::Context gpu = mx::gpu(0);
  std::printf("device: %s\n", mx::gpu_name(0).c_str());
  const double tokens_large = static_cast<double>(kLarge.seq * kLarge.batch);
  const double tokens_small = static_cast<double>(kSmall.seq * kSmall.batch);
  std::vector<bench::Row> rows;
  const auto tokens_row = [&](const char* name, const char* key, double seconds, double tokens, double peer_target) {
    bench::Row r{name, key, "tokens/s"};
    r.work = tokens;
    r.unit = 1;
    r.ndgluon = r.from_seconds(seconds);
    r.peer_target = peer_target;
    rows.push_back(r);
  };
  mx::set_matmul_precision("highest");
  tokens_row("LSTM LM training, float32 (TF32 off)", "lstm_lm_f32", train_seconds(kLarge, gpu, std::nullopt, reps),
             tokens_large, 1.0);
  mx::set_matmul_precision("high");
  tokens_row("LSTM LM training, float32 (TF32 on)", "lstm_lm_tf32", train_seconds(kLarge, gpu, std::nullopt, reps),
             tokens_large, 1.0);
  mx::set_matmul_precision("highest");
  tokens_row("LSTM LM training, bfloat16 autocast", "lstm_lm_bf16",
             train_seconds(kLarge, gpu, mx::DType::bfloat16, reps), tokens_large, 1.0);
  {
    bench::Row r{"generation step, batch 1 (hybridized)", "lstm_generate", "us/step"};
    r.unit = 0;
    r.higher_is_better = false;
    r.ndgluon = r.from_seconds(generation_seconds(kLarge, gpu, 50));
    r.peer_target = 2.0;  // at most half of PyTorch eager's latency
    rows.push_back(r);
  }
  tokens_row("LSTM layers fwd+bwd, cuDNN", "lstm_layers", layers_seconds<rnn::LSTM>(kLarge, gpu, true, reps),
             tokens_large, 0);
  tokens_row("LSTM layers fwd+bwd, unfused (GEMMs + step kernels)", "lstm_layers",
             layers_seconds<rnn::LSTM>(kLarge, gpu, false, std::max(1, reps / 5)), tokens_large, 0);
  tokens_row("GRU layers fwd+bwd, cuDNN", "gru_layers", layers_seconds<rnn::GRU>(kLarge, gpu, true, reps),
             tokens_large, 0);
  tokens_row("GRU layers fwd+bwd, unfused (GEMMs + step kernels)", "gru_layers",
             layers_seconds<rnn::GRU>(kLarge, gpu, false, std::max(1, reps / 5)), tokens_large, 0);
  tokens_row("cpu(0): small LSTM LM training, float32", "lstm_lm_cpu", train_seconds(kSmall, mx::cpu(), std::nullopt, 3),
             tokens_small, 1.0);
  bench::attach_peer(rows, bench::run_peer("python3 " + peer_script + " rnn"));
  bench::print_table(rows);
  return 0;
}
