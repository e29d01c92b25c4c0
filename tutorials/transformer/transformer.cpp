// A decoder-only character-level Transformer on tinyshakespeare, the recipe widely reproduced
// from nanoGPT's shakespeare_char (validation loss about 1.47 nats): 6 pre-norm blocks of width
// 384 with 6 heads, a context of 256 characters, dropout 0.2, no biases, the output layer tied to
// the token embedding; AdamW (lr 1e-3, betas 0.9 and 0.99, PyTorch's weight decay 0.1 on the matrices),
// 100 steps of warm-up then a cosine decay to lr / 10, gradients clipped to a global norm of 1,
// batches of 64 windows drawn at random from the first 90% of the text; the last 10% is the
// validation split. On a GPU the forward runs under bfloat16 autocast.
//
//   transformer [--data PATH] [--ctx cpu|gpu|gpu:N] [--steps N] [--batch-size N] [--context N]
//               [--layers N] [--heads N] [--width N] [--dropout P] [--lr R] [--eval-interval N]
//               [--eval-iters N] [--dtype float32|bfloat16] [--sample N] [--csv FILE] [--seed N]
//
// Every --eval-interval steps (and after the last) it prints the mean loss of --eval-iters random
// batches of each split, in prediction mode; at the end the final validation loss, tokens/s and
// --sample characters sampled from the model after a newline. As nanoGPT keeps only the checkpoint
// of the best validation loss (the recipe overfits this small text after about 1,500 steps: its
// 1.47 is that checkpoint's), the parameters of the best evaluation are kept: the end reports
// their loss and samples from them. The curves go to a CSV (step, train
// loss, validation loss) and, when gnuplot is installed, to a PNG next to it.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gluon/loss.hpp>
#include <gluon/lr_scheduler.hpp>
#include <gluon/nn.hpp>
#include <gluon/trainer.hpp>
#include <gluon/utils.hpp>
#include <ndarray/amp/amp.hpp>
#include <ndarray/ndarray.hpp>

#include "tutorials/cli.hpp"
#include "tutorials/common.hpp"

namespace nd = mx::nd;
namespace gluon = mx::gluon;
namespace nn = mx::gluon::nn;

namespace {

struct Config {
  std::int64_t vocab = 65, context = 256, layers = 6, heads = 6, width = 384;
  double dropout = 0.2;
};

nn::Dense linear(std::int64_t units, std::int64_t in_units) {
  return nn::Dense(units, nn::DenseOptions{.use_bias = false, .flatten = false, .in_units = in_units});
}

nn::LayerNorm layer_norm(std::int64_t width) {
  return nn::LayerNorm(nn::LayerNormOptions{.center = false, .in_channels = width});  // no bias, as nanoGPT's
}

// Causal self-attention over (B, T, C): one projection to queries, keys and values, the heads'
// scaled dot-product attention (causal, dropout on the weights), the output projection, dropout.
class CausalSelfAttention : public gluon::Block {
 public:
  explicit CausalSelfAttention(const Config& c)
      : Block("attention"), heads_(c.heads), dropout_p_(c.dropout),
        c_attn_(in_name_scope([&] { return register_child(linear(3 * c.width, c.width), "c_attn"); })),
        c_proj_(in_name_scope([&] { return register_child(linear(c.width, c.width), "c_proj"); })),
        dropout_(in_name_scope([&] { return register_child(nn::Dropout(c.dropout), "dropout"); })) {}

  nd::NDArray forward(const nd::NDArray& x) override {
    const std::int64_t B = x.shape()[0], T = x.shape()[1], C = x.shape()[2], d = C / heads_;
    // (B, T, 3, H, d) -> (3, B, H, T, d): queries, keys and values, each (B, H, T, d).
    const nd::NDArray qkv = nd::transpose(c_attn_(x).reshape({B, T, 3, heads_, d}), {2, 0, 3, 1, 4});
    const auto part = [&](std::int64_t i) { return nd::slice_axis(qkv, 0, i, i + 1).reshape({B, heads_, T, d}); };
    const nd::NDArray y =
        nd::scaled_dot_product_attention(part(0), part(1), part(2), {.causal = true, .dropout = dropout_p_});
    return dropout_(c_proj_(nd::transpose(y, {0, 2, 1, 3}).reshape({B, T, C})));
  }

