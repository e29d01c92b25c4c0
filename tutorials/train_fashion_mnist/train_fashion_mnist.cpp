// D2L chapter 3-4 in C++: softmax regression and the concise MLP (784-256-10, ReLU) on
// Fashion-MNIST, batch 256, SGD, trained with autograd and a Trainer.
//
//   train_fashion_mnist [--gpus N | --ctx cpu|gpu|gpu:N] [--model softmax|mlp|both] [--epochs 10]
//                       [--lr LR] [--batch-size 256] [--subset N] [--csv FILE] [--data DIR]
//
// By default it trains on every GPU (cpu(0) when there is none). With several GPUs it is
// data-parallel, as D2L's multi-GPU chapter: each batch is split over the GPUs with
// split_and_load, each GPU runs forward and backward on its slice, and trainer.step sums the
// gradients across them (NCCL) before the identical update on every copy.
//
// Per epoch it prints the loss, train accuracy, test accuracy and time, writes the curves to CSV
// and, when gnuplot is installed, draws them into a PNG next to the CSV.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gluon/data.hpp>
#include <gluon/loss.hpp>
#include <gluon/metric.hpp>
#include <gluon/nn.hpp>
#include <gluon/trainer.hpp>
#include <gluon/utils.hpp>

namespace nd = mx::nd;
namespace nn = mx::gluon::nn;
namespace gdata = mx::gluon::data;

namespace {

struct Options {
  std::vector<mx::Context> ctxs = mx::try_all_gpus();
  std::string model = "both";
  int epochs = 10;
  double lr = -1;  // per model default
  std::int64_t batch_size = 256;
  std::int64_t subset = -1;
  std::string csv = "train_fashion_mnist.csv";
  std::string data_dir;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw mx::ValueError("missing value after " + arg);
      return argv[++i];
    };
    // The whole value as a number, or an error naming the option.
    auto number = [&](auto parse) {
      const std::string text = value();
      try {
        std::size_t used = 0;
        const auto n = parse(text, &used);
        if (used == text.size()) return n;
      } catch (const std::logic_error&) {  // std::invalid_argument, std::out_of_range
      }
      throw mx::ValueError(arg + " takes a number, not '" + text + "'");
    };
    const auto to_int = [](const std::string& s, std::size_t* used) { return std::stoi(s, used); };
    const auto to_int64 = [](const std::string& s, std::size_t* used) { return std::stoll(s, used); };
    const auto to_double = [](const std::string& s, std::size_t* used) { return std::stod(s, used); };
    if (arg == "--ctx") {
      const std::string c = value();
      if (c == "cpu") o.ctxs = {mx::cpu()};
      else if (c == "gpu") o.ctxs = {mx::gpu(0)};
      else if (c.rfind("gpu:", 0) == 0 && c.size() > 4 && c.find_first_not_of("0123456789", 4) == std::string::npos)
        o.ctxs = {mx::gpu(std::stoi(c.substr(4)))};
      else throw mx::ValueError("--ctx takes cpu, gpu or gpu:N, not " + c);
    } else if (arg == "--gpus") {
      const int n = number(to_int);
      if (n < 1 || n > mx::num_gpus()) {
        throw mx::ValueError("--gpus " + std::to_string(n) + ": " + std::to_string(mx::num_gpus()) + " GPUs are visible");
      }
      o.ctxs.clear();
      for (int i = 0; i < n; ++i) o.ctxs.push_back(mx::gpu(i));
    } else if (arg == "--model") o.model = value();
    else if (arg == "--epochs") o.epochs = number(to_int);
    else if (arg == "--lr") o.lr = number(to_double);
    else if (arg == "--batch-size") o.batch_size = number(to_int64);
    else if (arg == "--subset") o.subset = number(to_int64);
    else if (arg == "--csv") o.csv = value();
    else if (arg == "--data") o.data_dir = value();
    else throw mx::ValueError("unknown argument " + arg + " (see the comment at the top of the source)");
  }
  if (o.epochs < 1 || o.batch_size < 1 || o.lr <= 0) {
    throw mx::ValueError("--epochs and --batch-size must be at least 1 and --lr positive");
  }
  if (o.model != "softmax" && o.model != "mlp" && o.model != "both") {
    throw mx::ValueError("--model takes softmax, mlp or both, not " + o.model);
  }
  return o;
}

