// Convolution-family benchmarks on gpu(0), float32, against the raw library and PyTorch in one run:
//   - Conv2d 3×3 64→64 on (64, 64, 56, 56), forward + backward (data and weight): ndgluon
//     (nd::Convolution under autograd) against cudnnBackendExecute of the same three plans, and
//     with a bias against PyTorch (cudnn.benchmark, TF32 off);
//   - BatchNorm in training and 2×2 max pooling on the same shape, forward + backward, against
//     PyTorch (ndgluon runs its own kernels for both);
//   - LeNet and BN-LeNet training epochs (60000 samples already on the GPU, batch 256, SGD) against
//     PyTorch's: the same recipes as tutorials/lenet.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

#include <gluon/amp.hpp>
#include <gluon/loss.hpp>
#include <gluon/nn.hpp>
#include <gluon/trainer.hpp>

#include "bench/bench_util.hpp"
#include "bench/cuda_check.hpp"
#include "bench/peer_cli.hpp"
#include "cuda/cudnn_conv.hpp"
#include "cuda/device.hpp"
#include "tutorials/lenet/models.hpp"

namespace nd = mx::nd;
namespace nn = mx::gluon::nn;
namespace op = mx::op;

namespace {

void nd_sync() { nd::waitall(); }

// One cuDNN plan with its variant pack, built once: the raw call is cudnnBackendExecute alone.
struct RawPass {
  mx::cuda::CudnnConvPlan plan;
  cudnnBackendDescriptor_t pack = nullptr;

  RawPass(const mx::cuda::CudnnConvPlan& p, const void* a, const void* b, void* out, void* workspace) : plan(p) {
    CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack));
    const std::int64_t uids[] = {p.uid_a, p.uid_b, p.uid_out};
    void* pointers[] = {const_cast<void*>(a), const_cast<void*>(b), out};
    CHECK(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids));
    CHECK(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, pointers));
    CHECK(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace));
    CHECK(cudnnBackendFinalize(pack));
  }
  ~RawPass() { cudnnBackendDestroyDescriptor(pack); }
  void run() const { CHECK(cudnnBackendExecute(plan.handle, plan.plan, pack)); }
};