 private:
  std::int64_t heads_;
  double dropout_p_;
  nn::Dense c_attn_, c_proj_;
  nn::Dropout dropout_;
};

// x + attention(ln_1(x)), then + mlp(ln_2(x)): GELU between c_fc (4 C) and c_proj.
class TransformerBlock : public gluon::Block {
 public:
  explicit TransformerBlock(const Config& c)
      : Block("block"), ln_1_(in_name_scope([&] { return register_child(layer_norm(c.width), "ln_1"); })),
        attn_(in_name_scope([&] { return register_child(CausalSelfAttention(c), "attn"); })),
        ln_2_(in_name_scope([&] { return register_child(layer_norm(c.width), "ln_2"); })),
        c_fc_(in_name_scope([&] { return register_child(linear(4 * c.width, c.width), "c_fc"); })),
        c_proj_(in_name_scope([&] { return register_child(linear(c.width, 4 * c.width), "c_proj"); })),
        dropout_(in_name_scope([&] { return register_child(nn::Dropout(c.dropout), "dropout"); })) {}

  nd::NDArray forward(const nd::NDArray& x) override {
    const nd::NDArray h = x + attn_(ln_1_(x));
    return h + dropout_(c_proj_(nd::LeakyReLU(c_fc_(ln_2_(h)), "gelu")));
  }

  nn::Dense& c_proj() { return c_proj_; }
  CausalSelfAttention& attention() { return attn_; }

 private:
  nn::LayerNorm ln_1_;
  CausalSelfAttention attn_;
  nn::LayerNorm ln_2_;
  nn::Dense c_fc_, c_proj_;
  nn::Dropout dropout_;
};

// tokens (B, T) -> scores (B, T, vocab): token and position embeddings, dropout, the blocks, the
// final LayerNorm, and the token embedding's weight as the output layer.
class GPT : public gluon::Block {
 public:
  explicit GPT(const Config& c)
      : Block("gpt"), config_(c),
        wte_(in_name_scope([&] { return register_child(nn::Embedding(c.vocab, c.width), "wte"); })),
        wpe_(in_name_scope([&] { return register_child(nn::Embedding(c.context, c.width), "wpe"); })),
        dropout_(in_name_scope([&] { return register_child(nn::Dropout(c.dropout), "dropout"); })),
        ln_f_(in_name_scope([&] { return register_child(layer_norm(c.width), "ln_f"); })) {
    nn::Sequential h = in_name_scope([&] { return register_child(nn::Sequential(), "h"); });
    for (std::int64_t i = 0; i < c.layers; ++i) {
      blocks_.push_back(in_name_scope([&] { return TransformerBlock(c); }));
      h.add(blocks_.back());
    }
  }

  nd::NDArray forward(const nd::NDArray& tokens) override {
    const std::int64_t T = tokens.shape()[1];
    const nd::NDArray positions = nd::arange(0, static_cast<double>(T), 1, tokens.context(), mx::DType::int32);
    nd::NDArray x = dropout_(wte_(tokens) + nd::expand_dims(wpe_(positions), 0));
    for (TransformerBlock& block : blocks_) x = block(x);
    x = ln_f_(x);
    return nd::FullyConnected(x, wte_.weight().data(x.context()), {}, config_.vocab, true, false);
  }

  // nanoGPT's initialisation: Normal(0.02) everywhere, the residual projections (each block's
  // attention and MLP c_proj) Normal(0.02 / sqrt(2 · layers)); LayerNorm's gamma 1.
  void init_weights(mx::Context ctx) {
    initialize(mx::init::Normal(0.02), ctx);
    const double scale = 1.0 / std::sqrt(2.0 * static_cast<double>(config_.layers));
    for (auto& [key, param] : structural_params()) {
      if (key.ends_with("c_proj.weight")) param.set_data(param.data(ctx) * scale);
    }
  }

