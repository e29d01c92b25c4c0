// One rank of the multi-process tests (test/dist/meson.build), started by ndgluon-run or by
// test/dist/killed_rank.sh. An MLP trains for --steps SGD steps on a fixed batch of 64, each
// process on its share, through Trainer(..., "dist_sync"), with its gradients summed in buckets
// during backward and, beside it, the same net summed after backward: equal bit for bit.
//   --mode train  rank 0 then trains the same net on the whole batch on gpu(0) alone, and on two
//                 GPUs of one process (kvstore "device"), and checks that all three end with the
//                 same parameters (relative error below 1e-5); exit 1 if not.
//   --mode die    rank 1 kills itself (SIGKILL) after 5 steps; the others must end with the
//                 communicator's mx::DeviceError (printed, exit 3) instead of hanging.
// Exits 77 (a skip) when this machine has fewer than 2 GPUs.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <gluon/loss.hpp>
#include <gluon/nn.hpp>
#include <gluon/trainer.hpp>
#include <ndarray/ndarray.hpp>

namespace gluon = mx::gluon;
namespace nn = mx::gluon::nn;
namespace nd = mx::nd;

namespace {

constexpr std::int64_t kBatch = 64, kFeatures = 20, kClasses = 5;

nn::Sequential make_net(const std::vector<mx::Context>& ctxs) {
  nn::Sequential net;
  net.add(nn::Dense(32, "relu", true, kFeatures), nn::Dense(kClasses, "", true, 32));
  net.initialize(mx::init::Zero(), ctxs);
  std::mt19937 engine(11);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  for (auto& [name, param] : net.collect_params()) {
    std::vector<float> v(static_cast<std::size_t>(param.shape().numel()));
    for (float& x : v) x = u(engine);
    param.set_data(nd::array(v, param.shape(), mx::cpu()));
  }
  return net;
}

struct Data {
  nd::NDArray x, y;  // the whole batch, on cpu(0)
};

Data make_data() {
  std::mt19937 engine(3);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> x(static_cast<std::size_t>(kBatch * kFeatures)), y(static_cast<std::size_t>(kBatch));
  for (float& v : x) v = n(engine);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>((i * 7) % kClasses);
  return {nd::array(x, {kBatch, kFeatures}, mx::cpu()), nd::array(y, {kBatch}, mx::cpu())};
}

// One step: each context of ctxs gets its slice of rows [begin, end) of the batch.
void train_step(nn::Sequential& net, gluon::Trainer& trainer, const Data& d, const std::vector<mx::Context>& ctxs,
                std::int64_t begin, std::int64_t end) {
  const gluon::loss::SoftmaxCrossEntropyLoss loss;
  const std::int64_t per = (end - begin) / static_cast<std::int64_t>(ctxs.size());
  {
    auto scope = mx::autograd::record();
    for (std::size_t k = 0; k < ctxs.size(); ++k) {
      const std::int64_t b = begin + static_cast<std::int64_t>(k) * per;
      nd::NDArray l = loss(net(d.x.slice(b, b + per).copyto(ctxs[k])), d.y.slice(b, b + per).copyto(ctxs[k]));
      l.backward();
    }
  }
  trainer.step(end - begin);
}

std::vector<std::vector<double>> values(const nn::Sequential& net, mx::Context ctx) {
  std::vector<std::vector<double>> out;
  for (const auto& [name, param] : net.collect_params()) out.push_back(param.data(ctx).asvector<double>());
  return out;
}

double relative_error(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b) {
  double diff = 0, norm = 0;
  for (std::size_t p = 0; p < a.size(); ++p) {
    for (std::size_t i = 0; i < a[p].size(); ++i) {
      diff += (a[p][i] - b[p][i]) * (a[p][i] - b[p][i]);
      norm += b[p][i] * b[p][i];
    }
  }
  return std::sqrt(diff / norm);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"One rank of ndgluon's multi-process tests (run by ndgluon-run)", "dist_worker"};
  std::string mode = "train";
  int steps = 50;
  app.add_option("--mode", mode, "train or die")->check(CLI::IsMember({"train", "die"}));
  app.add_option("--steps", steps, "SGD steps")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // lines reach the log even if the process is killed
  if (mx::num_gpus() < 2) {
    std::printf("dist_worker: skipped: needs 2 GPUs, found %d\n", mx::num_gpus());
    return 77;
  }
  try {
    mx::dist::init();
    const int rank = mx::dist::rank(), world = mx::dist::world_size();
    const mx::Context ctx = mx::gpu(mx::dist::local_rank() % mx::num_gpus());
    const Data data = make_data();
    const gluon::HyperParams sgd{{"learning_rate", 0.1}};
    // Two gradient buckets ([b1, w1], [b0, w0]: 512 bytes each at most), and beside it the same net
    // whose gradients are summed after backward: equal bit for bit.
    nn::Sequential net = make_net({ctx}), plain = make_net({ctx});
    gluon::HyperParams bucketed = sgd, unbucketed = sgd;
    bucketed["bucket_cap_mb"] = 512.0 / (1 << 20);
    unbucketed["bucket_cap_mb"] = 0;
    gluon::Trainer trainer(net.collect_params(), "sgd", bucketed, "dist_sync");
    gluon::Trainer plain_trainer(plain.collect_params(), "sgd", unbucketed, "dist_sync");
    const std::int64_t share = kBatch / world;
    for (int step = 0; step < steps; ++step) {
      if (mode == "die" && rank == 1 && step == 5) ::kill(::getpid(), SIGKILL);
      train_step(net, trainer, data, {ctx}, rank * share, (rank + 1) * share);
      train_step(plain, plain_trainer, data, {ctx}, rank * share, (rank + 1) * share);
    }
    const auto dist_values = values(net, ctx);  // a wait: throws the communicator's failure
    mx::dist::barrier();
    std::printf("rank %d of %d: %d steps of dist_sync done, %zu gradient buckets\n", rank, world, steps,
                trainer.bucket_layout().size());
    if (trainer.bucket_layout().size() != 2 || values(plain, ctx) != dist_values) {
      std::printf("FAILED: rank %d: the bucketed parameters differ from those summed after backward\n", rank);
      return 1;
    }
    if (rank == 0) {
      nn::Sequential one = make_net({mx::gpu(0)});
      gluon::Trainer one_trainer(one.collect_params(), "sgd", sgd);
      nn::Sequential two = make_net({mx::gpu(0), mx::gpu(1)});
      gluon::Trainer two_trainer(two.collect_params(), "sgd", sgd, "device");
      for (int step = 0; step < steps; ++step) {
        train_step(one, one_trainer, data, {mx::gpu(0)}, 0, kBatch);
        train_step(two, two_trainer, data, {mx::gpu(0), mx::gpu(1)}, 0, kBatch);
      }
      const auto reference = values(one, mx::gpu(0));
      const double e_dist = relative_error(dist_values, reference);
      const double e_two = relative_error(values(two, mx::gpu(1)), reference);
      std::printf("after %d steps, relative to 1 GPU on the whole batch: %d processes x 1 GPU %.3g, "
                  "1 process x 2 GPUs %.3g\n", steps, world, e_dist, e_two);
      if (!(e_dist < 1e-5 && e_two < 1e-5)) {
        std::printf("FAILED: the parameters differ by more than 1e-5\n");
        return 1;
      }
    }
    mx::dist::shutdown();
    return 0;
  } catch (const mx::DeviceError& e) {
    std::printf("dist_worker: mx::DeviceError: %s\n", e.what());
    std::fflush(stdout);
    return 3;
  }
}
