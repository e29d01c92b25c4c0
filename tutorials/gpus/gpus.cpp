// D2L section 4.6 "GPUs" (MXNet edition), cell by cell, in C++ with ndgluon.
// It runs on whatever is there: two GPUs, one, or none (try_gpu falls back to cpu(0)).
// Each cell prints its code as a comment line, then what the book's notebook prints.
#include <iostream>
#include <optional>

#include <gluon/nn.hpp>
#include <ndarray/ndarray.hpp>

#include "tutorials/cli.hpp"

namespace nd = mx::nd;
namespace nn = mx::gluon::nn;

namespace {

void cell(const char* title) { std::cout << "\n### " << title << "\n"; }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"D2L section 4.6 \"GPUs\" (MXNet edition), cell by cell: each cell prints its code as a comment "
               "line, then what the book's notebook prints. Runs on two GPUs, one, or none (cpu(0)). No options."};
  if (const std::optional<int> exit_code = cli::parse(app, argc, argv)) return *exit_code;

  mx::random::seed(42);  // the book's values are random; fix them so the output can be compared

  // ---- 4.6.1 Computing Devices -----------------------------------------------------------
  cell("4.6.1 Computing Devices");
  std::cout << "// mx::cpu(), mx::gpu(), mx::gpu(1)\n";
  std::cout << "(" << mx::cpu() << ", " << mx::gpu() << ", " << mx::gpu(1) << ")\n";

  std::cout << "// mx::num_gpus()\n" << mx::num_gpus() << "\n";

  std::cout << "// mx::try_gpu(), mx::try_gpu(10), mx::try_all_gpus()\n";
  std::cout << "(" << mx::try_gpu() << ", " << mx::try_gpu(10) << ", " << mx::to_string(mx::try_all_gpus())
            << ")\n";

  // ---- 4.6.2 NDArray and GPUs ------------------------------------------------------------
  cell("4.6.2 NDArray and GPUs");
  std::cout << "// auto x = nd::array({1, 2, 3}); x.context()\n";
  auto x = nd::array({1, 2, 3});
  std::cout << x.context() << "\n";

  cell("4.6.2.1 Storage on the GPU");
  std::cout << "// auto X = nd::ones({2, 3}, mx::try_gpu()); X\n";
  auto X = nd::ones({2, 3}, mx::try_gpu());
  std::cout << X << "\n";

  std::cout << "// auto Y = nd::random::uniform(0, 1, {2, 3}, mx::try_gpu(1)); Y\n";
  auto Y = nd::random::uniform(0, 1, {2, 3}, mx::try_gpu(1));
  std::cout << Y << "\n";

  cell("4.6.2.2 Copying");
  std::cout << "// auto Z = X.copyto(mx::try_gpu(1)); X; Z\n";
  auto Z = X.copyto(mx::try_gpu(1));
  std::cout << X << "\n" << Z << "\n";

  std::cout << "// Y + Z (both on " << Y.context() << ")\n";
  std::cout << (Y + Z) << "\n";

  std::cout << "// Z.as_in_context(mx::try_gpu(1)).is(Z)\n";
  std::cout << std::boolalpha << Z.as_in_context(mx::try_gpu(1)).is(Z) << "\n";
  std::cout << "// Z.copyto(mx::try_gpu(1)).is(Z)\n";
  std::cout << Z.copyto(mx::try_gpu(1)).is(Z) << "\n";

  cell("4.6.2.3 Side Notes: X + Y across contexts");
  std::cout << "// X (" << X.context() << ") + Y (" << Y.context() << ")\n";
  try {
    std::cout << (X + Y) << "\n";
    std::cout << "(no error: both live on " << X.context() << ")\n";
  } catch (const mx::ContextMismatch& error) {
    std::cout << "mx::ContextMismatch: " << error.what() << "\n";
  }

  // ---- 4.6.3 Neural Networks and GPUs ----------------------------------------------------
  cell("4.6.3 Neural Networks and GPUs");
  std::cout << "// nn::Sequential net; net.add(nn::Dense(1)); net.initialize(mx::try_gpu()); net(X)\n";
  nn::Sequential net;
  net.add(nn::Dense(1));
  net.initialize(mx::try_gpu());
  std::cout << net(X) << "\n";

  std::cout << "// net.at<nn::Dense>(0).weight().data()\n";
  std::cout << net.at<nn::Dense>(0).weight().data() << "\n";
  return 0;
}
