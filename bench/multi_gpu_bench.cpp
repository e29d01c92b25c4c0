// Multi-GPU benchmarks (needs NCCL in the build):
//   - data-parallel training of a wide MLP (784-4096-4096-10, ReLU, SGD) on 1, 2 and 4 GPUs, batch
//     1024 per GPU (weak scaling, as data parallelism is used): samples/s and the speed-up over one
//     GPU. Once with the inputs already on each GPU (the compute and the gradient all-reduce), once
//     with split_and_load from a host batch each step (the whole pipeline).
//   - all-reduce of a 256 MiB float32 tensor over every GPU: nd::all_reduce through NCCL and through
//     peer copies, against a raw ncclAllReduce of the same size on buffers of its own. Bus bandwidth
//     as nccl-tests counts it: bytes * 2 (n - 1) / n / seconds.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <gluon/loss.hpp>
#include <gluon/nn.hpp>
#include <gluon/trainer.hpp>
#include <gluon/utils.hpp>
#include <ndarray/dist/dist.hpp>

#include "bench/bench_util.hpp"
#include "bench/cuda_check.hpp"
#include "tutorials/cli.hpp"

namespace nd = mx::nd;
namespace nn = mx::gluon::nn;

namespace {

constexpr std::int64_t kBatchPerGpu = 1024;
double bucket_cap_mb = -1;  // the Trainer's gradient buckets (--bucket-cap-mb); -1: the Trainer's default

std::string cap_text() {
  char text[32];
  std::snprintf(text, sizeof text, "%g", bucket_cap_mb);
  return bucket_cap_mb < 0 ? "default" : text;
}

std::vector<mx::Context> first_gpus(int n) {
  std::vector<mx::Context> out;
  for (int i = 0; i < n; ++i) out.push_back(mx::gpu(i));
  return out;
}

// Seconds per data-parallel step over `gpus`; from_host: the batch starts on cpu(0) each step.
// kvstore "dist_sync": one process of a job (--dist), its gradients summed over every process.
double step_seconds(const std::vector<mx::Context>& gpus, bool from_host, const std::string& kvstore = "device") {
  const auto n = static_cast<std::int64_t>(gpus.size());
  nn::Sequential net;
  net.add(nn::Dense(4096, "relu", true, 784), nn::Dense(4096, "relu", true, 4096), nn::Dense(10, "", true, 4096));
  net.initialize(mx::init::Xavier(), gpus);
  mx::gluon::HyperParams sgd{{"learning_rate", 0.05}};
  if (bucket_cap_mb >= 0) sgd["bucket_cap_mb"] = bucket_cap_mb;
  mx::gluon::Trainer trainer(net.collect_params(), "sgd", sgd, kvstore);
  mx::gluon::loss::SoftmaxCrossEntropyLoss loss;
  const nd::NDArray x_host = nd::random::uniform(0, 1, {n * kBatchPerGpu, 784}, mx::cpu());
  // Labels 0..9: uniform in (0, 9.99], truncated.
  const nd::NDArray y_host = nd::random::uniform(0, 9.99, {n * kBatchPerGpu}, mx::cpu()).astype(mx::DType::int32)
                                 .astype(mx::DType::float32);
  const std::vector<nd::NDArray> xs_resident = mx::gluon::utils::split_and_load(x_host, gpus);
  const std::vector<nd::NDArray> ys_resident = mx::gluon::utils::split_and_load(y_host, gpus);
  auto step = [&] {
    const std::vector<nd::NDArray> xs = from_host ? mx::gluon::utils::split_and_load(x_host, gpus) : xs_resident;
    const std::vector<nd::NDArray> ys = from_host ? mx::gluon::utils::split_and_load(y_host, gpus) : ys_resident;
    std::vector<nd::NDArray> losses;
    {
      auto recording = mx::autograd::record();
      for (std::size_t k = 0; k < gpus.size(); ++k) losses.push_back(loss(net(xs[k]), ys[k]));
    }
    for (const nd::NDArray& l : losses) l.backward();
    trainer.step(n * kBatchPerGpu);
  };
  return bench::median_seconds(step, [] { nd::waitall(); }, 30, 5);
}

// Seconds per raw ncclAllReduce (sum, float32, in place) of `count` values over `devices`.
double raw_all_reduce_seconds(int devices, std::size_t count) {
  std::vector<ncclComm_t> comms(static_cast<std::size_t>(devices));
  std::vector<int> ids;
  for (int d = 0; d < devices; ++d) ids.push_back(d);
  CHECK(ncclCommInitAll(comms.data(), devices, ids.data()));
  std::vector<float*> buffers(static_cast<std::size_t>(devices));
  std::vector<cudaStream_t> streams(static_cast<std::size_t>(devices));
  for (int d = 0; d < devices; ++d) {
    CHECK(cudaSetDevice(d));
    CHECK(cudaMalloc(&buffers[d], count * sizeof(float)));
    CHECK(cudaMemset(buffers[d], 0, count * sizeof(float)));
    CHECK(cudaStreamCreate(&streams[d]));
  }
  auto sync = [&] {
    for (int d = 0; d < devices; ++d) CHECK(cudaStreamSynchronize(streams[d]));
  };
  const double t = bench::median_seconds([&] {
    CHECK(ncclGroupStart());
    for (int d = 0; d < devices; ++d) {
      CHECK(ncclAllReduce(buffers[d], buffers[d], count, ncclFloat32, ncclSum, comms[d], streams[d]));
    }
    CHECK(ncclGroupEnd());
  }, sync, 10);
  for (int d = 0; d < devices; ++d) {
    CHECK(cudaSetDevice(d));
    CHECK(cudaFree(buffers[d]));
    CHECK(cudaStreamDestroy(streams[d]));
    CHECK(ncclCommDestroy(comms[d]));
  }
  return t;
}

// --dist: this process is one rank of a job (ndgluon-run -n N multi_gpu_bench --dist), training on
// gpu(local_rank) with Trainer "dist_sync"; rank 0 prints the job's samples/s.
int run_dist() {
  mx::dist::init();
  const int world = mx::dist::world_size();
  const std::vector<mx::Context> mine{mx::gpu(mx::dist::local_rank() % mx::num_gpus())};
  for (bool from_host : {false, true}) {
    const double samples_per_s = static_cast<double>(world * kBatchPerGpu) / step_seconds(mine, from_host, "dist_sync");
    if (mx::dist::rank() == 0) {
      std::printf("| %s | %d processes x 1 GPU (dist_sync, bucket_cap_mb %s) | %.0f |\n",
                  from_host ? "copied from cpu(0)" : "resident on each GPU", world, cap_text().c_str(), samples_per_s);
      std::fflush(stdout);
    }
  }
  mx::dist::shutdown();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Multi-GPU benchmarks (2 or more GPUs): data-parallel MLP training on 1, 2 and 4 GPUs, and a "
               "256 MiB all-reduce through NCCL and peer copies against a raw ncclAllReduce. With --dist, one "
               "rank of a multi-process job instead (ndgluon-run -n 2 multi_gpu_bench --dist)."};
  bool dist = false;
  app.add_flag("--dist", dist, "run as one process of a job started by ndgluon-run, torchrun, mpirun or srun");
  app.add_option("--bucket-cap-mb", bucket_cap_mb,
                 "the Trainer's gradient bucket size in MiB (0: gradients summed after backward; default: the "
                 "Trainer's, buckets of 25 MiB with one GPU per process)")
      ->check(CLI::Range(0.0, 1e6));
  if (const std::optional<int> exit_code = cli::parse(app, argc, argv)) return *exit_code;
  if (dist) return run_dist();