 private:
  Config config_;
  nn::Embedding wte_, wpe_;
  nn::Dropout dropout_;
  std::vector<TransformerBlock> blocks_;
  nn::LayerNorm ln_f_;
};

struct Options {
  std::string data;  // "": $TINY_SHAKESPEARE
  std::string ctx;   // "": gpu(0) when there is one, else cpu(0)
  std::int64_t steps = 5000, batch_size = 64, context = 256, layers = 6, heads = 6, width = 384;
  double dropout = 0.2, lr = 1e-3;
  std::int64_t eval_interval = 500, eval_iters = 200, sample = 500;
  std::string dtype;  // "": bfloat16 on a GPU, float32 on cpu(0)
  std::string csv = "transformer.csv";
  std::uint64_t seed = 1337;
};

constexpr const char* kWhereToGetIt =
    "tinyshakespeare is Andrej Karpathy's char-rnn corpus (https://raw.githubusercontent.com/karpathy/char-rnn/"
    "master/data/tinyshakespeare/input.txt, 1,115,394 bytes)";

// Draws batches of windows: x the characters at i .. i + T - 1, y those one further.
class Batches {
 public:
  Batches(const std::vector<std::int32_t>& ids, std::int64_t batch, std::int64_t context, std::uint64_t seed)
      : ids_(ids), batch_(batch), context_(context), rng_(seed) {}
  std::pair<nd::NDArray, nd::NDArray> next(mx::Context ctx) {
    std::uniform_int_distribution<std::int64_t> start(0, static_cast<std::int64_t>(ids_.size()) - context_ - 1);
    std::vector<std::int32_t> x(static_cast<std::size_t>(batch_ * context_)), y(x.size());
    for (std::int64_t b = 0; b < batch_; ++b) {
      const std::int64_t i = start(rng_);
      for (std::int64_t t = 0; t < context_; ++t) {
        x[static_cast<std::size_t>(b * context_ + t)] = ids_[static_cast<std::size_t>(i + t)];
        y[static_cast<std::size_t>(b * context_ + t)] = ids_[static_cast<std::size_t>(i + t + 1)];
      }
    }
    return {nd::array(x, {batch_, context_}, ctx), nd::array(y, {batch_ * context_}, ctx)};
  }

 private:
  const std::vector<std::int32_t>& ids_;
  std::int64_t batch_, context_;
  std::mt19937_64 rng_;
};

nd::NDArray loss_of(GPT& net, const nd::NDArray& x, const nd::NDArray& y, std::optional<mx::DType> amp) {
  static const gluon::loss::SoftmaxCrossEntropyLoss loss;
  const auto scope = mx::amp::autocast(amp);
  const nd::NDArray scores = net(x);
  return loss(scores.reshape({y.size(), scores.shape()[2]}).astype(mx::DType::float32), y).mean();
}

double mean_loss(GPT& net, Batches& batches, std::int64_t iters, mx::Context ctx, std::optional<mx::DType> amp) {
  nd::NDArray total = nd::zeros({1}, ctx);
  for (std::int64_t i = 0; i < iters; ++i) {
    const auto [x, y] = batches.next(ctx);
    total = total + loss_of(net, x, y, amp).reshape({1});
  }
  return total.asscalar<float>() / static_cast<double>(iters);
}

// n characters drawn from the model's softmax, one at a time, after a newline.
std::string sample(GPT& net, const std::string& chars, std::int64_t context, std::int64_t n, mx::Context ctx,
                   std::optional<mx::DType> amp, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::int32_t> ids{static_cast<std::int32_t>(chars.find('\n'))};
  std::string out;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t T = std::min<std::int64_t>(static_cast<std::int64_t>(ids.size()), context);
    const std::vector<std::int32_t> window(ids.end() - T, ids.end());
    const auto scope = mx::amp::autocast(amp);
    const nd::NDArray scores = net(nd::array(window, {1, T}, ctx));
    const std::vector<float> p =
        nd::softmax(nd::slice_axis(scores, 1, T - 1, T).reshape({scores.shape()[2]}).astype(mx::DType::float32))
            .asvector<float>();
    std::discrete_distribution<std::int32_t> pick(p.begin(), p.end());
    ids.push_back(pick(rng));
    out += chars[static_cast<std::size_t>(ids.back())];
  }
  return out;
}

