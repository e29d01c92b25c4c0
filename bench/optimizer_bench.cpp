// Optimizer benchmarks on one GPU: one update of a ResNet-50-sized parameter set (the trained
// parameters of model_zoo's resnet50_v1, BatchNorm's included: 193 tensors, 25.6 M values,
// float32) per optimizer family, through Trainer::update (every parameter of the step in one fused launch), against
// PyTorch's optimizer on tensors of the same shapes with its fastest implementation (fused=True
// where PyTorch has one, else foreach=True), measured in the same run.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <gluon/model_zoo/vision.hpp>
#include <gluon/trainer.hpp>
#include <ndarray/ndarray.hpp>

#include "bench/bench_util.hpp"
#include "bench/peer_cli.hpp"

namespace nd = mx::nd;

int main(int argc, char** argv) {
  CLI::App app{"Optimizer benchmarks on gpu(0): one update of ResNet-50's 193 parameter tensors (25.6 M values) "
               "per optimizer, against PyTorch's fused or foreach implementation, measured in one run. Run from the "
               "source root: build/bench/optimizer_bench bench/torch_peer.py"};
  std::string peer_script;
  if (const std::optional<int> exit_code = bench::parse_peer_command_line(app, argc, argv, peer_script)) {
    return *exit_code;
  }
  const mx::Context gpu0 = mx::gpu(0);
  std::printf("device: %s, optimizer updates vs PyTorch\n", mx::gpu_name(0).c_str());
  auto net = mx::gluon::model_zoo::vision::get_model("resnet50_v1", {});
  net->initialize(mx::init::Xavier(), {gpu0});
  (*net)(nd::ones({1, 3, 224, 224}, gpu0));  // completes the deferred shapes
  mx::gluon::ParameterDict trained;
  std::int64_t values = 0;
  const std::string shapes_file = "/tmp/ndgluon_optimizer_bench_shapes.txt";
  std::ofstream shapes(shapes_file);
  for (auto& [name, param] : net->collect_params()) {
    if (param.grad_req() == "null") continue;
    trained.add(param);
    values += param.shape().numel();
    for (std::int64_t d : param.shape()) shapes << d << ' ';
    shapes << '\n';
    nd::NDArray g = param.grad(gpu0);
    nd::random::uniform(-1, 1, param.shape(), gpu0).copyto(g);
  }
  shapes.close();
  std::printf("%zu tensors, %lld values\n", trained.size(), static_cast<long long>(values));

  struct Family {
    const char* name;  // ndgluon's and the peer's case
    mx::gluon::HyperParams params;
  };
  const std::vector<Family> families = {
      {"sgd", {{"learning_rate", 0.1}, {"momentum", 0.9}, {"wd", 1e-4}}},
      {"nag", {{"learning_rate", 0.1}, {"momentum", 0.9}, {"wd", 1e-4}}},
      {"adam", {{"learning_rate", 1e-3}, {"wd", 1e-4}}},
      {"adamw", {{"learning_rate", 1e-3}, {"wd", 1e-2}}},
      {"adamax", {{"learning_rate", 2e-3}}},
      {"nadam", {{"learning_rate", 1e-3}}},
      {"rmsprop", {{"learning_rate", 1e-3}}},
      {"adagrad", {{"learning_rate", 1e-2}}},
      {"adadelta", {}},
      {"lamb", {{"learning_rate", 1e-3}, {"wd", 1e-2}}},
  };
  std::vector<bench::Row> rows;
  std::vector<std::pair<const char*, double>> host_times;
  for (const Family& family : families) {
    mx::gluon::Trainer trainer(trained, family.name, family.params);
    bench::Row row;
    row.name = std::string(family.name) + ": one update of ResNet-50's parameters (float32)";
    row.peer_key = std::string("optim_") + family.name;
    row.metric = "us/step";
    row.unit = 0;
    row.higher_is_better = false;
    row.peer_target = 1.0;
    row.ndgluon = row.from_seconds(bench::median_seconds([&] { trainer.update(1); }, [] { nd::waitall(); }, 20));
    rows.push_back(row);
    // The host's share: updates queued back to back, the GPU left to catch up after.
    constexpr int kQueued = 20;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kQueued; ++i) trainer.update(1);
    const double host_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / kQueued;
    nd::waitall();
    host_times.emplace_back(family.name, host_us);
  }
  bench::attach_peer(rows, bench::run_peer("python3 " + peer_script + " optim " + shapes_file));
  std::printf("\n");
  bench::print_table(rows);
  std::printf("\nhost time per Trainer::update (us, %zu tensors):", trained.size());
  for (const auto& [name, us] : host_times) std::printf(" %s %.1f", name, us);
  std::printf("\n");
  return 0;
}