// "[=========>          ] 120/235" on one line, redrawn in place.
void progress(std::int64_t done, std::int64_t total) {
  constexpr int width = 30;
  const int filled = total ? static_cast<int>(width * done / total) : width;
  std::string bar(static_cast<std::size_t>(width), ' ');
  for (int i = 0; i < filled; ++i) bar[static_cast<std::size_t>(i)] = '=';
  if (filled < width) bar[static_cast<std::size_t>(filled)] = '>';
  std::fprintf(stderr, "\r  [%s] %lld/%lld", bar.c_str(), static_cast<long long>(done), static_cast<long long>(total));
  if (done == total) std::fprintf(stderr, "\r%*s\r", width + 24, "");
}

// One slice of the batch per context (the whole batch when there is one context).
std::vector<nd::NDArray> split(const nd::NDArray& batch, const std::vector<mx::Context>& ctxs) {
  return mx::gluon::utils::split_and_load(batch, ctxs, 0, false);
}

double evaluate_accuracy(mx::gluon::Block& net, gdata::DataLoader& loader, const std::vector<mx::Context>& ctxs) {
  mx::metric::Accuracy accuracy;
  for (auto& [X, y] : loader) {
    const std::vector<nd::NDArray> xs = split(X, ctxs), ys = split(y, ctxs);
    for (std::size_t k = 0; k < xs.size(); ++k) accuracy.update(ys[k], net(xs[k]));
  }
  return accuracy.get().second;
}

struct EpochResult {
  double loss, train_acc, test_acc, seconds;
};

EpochResult train_epoch(mx::gluon::Block& net, gdata::DataLoader& train, gdata::DataLoader& test,
                        mx::gluon::Trainer& trainer, const std::vector<mx::Context>& ctxs) {
  const auto start = std::chrono::steady_clock::now();
  mx::gluon::loss::SoftmaxCrossEntropyLoss loss;
  mx::metric::Accuracy accuracy;
  nd::NDArray loss_sum = nd::zeros({1}, ctxs[0]);  // summed on the device: no sync per batch
  std::int64_t samples = 0, step = 0;
  for (auto& [X, y] : train) {
    const std::vector<nd::NDArray> xs = split(X, ctxs), ys = split(y, ctxs);
    std::vector<nd::NDArray> y_hats, losses;
    {
      auto recording = mx::autograd::record();
      for (std::size_t k = 0; k < xs.size(); ++k) {  // queued on each GPU in turn; they run at once
        y_hats.push_back(net(xs[k]));
        losses.push_back(loss(y_hats.back(), ys[k]));
      }
    }
    for (const nd::NDArray& l : losses) l.backward();
    trainer.step(X.shape()[0]);  // sums the gradients over the GPUs, then updates every copy
    for (std::size_t k = 0; k < xs.size(); ++k) {
      loss_sum += losses[k].sum().as_in_context(ctxs[0]);
      accuracy.update(ys[k], y_hats[k]);
    }
    samples += X.shape()[0];
    progress(++step, train.size());
  }
  const double train_loss = loss_sum.asscalar<float>() / static_cast<double>(samples);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {train_loss, accuracy.get().second, evaluate_accuracy(net, test, ctxs), seconds};
}