int run(const Options& o) {
  const mx::Context ctx = o.ctx.empty() ? mx::try_gpu() : *tutorial::context_named(o.ctx);
  const std::optional<std::string> corpus = tutorial::text_path(o.data, "TINY_SHAKESPEARE", "the corpus", kWhereToGetIt);
  if (!corpus) return 2;
  const std::string& path = *corpus;
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  const auto split = static_cast<std::int64_t>(0.9 * static_cast<double>(text.size()));
  if (!in || split - o.context - 1 < 1 || static_cast<std::int64_t>(text.size()) - split - o.context - 1 < 1) {
    std::fprintf(stderr, "error: %s: %zu characters are too few for windows of %lld in both splits (90%% / 10%%)\n",
                 path.c_str(), text.size(), static_cast<long long>(o.context + 1));
    return 1;
  }
  std::string chars = text;  // the vocabulary: the distinct characters, sorted (nanoGPT's prepare.py)
  std::sort(chars.begin(), chars.end());
  chars.erase(std::unique(chars.begin(), chars.end()), chars.end());
  std::vector<std::int32_t> train_ids, val_ids;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(text.size()); ++i) {
    const auto id = static_cast<std::int32_t>(chars.find(text[static_cast<std::size_t>(i)]));
    (i < split ? train_ids : val_ids).push_back(id);
  }
  const std::optional<mx::DType> amp = (o.dtype.empty() ? ctx.is_gpu() : o.dtype == "bfloat16")
                                           ? std::optional<mx::DType>(mx::DType::bfloat16)
                                           : std::nullopt;
  std::printf("tinyshakespeare from %s: %zu characters (%zu training, %zu validation), a vocabulary of %zu\n",
              path.c_str(), text.size(), train_ids.size(), val_ids.size(), chars.size());
  std::printf("GPT: %lld layers, %lld heads, width %lld, context %lld, dropout %g; AdamW lr %g, batch %lld, %lld steps, "
              "%s on %s%s\n",
              static_cast<long long>(o.layers), static_cast<long long>(o.heads), static_cast<long long>(o.width),
              static_cast<long long>(o.context), o.dropout, o.lr, static_cast<long long>(o.batch_size),
              static_cast<long long>(o.steps), amp ? "bfloat16 autocast" : "float32", ctx.str().c_str(),
              ctx.is_gpu() ? (" (" + mx::gpu_name(ctx.device_id()) + ")").c_str() : "");
  std::FILE* csv = tutorial::open_csv(o.csv, "step,train_loss,val_loss");
  if (!csv) return 1;

  mx::random::seed(o.seed);
  GPT net({.vocab = static_cast<std::int64_t>(chars.size()), .context = o.context, .layers = o.layers,
           .heads = o.heads, .width = o.width, .dropout = o.dropout});
  net.init_weights(ctx);
  std::int64_t count = 0;
  for (auto [name, param] : net.collect_params()) {  // parameters are handles
    count += param.shape().numel();
    if (param.shape().ndim() < 2) param.set_wd_mult(0);  // no decay for LayerNorm's gamma, as nanoGPT
  }
  std::printf("%.2fM parameters\n", static_cast<double>(count) / 1e6);
  net.hybridize();  // one graph for training and one for evaluation
  const std::int64_t warmup = std::min<std::int64_t>(100, o.steps / 10);
  auto schedule = std::make_shared<mx::lr_scheduler::CosineScheduler>(o.steps, o.lr, o.lr / 10, warmup);
  // MXNet's AdamW decays by wd · w per step (w -= eta (lr m / (sqrt(v) + eps) + wd w)), PyTorch's
  // by lr · wd · w: nanoGPT's weight decay of 0.1 at the peak rate is wd = 0.1 · lr here.
  gluon::Trainer trainer(net.collect_params(), "adamw",
                         {{"learning_rate", o.lr}, {"beta1", 0.9}, {"beta2", 0.99}, {"wd", 0.1 * o.lr}}, schedule);
  std::vector<nd::NDArray> grads;
  for (const auto& [name, param] : net.collect_params()) {
    if (param.grad_req() != "null") grads.push_back(param.grad(ctx));  // LayerNorm's beta is fixed at 0
  }
  Batches train(train_ids, o.batch_size, o.context, o.seed), train_eval(train_ids, o.batch_size, o.context, o.seed + 1),
      val_eval(val_ids, o.batch_size, o.context, o.seed + 2);
  double seconds = 0, val_loss = 0, best_loss = INFINITY;
  std::int64_t best_step = 0;
  std::vector<nd::NDArray> live, best;  // the parameters, and a copy of them at the best evaluation
  for (const auto& [name, param] : net.collect_params()) {
    live.push_back(param.data(ctx));
    best.push_back(nd::zeros_like(live.back()));
  }
  const auto evaluate = [&](std::int64_t step) {
    const double train_loss = mean_loss(net, train_eval, o.eval_iters, ctx, amp);
    val_loss = mean_loss(net, val_eval, o.eval_iters, ctx, amp);
    std::printf("  step %5lld  train loss %.4f  val loss %.4f\n", static_cast<long long>(step), train_loss, val_loss);
    std::fflush(stdout);
    std::fprintf(csv, "%lld,%.6g,%.6g\n", static_cast<long long>(step), train_loss, val_loss);
    if (val_loss < best_loss) {
      best_loss = val_loss;
      best_step = step;
      for (std::size_t i = 0; i < live.size(); ++i) live[i].copyto(best[i]);
    }
  };
  for (std::int64_t step = 0; step < o.steps; ++step) {
    if (step % o.eval_interval == 0) evaluate(step);
    const auto start = std::chrono::steady_clock::now();
    const auto [x, y] = train.next(ctx);
    {
      auto record = mx::autograd::record();
      loss_of(net, x, y, amp).backward();
    }
    gluon::utils::clip_global_norm(grads, 1.0);  // reads the norm: the step's work is done after it
    trainer.step(1);
    nd::waitall();
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  evaluate(o.steps);
  std::printf("final validation loss %.4f after %lld steps, %.0f tokens/s on %s\n", val_loss,
              static_cast<long long>(o.steps), static_cast<double>(o.steps * o.batch_size * o.context) / seconds,
              ctx.str().c_str());
  if (best_step != o.steps) {
    for (std::size_t i = 0; i < live.size(); ++i) best[i].copyto(live[i]);
  }
  std::printf("best validation loss %.4f at step %lld: its parameters are kept and sampled from\n", best_loss,
              static_cast<long long>(best_step));
  net.hybridize(false);  // each sampling length would be a signature of its own: eager is cheaper
  std::printf("sample:\n%s\n", sample(net, chars, o.context, o.sample, ctx, amp, o.seed).c_str());
  const std::optional<std::string> write_failed = tutorial::close_csv(csv);
  if (write_failed) {
    std::fprintf(stderr, "error: writing the curves to %s failed: %s\n", o.csv.c_str(), write_failed->c_str());
    return 1;
  }
  std::printf("curves written to %s\n", o.csv.c_str());
  tutorial::plot_png(o.csv, "set xlabel 'step'\nset ylabel 'loss (nats)'\nset grid\nplot '" + o.csv +
                                "' using 1:2 with lines title 'train', '' using 1:3 with lines title 'validation'\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"A decoder-only character-level Transformer on tinyshakespeare (nanoGPT's shakespeare_char recipe): "
               "validation loss about 1.47 nats after 5,000 steps."};
  app.footer("Quick check: transformer --data tinyshakespeare.txt --ctx cpu --steps 20 --layers 2 --width 64 --context 64 "
             "--batch-size 8 --eval-iters 2");
  Options o;
  app.add_option("--data", o.data, "the corpus (tinyshakespeare's input.txt)")
      ->type_name("PATH")
      ->default_str("$TINY_SHAKESPEARE")
      ->check(tutorial::existing_text(kWhereToGetIt));
  app.add_option("--ctx", o.ctx, "train on this context: cpu, gpu (that is gpu:0) or gpu:N")
      ->type_name("CTX")
      ->default_str("gpu:0, else cpu")
      ->check(tutorial::existing_context());
  app.add_option("--steps", o.steps, "optimizer steps")->capture_default_str()->check(cli::integer(1, 10'000'000));
  app.add_option("--batch-size", o.batch_size, "windows per step")->capture_default_str()->check(cli::integer(1, 1 << 20));
  app.add_option("--context", o.context, "characters per window (the model's block size)")
      ->capture_default_str()
      ->check(cli::integer(1, 1 << 16));
  app.add_option("--layers", o.layers, "Transformer blocks")->capture_default_str()->check(cli::integer(1, 1024));
  app.add_option("--heads", o.heads, "attention heads (they divide --width)")->capture_default_str()->check(cli::integer(1, 1024));
  app.add_option("--width", o.width, "the model's width")->capture_default_str()->check(cli::integer(1, 1 << 16));
  app.add_option("--dropout", o.dropout, "dropout probability")->capture_default_str()->check(CLI::Range(0.0, 0.95));
  app.add_option("--lr", o.lr, "AdamW's peak learning rate")->capture_default_str()->check(cli::positive_number());
  app.add_option("--eval-interval", o.eval_interval, "steps between evaluations")
      ->capture_default_str()
      ->check(cli::integer(1));
  app.add_option("--eval-iters", o.eval_iters, "batches per split in each evaluation")
      ->capture_default_str()
      ->check(cli::integer(1));
  app.add_option("--dtype", o.dtype, "float32, or bfloat16 (autocast)")
      ->default_str("bfloat16 on a GPU, float32 on cpu")
      ->check(CLI::IsMember({"float32", "bfloat16"}));
  app.add_option("--sample", o.sample, "characters sampled at the end")->capture_default_str()->check(cli::integer(0));
  app.add_option("--csv", o.csv, "where to write the curves (step, train and validation loss); a PNG goes next to it")
      ->type_name("FILE")
      ->capture_default_str()
      ->check(cli::file_to_write());
  app.add_option("--seed", o.seed, "the random seed of the initial values, dropout and batches")
      ->capture_default_str()
      ->check(cli::integer(0));
  if (const std::optional<int> exit_code = cli::parse(app, argc, argv)) return *exit_code;
  if (o.width % o.heads != 0) {
    std::fprintf(stderr, "error: --heads %lld does not divide --width %lld\nrun with --help for usage\n",
                 static_cast<long long>(o.heads), static_cast<long long>(o.width));
    return 2;
  }
  try {
    return run(o);
  } catch (const mx::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
