// Attention and Transformers against PyTorch, in one run on one GPU:
//   - scaled dot-product attention, forward and backward, bfloat16, batch 8, 16 heads, head dim 64
//     and 128, sequence 512, 2,048 and 8,192, causal and not: TFLOP/s (4·B·H·T²·d forward, 2.5x
//     that backward, halved when causal) against torch.nn.functional.scaled_dot_product_attention;
//   - LayerNorm forward and backward, bfloat16, (4,096 x 8,192) and (32,768 x 768): GB/s of the
//     bytes it must move (x and y forward; x, dy and dx backward) against PyTorch's layer_norm and
//     against the GPU's memory bandwidth (cudaMemcpy, a device-to-device copy);
//   - a BERT-base encoder training step (12 layers of 768, 12 heads, FFN 3,072, sequence 128,
//     batch 32, bfloat16 autocast, AdamW): tokens/s against PyTorch's nn.TransformerEncoder, eager
//     and torch.compile.
// A case that does not fit the GPU's memory (the reference attention holds the T x T weights) is
// reported as such. Run from the source root: build/bench/attention_bench bench/torch_peer.py
#include <cuda_runtime.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <gluon/nlp/bert.hpp>
#include <gluon/trainer.hpp>
#include <ndarray/amp/amp.hpp>
#include <ndarray/ndarray.hpp>

#include "bench/bench_util.hpp"
#include "bench/cuda_check.hpp"
#include "bench/peer_cli.hpp"
#include "ndarray/ops/op.hpp"

namespace nd = mx::nd;
namespace nlp = mx::gluon::nlp;

namespace {

const auto nd_sync = [] { nd::waitall(); };

bench::Row row(const std::string& name, const std::string& key, const char* metric, double work, double unit,
               double peer_target) {
  bench::Row r;
  r.name = name;
  r.peer_key = key;
  r.metric = metric;
  r.work = work;
  r.unit = unit;
  r.peer_target = peer_target;
  return r;
}

// Seconds per device-to-device cudaMemcpy of `bytes`: the memory bandwidth's reference.
double d2d_copy_seconds(std::size_t bytes) {
  void *from = nullptr, *to = nullptr;
  CHECK(cudaMalloc(&from, bytes));
  CHECK(cudaMalloc(&to, bytes));
  const double s = bench::median_seconds([&] { CHECK(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice)); },
                                         [] { CHECK(cudaDeviceSynchronize()); }, 10);
  CHECK(cudaFree(from));
  CHECK(cudaFree(to));
  return s;
}

// Seconds per forward + backward of attention over (B, H, T, d) bfloat16; nullopt when it does
// not fit.
std::optional<double> sdpa_seconds(std::int64_t B, std::int64_t H, std::int64_t T, std::int64_t d, bool causal) {
  try {
    const mx::Context gpu = mx::gpu(0);
    nd::NDArray q = nd::random::uniform(-1, 1, {B, H, T, d}, gpu, mx::DType::bfloat16);
    nd::NDArray k = nd::random::uniform(-1, 1, {B, H, T, d}, gpu, mx::DType::bfloat16);
    nd::NDArray v = nd::random::uniform(-1, 1, {B, H, T, d}, gpu, mx::DType::bfloat16);
    const nd::NDArray g = nd::random::uniform(-1, 1, {B, H, T, d}, gpu, mx::DType::bfloat16);
    for (nd::NDArray* a : {&q, &k, &v}) a->attach_grad();
    const auto step = [&] {
      nd::NDArray y;
      {
        auto recording = mx::autograd::record();
        y = nd::scaled_dot_product_attention(q, k, v, {.causal = causal});
      }
      y.backward(g);
    };
    return bench::median_seconds(step, nd_sync, T >= 8192 ? 2 : 5, 3);
  } catch (const mx::OutOfMemory&) {
    nd::waitall();
    return std::nullopt;
  }
}

double layer_norm_seconds(std::int64_t rows, std::int64_t cols) {
  const mx::Context gpu = mx::gpu(0);
  const nd::NDArray x = nd::random::uniform(-1, 1, {rows, cols}, gpu, mx::DType::bfloat16);
  const nd::NDArray g = nd::random::uniform(-1, 1, {rows, cols}, gpu, mx::DType::bfloat16);
  nd::NDArray gamma = nd::ones({cols}, gpu, mx::DType::bfloat16), beta = nd::zeros({cols}, gpu, mx::DType::bfloat16);
  nd::NDArray input = x;
  for (nd::NDArray* a : {&input, &gamma, &beta}) a->attach_grad();
  return bench::median_seconds([&] {
    nd::NDArray y;
    {
      auto recording = mx::autograd::record();
      y = nd::LayerNorm(input, gamma, beta);
    }
    y.backward(g);
  }, nd_sync, 20);
}

// The same forward and backward as the LayerNorm op and its backward op run directly, outside
// autograd: what the kernels alone cost, so that the recorded row's gap to it is autograd's.
double layer_norm_kernels_seconds(std::int64_t rows, std::int64_t cols) {
  const mx::Context gpu = mx::gpu(0);
  const nd::NDArray x = nd::random::uniform(-1, 1, {rows, cols}, gpu, mx::DType::bfloat16);
  const nd::NDArray g = nd::random::uniform(-1, 1, {rows, cols}, gpu, mx::DType::bfloat16);
  const nd::NDArray gamma = nd::ones({cols}, gpu, mx::DType::bfloat16), beta = nd::zeros({cols}, gpu, mx::DType::bfloat16);
  mx::op::AttrPairs attrs;
  const mx::op::OpDef* forward = mx::op::find_op("LayerNorm", attrs);
  const mx::op::OpDef* backward = mx::op::find_op("_backward_LayerNorm", attrs);
  const mx::op::Params params = forward->parse_attrs(attrs);
  return bench::median_seconds([&] {
    const std::vector<nd::NDArray> out = mx::op::invoke(*forward, {x, gamma, beta}, params);
    mx::op::invoke(*backward, {g, x, gamma, out[1], out[2]}, params);
  }, nd_sync, 20);
}

