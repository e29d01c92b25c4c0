// Mixed-precision benchmarks on one GPU, against raw cuBLASLt (through cublasGemmEx) and PyTorch:
//   - Dense forward+backward, 4096x4096 at batch 4096 (y = x·Wᵀ + b, then dW = gᵀ·x and db; two
//     products of 2·4096³ flop): float32 under set_matmul_precision("high") (TF32) against torch
//     with allow_tf32; bfloat16 under amp::autocast (float32 parameters cast each step) against
//     torch.autocast; and a net cast to bfloat16 (no casts). The raw baseline is the two products
//     alone, in the same precision.
//   - a Fashion-MNIST epoch of the D2L MLP (784-256-10) under autocast(bfloat16), against PyTorch's
//     under torch.autocast.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <optional>
#include <string>

#include <gluon/amp.hpp>
#include <gluon/data.hpp>
#include <gluon/loss.hpp>
#include <gluon/nn.hpp>
#include <gluon/trainer.hpp>

#include "bench/bench_util.hpp"
#include "bench/cuda_check.hpp"
#include "bench/peer_cli.hpp"

namespace nd = mx::nd;
namespace nn = mx::gluon::nn;

namespace {

void device_sync() { CHECK(cudaDeviceSynchronize()); }
void nd_sync() { nd::waitall(); }

// The two products of a Dense forward+backward with cublasGemmEx, in `type` with `compute`.
double raw_fwd_bwd(int n, cudaDataType_t type, std::size_t element, cublasComputeType_t compute) {
  void *x, *w, *y, *g, *dw;
  for (void** p : {&x, &w, &y, &g, &dw}) {
    CHECK(cudaMalloc(p, element * n * n));
    CHECK(cudaMemset(*p, 0, element * n * n));
  }
  cublasHandle_t handle;
  CHECK(cublasCreate(&handle));
  const float one = 1, zero = 0;
  const double t = bench::median_seconds([&] {
    // row-major y (n, n) = x · wᵀ: column-major yᵀ = w · xᵀ
    CHECK(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &one, w, type, n, x, type, n, &zero, y, type, n,
                       compute, CUBLAS_GEMM_DEFAULT));
    // row-major dW (n, n) = gᵀ · x: column-major dWᵀ = xᵀ · g
    CHECK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_T, n, n, n, &one, x, type, n, g, type, n, &zero, dw, type, n,
                       compute, CUBLAS_GEMM_DEFAULT));
  }, device_sync, 5);
  CHECK(cublasDestroy(handle));
  for (void* p : {x, w, y, g, dw}) CHECK(cudaFree(p));
  return t;
}

bench::Row fwd_bwd_row(const std::string& name, const std::string& peer_key, double seconds, double raw_seconds) {
  const double n = 4096;
  bench::Row row;
  row.name = name;
  row.peer_key = peer_key;
  row.metric = "TFLOP/s";
  row.work = 4.0 * n * n * n;
  row.unit = 1e12;
  row.ndgluon = row.from_seconds(seconds);
  row.raw = raw_seconds > 0 ? row.from_seconds(raw_seconds) : 0;
  row.peer_target = peer_key.empty() ? 0 : 1.0;
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Mixed-precision benchmarks on gpu(0): Dense forward+backward in TF32 and bfloat16 against "
               "cublasGemmEx, a bfloat16 Fashion-MNIST epoch; PyTorch as the peer, measured in one run. "
               "Run from the source root: build/bench/amp_bench bench/torch_peer.py"};
  std::string peer_script;
  if (const std::optional<int> exit_code = bench::parse_peer_command_line(app, argc, argv, peer_script)) {
    return *exit_code;
  }
  const mx::Context gpu0 = mx::gpu(0);
  std::printf("device: %s, mixed precision vs raw cuBLAS vs PyTorch\n", mx::gpu_name(0).c_str());
  std::vector<bench::Row> rows;
  const int n = 4096;

  // One Dense forward+backward from a head gradient g (x needs no gradient).
  const auto dense_fwd_bwd = [&](std::optional<mx::DType> autocast, mx::DType cast) {
    nn::Dense dense(n, "", true, n);
    dense.initialize(mx::init::Xavier(), gpu0);
    if (cast != mx::DType::float32) dense.cast(cast);
    const nd::NDArray x = nd::random::uniform(-1, 1, {n, n}, gpu0, cast);
    const nd::NDArray g = nd::random::uniform(-1, 1, {n, n}, gpu0, autocast.value_or(cast));
    return bench::median_seconds([&] {
      nd::NDArray y;
      {
        auto recording = mx::autograd::record();
        auto amp = mx::amp::autocast(autocast);
        y = dense(x);
      }
      y.backward(g);
    }, nd_sync, 5);
  };

  mx::set_matmul_precision("high");
  const double tf32 = dense_fwd_bwd(std::nullopt, mx::DType::float32);
  mx::set_matmul_precision("highest");
  rows.push_back(fwd_bwd_row("Dense fwd+bwd 4096, batch 4096, TF32 (vs cublasGemmEx TF32)", "linear_tf32", tf32,
                             raw_fwd_bwd(n, CUDA_R_32F, 4, CUBLAS_COMPUTE_32F_FAST_TF32)));
  const double raw_bf16 = raw_fwd_bwd(n, CUDA_R_16BF, 2, CUBLAS_COMPUTE_32F);
  rows.push_back(fwd_bwd_row("Dense fwd+bwd 4096, batch 4096, bfloat16 autocast (vs cublasGemmEx bf16)",
                             "linear_bf16", dense_fwd_bwd(mx::DType::bfloat16, mx::DType::float32), raw_bf16));
  rows.push_back(fwd_bwd_row("Dense fwd+bwd 4096, batch 4096, cast to bfloat16 (vs cublasGemmEx bf16)", "",
                             dense_fwd_bwd(std::nullopt, mx::DType::bfloat16), raw_bf16));

  {
    // The D2L MLP epoch (batch 256, SGD lr 0.5) under autocast(bfloat16), hybridized.
    namespace gdata = mx::gluon::data;
    gdata::DataLoader train(gdata::FashionMNIST(true), 256, true, "keep", gdata::to_tensor);
    nn::Sequential net;
    net.add(nn::Flatten(), nn::Dense(256, "relu"), nn::Dense(10));
    net.initialize(mx::init::Normal(0.01), gpu0);
    net.hybridize();
    mx::gluon::Trainer trainer(net.collect_params(), "sgd", {{"learning_rate", 0.5}});
    mx::gluon::loss::SoftmaxCrossEntropyLoss loss;
    auto epoch = [&] {
      for (auto& [X, y] : train) {
        const auto Xg = X.as_in_context(gpu0), yg = y.as_in_context(gpu0);
        nd::NDArray l;
        {
          auto recording = mx::autograd::record();
          auto amp = mx::amp::autocast(mx::DType::bfloat16);
          l = loss(net(Xg), yg);
        }
        l.backward();
        trainer.step(Xg.shape()[0]);
      }
    };
    bench::Row row;
    row.name = "MLP training epoch, Fashion-MNIST 60k, batch 256, bfloat16 autocast, hybridized";
    row.peer_key = "epoch_bf16";
    row.metric = "samples/s";
    row.work = 60000;
    row.unit = 1;
    row.ndgluon = row.from_seconds(bench::median_seconds(epoch, nd_sync, 1, 3));
    rows.push_back(row);
  }

  bench::attach_peer(rows, bench::run_peer("python3 " + peer_script + " amp"));
  std::printf("\n");
  bench::print_table(rows);
  return 0;
}