  const int gpus = mx::num_gpus();
  if (gpus < 2) {
    std::printf("%d GPU(s) visible: the multi-GPU benchmarks need 2 or more\n", gpus);
    return 77;
  }
  std::printf("device: %d x %s\n\n", gpus, mx::gpu_name(0).c_str());

  std::printf("## Data-parallel MLP 784-4096-4096-10, SGD, batch %lld per GPU, bucket_cap_mb %s\n\n",
              static_cast<long long>(kBatchPerGpu), cap_text().c_str());
  std::printf("| inputs | GPUs | samples/s | speed-up over 1 GPU | target |\n|---|---:|---:|---:|---:|\n");
  for (bool from_host : {false, true}) {
    double one_gpu = 0;
    for (int n : {1, 2, 4}) {
      if (n > gpus) break;
      const double samples_per_s = static_cast<double>(n * kBatchPerGpu) / step_seconds(first_gpus(n), from_host);
      if (n == 1) one_gpu = samples_per_s;
      const char* target = n == 2 ? ">= 1.8" : n == 4 ? ">= 3.4" : "-";
      std::printf("| %s | %d | %.0f | %.2fx | %s |\n", from_host ? "split_and_load from cpu(0)" : "resident on each GPU", n,
                  samples_per_s, samples_per_s / one_gpu, target);
      std::fflush(stdout);
    }
  }

  const std::size_t count = std::size_t{64} << 20;  // 256 MiB of float32
  const double bytes = static_cast<double>(count) * sizeof(float);
  const double bus_factor = 2.0 * (gpus - 1) / gpus;
  std::vector<nd::NDArray> copies;
  for (int d = 0; d < gpus; ++d) copies.push_back(nd::zeros({static_cast<std::int64_t>(count)}, mx::gpu(d)));
  const double t_raw = raw_all_reduce_seconds(gpus, count);
  std::vector<bench::Row> rows;
  for (auto [name, algo] : {std::pair{"nccl", nd::ReduceAlgo::nccl}, std::pair{"automatic", nd::ReduceAlgo::automatic},
                            std::pair{"peer copies", nd::ReduceAlgo::peer}}) {
    const double t = bench::median_seconds([&] { nd::all_reduce({copies}, algo); }, [] { nd::waitall(); }, 10);
    bench::Row row;
    const bool engines = algo == nd::ReduceAlgo::automatic && nd::overlap::copy_engines(first_gpus(gpus));
    row.name = "all_reduce 256 MiB float32 over " + std::to_string(gpus) + " GPUs, " + name +
               (engines ? ": copy engines" : algo == nd::ReduceAlgo::automatic ? ": nccl" : "") + " (vs raw ncclAllReduce)";
    row.metric = "bus GB/s";
    row.work = bytes * bus_factor;
    row.ndgluon = row.from_seconds(t);
    row.raw = row.from_seconds(t_raw);
    row.target = algo == nd::ReduceAlgo::nccl ? 0.95 : 0;
    rows.push_back(row);
  }
  std::printf("\n");
  bench::print_table(rows);
  return 0;
}
