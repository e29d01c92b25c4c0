// Gluon benchmarks on one GPU:
//   - Dense forward, batch 4096, 4096 -> 4096, float32: against raw cublasSgemm plus a bias kernel,
//     and torch.nn.Linear (2 * 4096^3 flop; the bias pass moves 2 x 64 MiB).
//   - a Fashion-MNIST epoch of the D2L MLP (784-256-10), eager and hybridized, against PyTorch's.
//   - a 3-layer MLP (784-256-256-10, ReLU) forward at batch 1 and 64: microseconds per forward,
//     against the same model in PyTorch. bench/hybridize_bench.cpp has the hybridized cases.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <optional>
#include <string>

#include <gluon/data.hpp>
#include <gluon/loss.hpp>
#include <gluon/nn.hpp>
#include <gluon/trainer.hpp>

#include "bench/bench_util.hpp"
#include "bench/cuda_check.hpp"
#include "bench/peer_cli.hpp"
#include "bench/raw_kernels.hpp"

namespace nd = mx::nd;
namespace nn = mx::gluon::nn;


namespace {

void device_sync() { CHECK(cudaDeviceSynchronize()); }
void nd_sync() { nd::waitall(); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Gluon benchmarks on gpu(0): Dense forward (and backward) against cublasSgemm, a Fashion-MNIST "
               "training epoch, MLP forward latency; PyTorch as the peer, measured in one run. "
               "Run from the source root: build/bench/gluon_bench bench/torch_peer.py"};
  std::string peer_script;
  if (const std::optional<int> exit_code = bench::parse_peer_command_line(app, argc, argv, peer_script)) {
    return *exit_code;
  }
  const mx::Context gpu0 = mx::gpu(0);
  std::printf("device: %s, Gluon layers vs raw cuBLAS vs PyTorch\n", mx::gpu_name(0).c_str());
  std::vector<bench::Row> rows;