void plot(const std::string& csv) {
  if (std::system("command -v gnuplot > /dev/null 2>&1") != 0) {
    std::printf("gnuplot is not installed (apt-get install gnuplot-nox): no PNG drawn; the curves are in %s\n",
                csv.c_str());
    return;
  }
  const std::string png = std::filesystem::path(csv).replace_extension(".png").string();
  // The script goes to gnuplot's standard input, so that no shell sees its quotes and $ columns.
  const std::string script =
      "set terminal pngcairo size 900,500\nset output '" + png + "'\nset datafile separator ','\n"
      "set xlabel 'epoch'\nset grid\nset key outside\n"
      "plot for [m in 'softmax mlp'] '" + csv + "' using (strcol(1) eq m ? $2 : NaN):3 with linespoints title m.' loss', \\\n"
      "     for [m in 'softmax mlp'] '" + csv + "' using (strcol(1) eq m ? $2 : NaN):4 with linespoints title m.' train acc', \\\n"
      "     for [m in 'softmax mlp'] '" + csv + "' using (strcol(1) eq m ? $2 : NaN):5 with linespoints title m.' test acc'\n";
  FILE* gnuplot = popen("gnuplot 2>&1", "w");
  const bool written = gnuplot && std::fputs(script.c_str(), gnuplot) >= 0;
  const bool ok = gnuplot && pclose(gnuplot) == 0 && written;
  if (ok) std::printf("plot written to %s\n", png.c_str());
  else std::printf("gnuplot failed; the curves are in %s\n", csv.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    mx::random::seed(0);
    std::printf("training on");
    for (mx::Context ctx : o.ctxs) {
      std::printf(" %s%s", ctx.str().c_str(), ctx.is_gpu() ? (" (" + mx::gpu_name(ctx.device_id()) + ")").c_str() : "");
    }
    std::printf("%s\n", o.ctxs.size() > 1 ? ", data-parallel" : "");
    gdata::FashionMNIST train_set(true, o.data_dir, o.subset), test_set(false, o.data_dir, o.subset);
    gdata::DataLoader train(train_set, o.batch_size, true, "keep", gdata::to_tensor);
    gdata::DataLoader test(test_set, o.batch_size, false, "keep", gdata::to_tensor);
    std::ofstream csv(o.csv);
    csv << "model,epoch,loss,train_acc,test_acc,seconds\n";
    double final_mlp_acc = -1;
    for (const std::string model : {"softmax", "mlp"}) {
      if (o.model != "both" && o.model != model) continue;
      nn::Sequential net;
      if (model == "softmax") {
        net.add(nn::Flatten(), nn::Dense(10));
      } else {
        net.add(nn::Flatten(), nn::Dense(256, "relu"), nn::Dense(10));
      }
      net.initialize(mx::init::Normal(0.01), o.ctxs);
      const double lr = o.lr > 0 ? o.lr : (model == "softmax" ? 0.1 : 0.5);
      mx::gluon::Trainer trainer(net.collect_params(), "sgd", {{"learning_rate", lr}});
      std::printf("\n%s, lr %g, batch %lld, %d epochs\n", model == "softmax" ? "softmax regression" : "MLP 784-256-10",
                  lr, static_cast<long long>(o.batch_size), o.epochs);
      std::printf("%6s %9s %10s %9s %9s %12s\n", "epoch", "loss", "train acc", "test acc", "time (s)", "samples/s");
      for (int epoch = 1; epoch <= o.epochs; ++epoch) {
        const EpochResult r = train_epoch(net, train, test, trainer, o.ctxs);
        std::printf("%6d %9.4f %10.4f %9.4f %9.2f %12.0f\n", epoch, r.loss, r.train_acc, r.test_acc, r.seconds,
                    static_cast<double>(train_set.size()) / r.seconds);
        std::fflush(stdout);
        csv << model << ',' << epoch << ',' << r.loss << ',' << r.train_acc << ',' << r.test_acc << ',' << r.seconds << '\n';
        if (model == "mlp") final_mlp_acc = r.test_acc;
      }
    }
    csv.close();
    std::printf("\ncurves written to %s\n", o.csv.c_str());
    plot(o.csv);
    if (final_mlp_acc >= 0) std::printf("MLP test accuracy after %d epochs: %.4f\n", o.epochs, final_mlp_acc);
    return 0;
  } catch (const mx::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