bench::Row time_row(const std::string& name, const std::string& peer_key, double seconds, double raw_seconds = 0) {
  bench::Row row;
  row.name = name;
  row.peer_key = peer_key;
  row.metric = "us";
  row.unit = 0;
  row.higher_is_better = false;
  row.ndgluon = row.from_seconds(seconds);
  if (raw_seconds > 0) row.raw = row.from_seconds(raw_seconds);
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Convolution, batch norm, pooling and LeNet training on gpu(0) against raw cuDNN and PyTorch, "
               "measured in one run. Run from the source root: build/bench/conv_bench bench/torch_peer.py"};
  std::string peer_script;
  bool profile = false;
  app.add_flag("--profile", profile, "print the host time of each op and layer of 20 LeNet and BN-LeNet iterations");
  if (const std::optional<int> exit_code = bench::parse_peer_command_line(app, argc, argv, peer_script)) {
    return *exit_code;
  }
  const mx::Context gpu0 = mx::gpu(0);
  std::printf("device: %s, convolution family vs raw cuDNN vs PyTorch\n", mx::gpu_name(0).c_str());
  std::vector<bench::Row> rows;
  const mx::Shape shape{64, 64, 56, 56};
  const nd::NDArray gy = nd::random::uniform(-1, 1, shape, gpu0);

  {
    // 3 passes of 2·N·O·C·9·H·W flop each.
    const double flop = 3 * 2.0 * 64 * 64 * 64 * 9 * 56 * 56;
    nd::NDArray x = nd::random::uniform(-1, 1, shape, gpu0), w = nd::random::uniform(-0.1, 0.1, {64, 64, 3, 3}, gpu0);
    nd::NDArray b = nd::zeros({64}, gpu0);
    x.attach_grad();
    w.attach_grad();
    b.attach_grad();
    const nd::ConvolutionOptions options{.kernel = {3, 3}, .pad = {1, 1}, .num_filter = 64};
    const auto fwd_bwd = [&](bool bias) {
      return [&, bias] {
        nd::NDArray y;
        {
          auto recording = mx::autograd::record();
          y = nd::Convolution(x, w, b, {options.kernel, {}, {}, options.pad, 64, 1, !bias});
        }
        y.backward(gy);
      };
    };
    const double t_nd = bench::median_seconds(fwd_bwd(false), nd_sync, 20);
    const double t_bias = bench::median_seconds(fwd_bwd(true), nd_sync, 20);
    // TF32 where the user allows it (set_matmul_precision("high")), against PyTorch's
    // cudnn.allow_tf32.
    mx::set_matmul_precision("high");
    const double t_tf32 = bench::median_seconds(fwd_bwd(true), nd_sync, 20);
    mx::set_matmul_precision("highest");

    // The raw passes: the plans ndgluon chose, run on buffers of their own.
    op::ConvolutionParams p;
    p.window = op::make_window("Convolution", {3, 3}, {}, {}, {1, 1});
    p.num_filter = 64;
    const op::ConvGeometry g = op::conv_geometry(p, shape, mx::DType::float32);
    const op::ExecContext ec{gpu0, mx::cuda::device(0).stream(), mx::cuda::device(0).multiprocessors()};
    float *xr, *wr, *yr, *dy, *dx, *dw;
    for (float** ptr : {&xr, &yr, &dy, &dx}) CHECK(cudaMalloc(ptr, sizeof(float) * shape.numel()));
    for (float** ptr : {&wr, &dw}) CHECK(cudaMalloc(ptr, sizeof(float) * 64 * 64 * 9));
    const auto fwd = mx::cuda::cudnn_convolution_plan(ec, op::ConvPass::forward, g, xr, wr, yr);
    const auto bwd_data = mx::cuda::cudnn_convolution_plan(ec, op::ConvPass::backward_data, g, dy, wr, dx);
    const auto bwd_filter = mx::cuda::cudnn_convolution_plan(ec, op::ConvPass::backward_filter, g, xr, dy, dw);
    double t_raw = 0;
    if (fwd && bwd_data && bwd_filter) {
      void* workspace = nullptr;
      CHECK(cudaMalloc(&workspace, std::max({fwd->workspace_bytes, bwd_data->workspace_bytes,
                                              bwd_filter->workspace_bytes, std::int64_t{16}})));
      const RawPass passes[] = {{*fwd, xr, wr, yr, workspace}, {*bwd_data, dy, wr, dx, workspace},
                                {*bwd_filter, xr, dy, dw, workspace}};
      CHECK(cudaMemset(xr, 0, sizeof(float) * shape.numel()));
      CHECK(cudaMemset(dy, 0, sizeof(float) * shape.numel()));
      CHECK(cudaMemset(wr, 0, sizeof(float) * 64 * 64 * 9));
      t_raw = bench::median_seconds([&] { for (const RawPass& pass : passes) pass.run(); },
                                    [] { CHECK(cudaDeviceSynchronize()); }, 20);
      std::printf("cuDNN engines: forward %s, backward data %s, backward filter %s\n", fwd->engine.c_str(),
                  bwd_data->engine.c_str(), bwd_filter->engine.c_str());
      CHECK(cudaFree(workspace));
    } else {
      std::printf("cuDNN has no engine for this convolution: ndgluon ran im2col + cuBLAS\n");
    }
    for (float* ptr : {xr, wr, yr, dy, dx, dw}) CHECK(cudaFree(ptr));

    bench::Row raw;
    raw.name = "Conv2d 3x3 64->64, (64, 64, 56, 56), fwd+bwd, no bias (vs cuDNN, same engines)";
    raw.metric = "TFLOP/s";
    raw.work = flop;
    raw.unit = 1e12;
    raw.ndgluon = raw.from_seconds(t_nd);
    if (t_raw > 0) raw.raw = raw.from_seconds(t_raw);
    raw.target = 0.95;
    rows.push_back(raw);
    bench::Row with_bias = raw;
    with_bias.name = "Conv2d 3x3 64->64, (64, 64, 56, 56), fwd+bwd, with bias";
    with_bias.peer_key = "conv2d_fwd_bwd";
    with_bias.ndgluon = with_bias.from_seconds(t_bias);
    with_bias.raw = 0;
    with_bias.target = 0;
    rows.push_back(with_bias);
    bench::Row tf32 = with_bias;
    tf32.name = "Conv2d 3x3 64->64, (64, 64, 56, 56), fwd+bwd, with bias, TF32 (set_matmul_precision high)";
    tf32.peer_key = "conv2d_tf32_fwd_bwd";
    tf32.ndgluon = tf32.from_seconds(t_tf32);
    tf32.peer_target = 1.0;
    rows.push_back(tf32);
  }

  {
    // The same convolution channels last (NHWC data, OHWI weight) in bfloat16 under amp::autocast:
    // float32 data and weight cast each step, as PyTorch's channels_last autocast does.
    nd::NDArray x = nd::random::uniform(-1, 1, {64, 56, 56, 64}, gpu0);
    nd::NDArray w = nd::random::uniform(-0.1, 0.1, {64, 3, 3, 64}, gpu0);
    const nd::NDArray g16 = nd::random::uniform(-1, 1, {64, 56, 56, 64}, gpu0).astype(mx::DType::bfloat16);
    x.attach_grad();
    w.attach_grad();
    const double t = bench::median_seconds([&] {
      nd::NDArray y;
      {
        auto recording = mx::autograd::record();
        auto amp = mx::amp::autocast(mx::DType::bfloat16);
        y = nd::Convolution(x, w, {}, {.kernel = {3, 3}, .pad = {1, 1}, .num_filter = 64, .no_bias = true,
                                       .layout = "NHWC"});
      }
      y.backward(g16);
    }, nd_sync, 20);
    bench::Row row;
    row.name = "Conv2d 3x3 64->64, (64, 56, 56, 64) NHWC, fwd+bwd, no bias, bfloat16 autocast";
    row.peer_key = "conv2d_nhwc_bf16_fwd_bwd";
    row.metric = "TFLOP/s";
    row.work = 3 * 2.0 * 64 * 64 * 64 * 9 * 56 * 56;
    row.unit = 1e12;
    row.ndgluon = row.from_seconds(t);
    row.peer_target = 1.0;
    rows.push_back(row);
  }

  {
    nd::NDArray x = nd::random::uniform(-1, 1, shape, gpu0);
    nd::NDArray gamma = nd::ones({64}, gpu0), beta = nd::zeros({64}, gpu0);
    const nd::NDArray mean = nd::zeros({64}, gpu0), var = nd::ones({64}, gpu0);
    x.attach_grad();
    gamma.attach_grad();
    beta.attach_grad();
    const double t = bench::median_seconds([&] {
      nd::NDArray y;
      {
        auto recording = mx::autograd::record();
        y = nd::BatchNorm(x, gamma, beta, mean, var, {.eps = 1e-5, .momentum = 0.9, .fix_gamma = false});
      }
      y.backward(gy);
    }, nd_sync, 50);
    rows.push_back(time_row("BatchNorm training, (64, 64, 56, 56), fwd+bwd", "batchnorm_fwd_bwd", t));

    const nd::NDArray gp = nd::random::uniform(-1, 1, {64, 64, 28, 28}, gpu0);
    const double t_pool = bench::median_seconds([&] {
      nd::NDArray y;
      {
        auto recording = mx::autograd::record();
        y = nd::Pooling(x, {.kernel = {2, 2}, .stride = {2, 2}});
      }
      y.backward(gp);
    }, nd_sync, 50);
    rows.push_back(time_row("MaxPool 2x2 stride 2, (64, 64, 56, 56), fwd+bwd", "maxpool_fwd_bwd", t_pool));
  }

  for (const bool batch_norm : {false, true}) {
    // 60000 random samples on the GPU, batch 256 (the last batch has 96), as the peer's epoch.
    const std::int64_t n = 60000, batch = 256;
    const nd::NDArray images = nd::random::uniform(0, 1, {n, 1, 28, 28}, gpu0);
    const nd::NDArray labels = nd::random::uniform(0, 10, {n}, gpu0).astype(mx::DType::int32).astype(mx::DType::float32);
    nn::Sequential net = tutorial::lenet(batch_norm);
    net.initialize(mx::init::Xavier(), gpu0);
    mx::gluon::Trainer trainer(net.collect_params(), "sgd", {{"learning_rate", batch_norm ? 1.0 : 0.9}});
    mx::gluon::loss::SoftmaxCrossEntropyLoss loss;
    const auto iteration = [&](std::int64_t start) {
      const std::int64_t end = std::min(n, start + batch);
      const nd::NDArray X = images.slice(start, end), y = labels.slice(start, end);
      nd::NDArray l;
      {
        auto recording = mx::autograd::record();
        l = loss(net(X), y);
      }
      l.backward();
      trainer.step(end - start);
    };
    const double t = bench::median_seconds([&] {
      for (std::int64_t start = 0; start < n; start += batch) iteration(start);
    }, nd_sync, 1, 3);
    // Where the time goes: one iteration queued on an idle GPU, the time until the host returns
    // (its share) and until the GPU is done.
    std::vector<double> host, done;
    for (int i = 0; i < 21; ++i) {
      nd_sync();
      const auto begin = std::chrono::steady_clock::now();
      iteration(0);
      host.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count());
      nd_sync();
      done.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count());
    }
    std::sort(host.begin(), host.end());
    std::sort(done.begin(), done.end());
    std::printf("%s iteration: %.0f us in the epoch; alone: host %.0f us, done after %.0f us\n",
                batch_norm ? "BN-LeNet" : "LeNet", t * 1e6 * batch / n, host[10] * 1e6, done[10] * 1e6);
    if (profile) {
      mx::profiler::set_state("run");
      for (int i = 0; i < 20; ++i) {
        const mx::profiler::Range range("iteration");
        iteration(0);
      }
      mx::profiler::set_state("stop");
      nd_sync();
      std::printf("%s", mx::profiler::dumps(true).c_str());
    }
    bench::Row row;
    row.name = std::string(batch_norm ? "BN-LeNet" : "LeNet") + " training epoch, 60k samples on the GPU, batch 256";
    row.peer_key = batch_norm ? "bn_lenet_epoch" : "lenet_epoch";
    row.metric = "samples/s";
    row.work = static_cast<double>(n);
    row.unit = 1;
    row.ndgluon = row.from_seconds(t);
    rows.push_back(row);
  }

  bench::attach_peer(rows, bench::run_peer("python3 " + peer_script + " conv"));
  std::printf("\n");
  bench::print_table(rows);
  return 0;
}
