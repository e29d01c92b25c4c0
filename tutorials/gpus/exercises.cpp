// D2L section 4.6, exercises 1-4, answered by measurement on this machine:
//   1. CPU vs GPU on a large and a small matrix product;
//   2. reading and writing model parameters on a GPU;
//   3. 1000 products of 100x100 matrices, logging the Frobenius norm each step versus keeping the
//      log on the GPU and reading it once;
//   4. two large matrix products on two GPUs at once versus one after the other on one GPU.
// Runs on gpu(0) when there is one; otherwise it says so and measures cpu(0) alone.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>

#include <gluon/nn.hpp>
#include <ndarray/ndarray.hpp>

#include "tutorials/cli.hpp"

namespace nd = mx::nd;
namespace nn = mx::gluon::nn;

namespace {

// A block of one's own, as D2L's "custom layers": a hidden ReLU layer and an output layer, with a
// forward that says how they compose. Children registered in the constructor belong to the block.
class Mlp : public mx::gluon::Block {
 public:
  Mlp() : Block("mlp"), hidden_(register_child(nn::Dense(256, "relu"), "hidden")), out_(register_child(nn::Dense(10), "out")) {}
  nd::NDArray forward(const nd::NDArray& x) override { return out_(hidden_(x)); }
  nn::Dense& hidden() { return hidden_; }

 private:
  nn::Dense hidden_, out_;
};

// Milliseconds per call of fn, after one warm-up call; waits for queued work before each clock read.
template <class Fn>
double time_ms(Fn&& fn, int reps) {
  fn();
  nd::waitall();
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < reps; ++r) fn();
  nd::waitall();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / reps;
}

void exercise1(mx::Context gpu) {
  std::printf("\n## Exercise 1: a large and a small matrix product on cpu(0) and %s\n", gpu.str().c_str());
  for (std::int64_t n : {4096, 16}) {
    std::printf("dot of two %lldx%lld float32 matrices:\n", static_cast<long long>(n), static_cast<long long>(n));
    double cpu_ms = 0;
    for (mx::Context ctx : {mx::cpu(), gpu}) {
      auto a = nd::random::uniform(-1, 1, {n, n}, ctx), b = nd::random::uniform(-1, 1, {n, n}, ctx);
      const int reps = n > 1000 ? 3 : 1000;
      const double ms = time_ms([&] { nd::dot(a, b).wait_to_read(); }, reps);
      if (ctx.is_cpu()) cpu_ms = ms;
      std::printf("  %-7s %10.4f ms  %8.1f GFLOP/s", ctx.str().c_str(), ms, 2.0 * n * n * n / ms / 1e6);
      if (ctx.is_gpu()) std::printf("  (%.2fx the CPU)", cpu_ms / ms);
      std::printf("\n");
    }
  }
  std::printf("The large product is compute-bound and the GPU wins by a wide margin; the small one is\n"
              "dominated by launch and synchronisation overhead, where the GPU's advantage shrinks or vanishes.\n");
}

void exercise2(mx::Context gpu) {
  std::printf("\n## Exercise 2: reading and writing parameters on %s\n", gpu.str().c_str());
  Mlp net;
  net.initialize(mx::init::Normal(0.01), gpu);
  auto x = nd::random::uniform(0, 1, {2, 20}, gpu);
  net(x).wait_to_read();
  auto& dense = net.hidden();
  std::printf("weight %s lives on %s; its first value read back to the host: %.6f\n",
              dense.weight().name().c_str(), dense.weight().data().context().str().c_str(),
              dense.weight().data()[0][0].asscalar<float>());
  dense.weight().set_data(nd::ones(dense.weight().shape(), mx::cpu()));  // written from the host
  std::printf("after set_data(ones) from cpu(0): sum of the weight on %s = %.1f (expected %lld)\n",
              gpu.str().c_str(), dense.weight().data().sum().asscalar<float>(),
              static_cast<long long>(dense.weight().shape().numel()));
  const auto path = (std::filesystem::temp_directory_path() / "ndgluon_exercise2.params").string();
  const double save_ms = time_ms([&] { net.save_parameters(path); }, 5);
  const double load_ms = time_ms([&] { net.load_parameters(path, gpu); }, 5);
  std::printf("save_parameters: %.3f ms, load_parameters onto %s: %.3f ms (%lld bytes)\n", save_ms,
              gpu.str().c_str(), load_ms, static_cast<long long>(std::filesystem::file_size(path)));
  std::filesystem::remove(path);
  std::printf("Every read of a GPU parameter waits for the queued work and copies across PCIe/NVLink, so\n"
              "read parameters rarely (e.g. once per epoch), not every step.\n");
}