  {
    const int n = 4096;
    nn::Dense dense(n, "", true, n);
    dense.initialize(mx::init::Xavier(), gpu0);
    auto x = nd::random::uniform(-1, 1, {n, n}, gpu0);
    nd::NDArray y;
    const double t_nd = bench::median_seconds([&] { y = dense(x); }, nd_sync, 5);

    float *a, *w, *b, *c;
    CHECK(cudaMalloc(&a, sizeof(float) * n * n));
    CHECK(cudaMalloc(&w, sizeof(float) * n * n));
    CHECK(cudaMalloc(&c, sizeof(float) * n * n));
    CHECK(cudaMalloc(&b, sizeof(float) * n));
    CHECK(cudaMemset(a, 0, sizeof(float) * n * n));
    CHECK(cudaMemset(w, 0, sizeof(float) * n * n));
    CHECK(cudaMemset(b, 0, sizeof(float) * n));
    cublasHandle_t handle;
    CHECK(cublasCreate(&handle));
    const float one = 1, zero = 0;
    const double t_raw = bench::median_seconds([&] {
      // row-major out (n, n) = x · wᵀ: column-major outᵀ = w · xᵀ
      CHECK(cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &one, w, n, a, n, &zero, c, n));
      bench::launch_add_bias(c, b, n, n);
    }, device_sync, 5);
    CHECK(cublasDestroy(handle));
    for (float* p : {a, w, b, c}) CHECK(cudaFree(p));
    bench::Row row;
    row.name = "Dense forward 4096x4096, batch 4096 (vs cublasSgemm + bias kernel)";
    row.peer_key = "linear";
    row.metric = "TFLOP/s";
    row.work = 2.0 * n * n * n;
    row.unit = 1e12;
    row.ndgluon = row.from_seconds(t_nd);
    row.raw = row.from_seconds(t_raw);
    row.target = 0.95;
    rows.push_back(row);
  }

  {
    // Dense forward + backward: y = x·Wᵀ + b, then dW = gᵀ·x and db = sum(g) from a head gradient g
    // (x needs no gradient): 2 products of 2·4096³ flop.
    const int n = 4096;
    nn::Dense dense(n, "", true, n);
    dense.initialize(mx::init::Xavier(), gpu0);
    auto x = nd::random::uniform(-1, 1, {n, n}, gpu0);
    auto g = nd::random::uniform(-1, 1, {n, n}, gpu0);
    const double t = bench::median_seconds([&] {
      nd::NDArray y;
      {
        auto recording = mx::autograd::record();
        y = dense(x);
      }
      y.backward(g);
    }, nd_sync, 5);
    bench::Row row;
    row.name = "Dense forward+backward 4096x4096, batch 4096";
    row.peer_key = "linear_fwd_bwd";
    row.metric = "TFLOP/s";
    row.work = 4.0 * n * n * n;
    row.unit = 1e12;
    row.ndgluon = row.from_seconds(t);
    rows.push_back(row);
  }

  {
    // One epoch of the D2L MLP (784-256-10, ReLU) on Fashion-MNIST: batch 256, SGD lr 0.5, batches
    // from the DataLoader (host, pinned) copied to the GPU, as in tutorials/train_fashion_mnist;
    // eager, then the same loop with the net hybridized. static_shape stays off there: the last
    // batch of the epoch has 96 samples and gets a graph of its own (traced in the warm-up epoch).
    namespace gdata = mx::gluon::data;
    gdata::DataLoader train(gdata::FashionMNIST(true), 256, true, "keep", gdata::to_tensor);
    double eager_samples_per_second = 0;
    for (const bool hybridized : {false, true}) {
      nn::Sequential net;
      net.add(nn::Flatten(), nn::Dense(256, "relu"), nn::Dense(10));
      net.initialize(mx::init::Normal(0.01), gpu0);
      if (hybridized) net.hybridize(true, true, false);
      mx::gluon::Trainer trainer(net.collect_params(), "sgd", {{"learning_rate", 0.5}});
      mx::gluon::loss::SoftmaxCrossEntropyLoss loss;
      auto epoch = [&] {
        for (auto& [X, y] : train) {
          const auto Xg = X.as_in_context(gpu0), yg = y.as_in_context(gpu0);
          nd::NDArray l;
          {
            auto recording = mx::autograd::record();
            l = loss(net(Xg), yg);
          }
          l.backward();
          trainer.step(Xg.shape()[0]);
        }
      };
      const double t = bench::median_seconds(epoch, nd_sync, 1, 3);
      bench::Row row;
      row.name = "MLP training epoch, Fashion-MNIST 60k, batch 256, SGD";
      row.peer_key = "epoch";
      row.metric = "samples/s";
      row.work = 60000;
      row.unit = 1;
      row.ndgluon = row.from_seconds(t);
      if (hybridized) {
        // raw: the eager epoch above, so ndgluon/raw is hybridize's speed-up.
        row.name += ", hybridized (vs eager)";
        row.raw = eager_samples_per_second;
        row.peer_target = 3.0;
      } else {
        eager_samples_per_second = row.ndgluon;
      }
      rows.push_back(row);
    }
  }

  for (int batch : {1, 64}) {
    nn::Sequential mlp;
    mlp.add(nn::Dense(256, "relu"), nn::Dense(256, "relu"), nn::Dense(10));
    mlp.initialize(mx::init::Xavier(), gpu0);
    auto x = nd::random::uniform(0, 1, {batch, 784}, gpu0);
    nd::NDArray y;
    const double t = bench::median_seconds([&] { y = mlp(x); }, nd_sync, 1000);
    bench::Row row;
    row.name = "MLP 784-256-256-10 forward, batch " + std::to_string(batch);
    row.peer_key = "mlp" + std::to_string(batch);
    row.metric = "us/forward";
    row.unit = 0;
    row.higher_is_better = false;
    row.ndgluon = row.from_seconds(t);
    rows.push_back(row);
  }

  bench::attach_peer(rows, bench::run_peer("python3 " + peer_script + " gluon"));
  std::printf("\n");
  bench::print_table(rows);
  return 0;
}