// Seconds per training step of BERT-base's encoder on (T, B, 768) inputs, loss mean(y²).
double bert_encoder_seconds(std::int64_t T, std::int64_t B) {
  const mx::Context gpu = mx::gpu(0);
  nlp::BERTEncoder encoder({.num_layers = 12, .units = 768, .hidden_size = 3072, .max_length = 512, .num_heads = 12,
                            .dropout = 0.1});
  encoder.initialize(mx::init::Normal(0.02), gpu);
  mx::gluon::Trainer trainer(encoder.collect_params(), "adamw", {{"learning_rate", 1e-4}, {"wd", 1e-6}});
  const nd::NDArray x = nd::random::uniform(-1, 1, {T, B, 768}, gpu);
  return bench::median_seconds([&] {
    nd::NDArray loss;
    {
      auto recording = mx::autograd::record();
      auto amp = mx::amp::autocast(mx::DType::bfloat16);
      const nd::NDArray y = encoder(x).astype(mx::DType::float32);
      loss = (y * y).mean();
    }
    loss.backward();
    trainer.step(1);
  }, nd_sync, 5, 3);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Attention and Transformers on gpu(0) against PyTorch in one run: scaled dot-product attention forward "
               "and backward (bfloat16, causal and not), LayerNorm forward and backward against the memory bandwidth, "
               "a BERT-base encoder's training step. Run from the source root: build/bench/attention_bench "
               "bench/torch_peer.py"};
  std::string peer_script;
  if (const std::optional<int> exit_code = bench::parse_peer_command_line(app, argc, argv, peer_script)) {
    return *exit_code;
  }
  std::printf("device: %s\n", mx::gpu_name(0).c_str());
  std::vector<bench::Row> rows;
  const std::int64_t B = 8, H = 16;
  for (const std::int64_t d : {64, 128}) {
    for (const std::int64_t T : {512, 2048, 8192}) {
      for (const bool causal : {false, true}) {
        const std::string shape = "d " + std::to_string(d) + ", T " + std::to_string(T) + (causal ? ", causal" : "");
        const std::string key = "sdpa_d" + std::to_string(d) + "_t" + std::to_string(T) + (causal ? "_causal" : "");
        const double flops = 3.5 * 4.0 * static_cast<double>(B * H * T * T * d) / (causal ? 2.0 : 1.0);
        bench::Row r = row("attention fwd+bwd, bf16, B 8, H 16, " + shape, key, "TFLOP/s", flops, 1e12, 1.0);
        if (const std::optional<double> s = sdpa_seconds(B, H, T, d, causal)) {
          r.ndgluon = r.from_seconds(*s);
        } else {
          r.name += " (out of memory: the reference path holds T x T)";
        }
        rows.push_back(r);
      }
    }
  }
  // The bandwidth: a device-to-device copy of 1 GiB moves 2 GiB.
  const double copy_gbs = 2.0 * static_cast<double>(std::size_t{1} << 30) / d2d_copy_seconds(std::size_t{1} << 30) / 1e9;
  for (const auto& [rows_n, cols] : std::vector<std::pair<std::int64_t, std::int64_t>>{{4096, 8192}, {32768, 768}}) {
    const double bytes = 5.0 * 2.0 * static_cast<double>(rows_n * cols);  // x, y; x, dy, dx in bfloat16
    bench::Row r = row("LayerNorm fwd+bwd, bf16, " + std::to_string(rows_n) + " x " + std::to_string(cols) +
                           " (raw: the copy bandwidth)",
                       "layer_norm_" + std::to_string(rows_n) + "x" + std::to_string(cols), "GB/s", bytes, 1e9, 1.0);
    r.ndgluon = r.from_seconds(layer_norm_seconds(rows_n, cols));
    r.raw = copy_gbs;
    r.target = 0.85;
    rows.push_back(r);
    bench::Row k = row("LayerNorm fwd+bwd ops alone, no autograd, bf16, " + std::to_string(rows_n) + " x " +
                           std::to_string(cols) + " (raw: the copy bandwidth)",
                       "", "GB/s", bytes, 1e9, 0);
    k.ndgluon = k.from_seconds(layer_norm_kernels_seconds(rows_n, cols));
    k.raw = copy_gbs;
    rows.push_back(k);
  }
  const double tokens = 128.0 * 32.0;
  const double bert = bert_encoder_seconds(128, 32);
  for (const auto& [key, target] : std::vector<std::pair<std::string, double>>{{"bert_encoder_eager", 1.8},
                                                                               {"bert_encoder_compile", 1.0}}) {
    bench::Row r = row(std::string("BERT-base encoder training step, T 128, B 32, bf16 autocast, AdamW (vs PyTorch ") +
                           (key.ends_with("eager") ? "eager)" : "torch.compile)"),
                       key, "tokens/s", tokens, 1, target);
    r.ndgluon = r.from_seconds(bert);
    rows.push_back(r);
  }
  bench::attach_peer(rows, bench::run_peer("python3 " + peer_script + " attention"));
  bench::print_table(rows);
  return 0;
}