void exercise3(mx::Context ctx) {
  std::printf("\n## Exercise 3: 1000 products of 100x100 matrices on %s, logging the norm\n", ctx.str().c_str());
  auto a = nd::random::uniform(-0.1, 0.1, {100, 100}, ctx);
  const int steps = 1000;
  std::vector<float> log_host;
  const double each_step_ms = time_ms([&] {
    log_host.clear();
    auto m = a;
    for (int i = 0; i < steps; ++i) {
      m = nd::dot(m, a) + a;  // stays bounded
      log_host.push_back(m.norm().asscalar<float>());  // waits for the GPU every step
    }
  }, 1);
  std::vector<float> log_device_values;
  const double at_end_ms = time_ms([&] {
    std::vector<nd::NDArray> norms;
    auto m = a;
    for (int i = 0; i < steps; ++i) {
      m = nd::dot(m, a) + a;
      norms.push_back(m.norm());  // stays on the device, queued
    }
    log_device_values = nd::concat(norms).asvector<float>();  // one wait, one copy
  }, 1);
  float max_diff = 0;
  for (int i = 0; i < steps; ++i) max_diff = std::max(max_diff, std::abs(log_host[i] - log_device_values[i]));
  std::printf("norm read every step: %8.2f ms;  log kept on %s, read once: %8.2f ms  (%.1fx faster)\n",
              each_step_ms, ctx.str().c_str(), at_end_ms, each_step_ms / at_end_ms);
  std::printf("both logs agree (largest difference %.2g); last norm %.6f\n", max_diff, log_device_values.back());
}

void exercise4() {
  std::printf("\n## Exercise 4: two large matrix products on two GPUs at once, versus one GPU\n");
  if (mx::num_gpus() < 2) {
    std::printf("needs 2 GPUs, %d visible: skipped\n", mx::num_gpus());
    return;
  }
  // Each GPU's work goes on its own stream and the calls return at once, so one host thread keeps
  // both GPUs busy: queue gpu(0)'s products, then gpu(1)'s, then wait for both.
  const std::int64_t n = 8192;
  const int reps = 5;
  std::vector<nd::NDArray> a, b;
  for (mx::Context ctx : {mx::gpu(0), mx::gpu(1)}) {
    a.push_back(nd::random::uniform(-1, 1, {n, n}, ctx));
    b.push_back(nd::random::uniform(-1, 1, {n, n}, ctx));
  }
  const double one_gpu_ms = time_ms([&] {
    nd::dot(a[0], b[0]);
    nd::dot(a[0], b[0]);
  }, reps);
  const double two_gpus_ms = time_ms([&] {
    nd::dot(a[0], b[0]);
    nd::dot(a[1], b[1]);
  }, reps);
  const double tflops = 2 * 2.0 * n * n * n / 1e9;
  std::printf("two %lldx%lld products, one after the other on gpu(0): %8.2f ms (%.1f TFLOP/s)\n",
              static_cast<long long>(n), static_cast<long long>(n), one_gpu_ms, tflops / one_gpu_ms);
  std::printf("one on gpu(0) and one on gpu(1), at once:            %8.2f ms (%.1f TFLOP/s)\n", two_gpus_ms,
              tflops / two_gpus_ms);
  std::printf("speed-up: %.2fx (2x is the ideal: the GPUs share nothing but the host thread)\n",
              one_gpu_ms / two_gpus_ms);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"D2L section 4.6, exercises 1-4, answered by measurement: CPU vs GPU matrix products, model "
               "parameters on a GPU, logging a norm per step vs once, two GPUs vs one. Runs on gpu(0) when there "
               "is one, else on cpu(0) alone. No options."};
  if (const std::optional<int> exit_code = cli::parse(app, argc, argv)) return *exit_code;

  mx::random::seed(1);
  const mx::Context gpu = mx::try_gpu();
  if (gpu.is_cpu()) std::printf("No GPU visible: the GPU columns below run on cpu(0) too.\n");
  else std::printf("GPU: %s\n", mx::gpu_name(0).c_str());
  exercise1(gpu);
  exercise2(gpu);
  exercise3(gpu);
  exercise4();
  return 0;
}
