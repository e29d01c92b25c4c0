#pragma once
// What the Fashion-MNIST tutorials share (D2L's train_ch3 / train_ch6): the command line, and a
// training loop that runs data-parallel on every GPU or on cpu(0), prints a progress bar and a row
// per epoch, writes the curves to CSV and draws them with gnuplot. A tutorial lists its models and
// hands over:
//
//   const std::vector<tutorial::Model> models = {
//       {"mlp", "MLP 784-256-10", "MLP", 0.5, mx::init::Normal(0.01), [] {
//          nn::Sequential net;
//          net.add(nn::Flatten(), nn::Dense(256, "relu"), nn::Dense(10));
//          return net;
//        }}};
//   CLI::App app{"What the program trains."};
//   return tutorial::train_on_fashion_mnist(app, argc, argv, models, {.model = "mlp", .csv = "mlp.csv"},
//                                           "0.5 for the MLP");
//
// The flags: --ctx, --gpus, --model (each model's key, and "both" when there are two, "all" when
// there are more), --epochs (default $NDG_TRAIN_EPOCHS when set), --lr, --batch-size, --subset,
// --csv, --data, and --resize where a model trains on resized images.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <vector>
#include <unistd.h>  // isatty

#include <gluon/amp.hpp>
#include <gluon/data.hpp>
#include <gluon/loss.hpp>
#include <gluon/metric.hpp>
#include <gluon/nn.hpp>
#include <gluon/trainer.hpp>
#include <gluon/utils.hpp>

#include "tutorials/cli.hpp"
#include "tutorials/common.hpp"

namespace tutorial {

namespace nd = mx::nd;
namespace nn = mx::gluon::nn;
namespace gdata = mx::gluon::data;

// One model a tutorial trains.
struct Model {
  std::string key;     // its --model value and its name in the CSV: "mlp"
  std::string title;   // above its table: "MLP 784-256-10"
  std::string report;  // names its final test accuracy in the last lines ("MLP"); "" prints none
  double lr;           // its SGD learning rate, unless --lr is given
  mx::init::InitializerRef init;         // its initializer (biases get zeros, as MXNet's do)
  std::function<nn::Sequential()> make;  // a new network, not initialised yet
  std::int64_t batch_size = 256;         // unless --batch-size is given
  std::int64_t resize = 0;               // > 0: images resized to resize x resize (D2L's resize), unless --resize
};

struct Options {
  std::vector<mx::Context> ctxs = {};  // from --ctx or --gpus; every GPU (cpu(0) when there is none) by default
  std::string model = "";              // a Model::key, or "both" / "all"
  int epochs = 10;
  std::optional<double> lr = std::nullopt;  // each model's own when not given
  std::optional<std::int64_t> batch_size = std::nullopt;  // each model's own when not given
  std::optional<std::int64_t> resize = std::nullopt;      // each model's own when not given
  std::int64_t subset = -1;  // the whole data set
  std::string csv = "";
  std::string data_dir = "";  // FashionMNIST::default_root()
  std::string dtype = "float32";  // or bfloat16 / float16: amp, parameters kept in float32
  bool dist = false;  // one process of a job (--dist): gpu(LOCAL_RANK), its share of each epoch
  std::uint64_t seed = 0;  // mx::random::seed before each model: initial values and shuffling
};

namespace detail {

// --gpus: from 1 to the number of GPUs visible.
inline CLI::Validator gpu_count() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        if (std::string bad = cli::integer(1)(value); !bad.empty()) return bad;
        if (std::stoll(value) > mx::num_gpus()) {
          return value + (value == "1" ? " GPU" : " GPUs") + " asked for, but " + visible_gpus();
        }
        return "";
      },
      "", "gpu_count");
}

// Parses the command line into `o` (which holds the defaults of --model and --csv); returns the
// code to exit with when the program should not go on. lr_default describes each model's rate.
inline std::optional<int> parse(CLI::App& app, int argc, char** argv, const std::vector<Model>& models,
                                const std::string& lr_default, Options& o) {
  std::string ctx;
  int gpus = 0;
  double lr = 0;
  std::int64_t batch_size = 0, resize = 0;
  std::vector<std::string> model_names;
  std::string batch_default, resize_default;  // "256", or each model's
  bool resizes = false;
  for (const Model& model : models) {
    model_names.push_back(model.key);
    batch_default += (batch_default.empty() ? "" : ", ") + model.key + " " + std::to_string(model.batch_size);
    resize_default += (resize_default.empty() ? "" : ", ") + model.key + " " +
                      (model.resize > 0 ? std::to_string(model.resize) : "none");
    resizes = resizes || model.resize > 0;
  }
  if (std::all_of(models.begin(), models.end(), [&](const Model& m) { return m.batch_size == models[0].batch_size; })) {
    batch_default = std::to_string(models[0].batch_size);
  }
  if (models.size() == 2) model_names.push_back("both");
  if (models.size() > 2) model_names.push_back("all");
  CLI::Option* ctx_option = app.add_option("--ctx", ctx, "train on this one context: cpu, gpu (that is gpu:0) or gpu:N")
                                ->type_name("CTX")
                                ->default_str("every GPU, else cpu")
                                ->check(existing_context());
  CLI::Option* gpus_option = app.add_option("--gpus", gpus, "train data-parallel on gpu:0 .. gpu:N-1")
                                 ->default_str("every GPU, else cpu")
                                 ->check(gpu_count())
                                 ->excludes(ctx_option);
  app.add_flag("--dist", o.dist,
               "be one process of a job started by ndgluon-run -n N (or torchrun, mpirun, srun): train on "
               "gpu(LOCAL_RANK) with this process's share of each epoch, --batch-size samples per process, the "
               "gradients summed over the processes (Trainer dist_sync); rank 0 prints and writes the curves")
      ->excludes(ctx_option)
      ->excludes(gpus_option);
  app.add_option("--model", o.model, "the model(s) to train")
      ->capture_default_str()
      ->check(CLI::IsMember(model_names));
  app.add_option("--epochs", o.epochs, "epochs per model")
      ->capture_default_str()
      ->check(cli::integer(1, 1'000'000))
      ->envname("NDG_TRAIN_EPOCHS");
  CLI::Option* lr_option = app.add_option("--lr", lr, "SGD learning rate")
                               ->default_str(lr_default)
                               ->check(cli::positive_number());
  CLI::Option* batch_option = app.add_option("--batch-size", batch_size, "samples per batch (split over the GPUs)")
                                  ->default_str(batch_default)
                                  ->check(cli::integer(1));
  CLI::Option* resize_option = nullptr;
  if (resizes) {
    resize_option = app.add_option("--resize", resize,
                                   "resize the 28x28 images to NxN on the device before the network (bilinear, "
                                   "pixel centres aligned, as D2L's transforms.Resize)")
                        ->type_name("N")
                        ->default_str(resize_default)
                        ->check(cli::integer(1));
  }
  app.add_option("--subset", o.subset, "use only the first N samples of each split")
      ->default_str("all")
      ->check(cli::integer(1));
  app.add_option("--csv", o.csv, "where to write the curves; a PNG of them goes next to it")
      ->type_name("FILE")
      ->capture_default_str()
      ->check(cli::file_to_write());
  const char* root_variable = std::getenv("FASHION_MNIST_DIR");
  const std::string default_root = gdata::FashionMNIST::default_root();
  const std::string where = root_variable && *root_variable ? "$FASHION_MNIST_DIR, now " + default_root
                                                            : default_root + ", or $FASHION_MNIST_DIR when set";
  app.add_option("--dtype", o.dtype,
                 "compute in float32, or in bfloat16 / float16 under amp (float32 parameters; float16 with "
                 "dynamic loss scaling)")
      ->capture_default_str()
      ->check(CLI::IsMember({"float32", "bfloat16", "float16"}));
  app.add_option("--seed", o.seed, "the random seed of each model's initial values and shuffling")
      ->capture_default_str()
      ->check(cli::integer(0));
  app.add_option("--data", o.data_dir, "the folder of the four Fashion-MNIST .gz files")
      ->type_name("DIR")
      ->default_str(where)
      ->check(cli::existing_folder("without --data the data set is read from " + where));
  if (std::optional<int> exit_code = cli::parse(app, argc, argv)) return exit_code;

  if (lr_option->count() > 0) o.lr = lr;
  if (batch_option->count() > 0) o.batch_size = batch_size;
  if (resize_option && resize_option->count() > 0) o.resize = resize;
  if (o.dist) {
    mx::dist::init();
    o.ctxs = {mx::num_gpus() > 0 ? mx::gpu(mx::dist::local_rank() % mx::num_gpus()) : mx::cpu()};
    if (mx::dist::rank() != 0) {  // one voice: rank 0's
      o.csv = "/dev/null";
      if (!std::freopen("/dev/null", "w", stdout)) return 1;
    }
  } else if (!ctx.empty()) {
    o.ctxs = {*context_named(ctx)};
  } else if (gpus > 0) {
    for (int i = 0; i < gpus; ++i) o.ctxs.push_back(mx::gpu(i));
  } else {
    o.ctxs = mx::try_all_gpus();
  }
  return std::nullopt;
}

// Whether a progress bar is drawn: only when standard output and error are both terminals. In a
// log (a file, a pipe, ndgluon-run's prefixed lines) the redraws would be hundreds of lines per
// epoch; there the per-epoch rows and the final summary are the whole output.
inline bool draws_progress() {
  static const bool terminal = isatty(fileno(stdout)) == 1 && isatty(fileno(stderr)) == 1;
  return terminal;
}

// "[=========>          ] 120/235" on one line, redrawn in place (on a terminal only).
inline void progress(std::int64_t done, std::int64_t total) {
  if (!draws_progress() || (mx::dist::is_initialized() && mx::dist::rank() != 0)) return;
  constexpr int width = 30;
  const int filled = total ? static_cast<int>(width * done / total) : width;
  std::string bar(static_cast<std::size_t>(width), ' ');
  for (int i = 0; i < filled; ++i) bar[static_cast<std::size_t>(i)] = '=';
  if (filled < width) bar[static_cast<std::size_t>(filled)] = '>';
  std::fprintf(stderr, "\r  [%s] %lld/%lld", bar.c_str(), static_cast<long long>(done), static_cast<long long>(total));
  if (done == total) std::fprintf(stderr, "\r%*s\r", width + 24, "");
}

// One slice of the batch per context (the whole batch when there is one context).
inline std::vector<nd::NDArray> split(const nd::NDArray& batch, const std::vector<mx::Context>& ctxs) {
  return mx::gluon::utils::split_and_load(batch, ctxs, 0, false);
}

// The images of a batch on its device, resized to resize x resize when resize > 0 (D2L's
// transforms.Resize: bilinear, pixel centres aligned; here on the device, on [0, 1] values).
inline std::vector<nd::NDArray> images(const nd::NDArray& batch, const std::vector<mx::Context>& ctxs,
                                       std::int64_t resize) {
  std::vector<nd::NDArray> xs = split(batch, ctxs);
  if (resize > 0) {
    for (nd::NDArray& x : xs) {
      x = nd::contrib::BilinearResize2D(x, {.height = resize, .width = resize, .align_corners = false});
    }
  }
  return xs;
}

// Runs outside autograd::record(), so that layers such as BatchNorm predict (running statistics).
inline double evaluate_accuracy(mx::gluon::Block& net, gdata::DataLoader& loader,
                                const std::vector<mx::Context>& ctxs, std::optional<mx::DType> amp,
                                std::int64_t resize) {
  const auto autocast = mx::amp::autocast(amp);
  mx::metric::Accuracy accuracy;
  for (auto& [X, y] : loader) {
    const std::vector<nd::NDArray> xs = images(X, ctxs, resize), ys = split(y, ctxs);
    for (std::size_t k = 0; k < xs.size(); ++k) accuracy.update(ys[k], net(xs[k]));
  }
  return accuracy.get().second;
}

struct EpochResult {
  double loss, train_acc, test_acc, seconds;
};

// amp: the low precision of amp::autocast, or none (float32). With a loss scaler on the trainer
// (float16), each loss is scaled before backward and the step unscales.
inline EpochResult train_epoch(mx::gluon::Block& net, gdata::DataLoader& train, gdata::DataLoader& test,
                               mx::gluon::Trainer& trainer, const std::vector<mx::Context>& ctxs,
                               std::optional<mx::DType> amp, std::int64_t resize) {
  const auto start = std::chrono::steady_clock::now();
  mx::gluon::loss::SoftmaxCrossEntropyLoss loss;
  mx::metric::Accuracy accuracy;
  nd::NDArray loss_sum = nd::zeros({1}, ctxs[0]);  // summed on the device: no sync per batch
  std::int64_t samples = 0, step = 0;
  for (auto& [X, y] : train) {
    const std::vector<nd::NDArray> xs = images(X, ctxs, resize), ys = split(y, ctxs);
    std::vector<nd::NDArray> y_hats, losses, heads;
    {
      auto recording = mx::autograd::record();
      const auto autocast = mx::amp::autocast(amp);
      for (std::size_t k = 0; k < xs.size(); ++k) {  // queued on each GPU in turn; they run at once
        y_hats.push_back(net(xs[k]));
        losses.push_back(loss(y_hats.back(), ys[k]));
        heads.push_back(trainer.loss_scaler() ? mx::amp::scale_loss(losses.back(), trainer) : losses.back());
      }
    }
    for (const nd::NDArray& h : heads) h.backward();
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
  return {train_loss, accuracy.get().second, evaluate_accuracy(net, test, ctxs, amp, resize), seconds};
}

// Draws the curves of `csv` (one set of lines per model key) into a PNG next to it.
inline void plot(const std::string& csv, const std::vector<Model>& models) {
  std::string keys;
  for (const Model& model : models) keys += (keys.empty() ? "" : " ") + model.key;
  const std::string each_model = "for [m in '" + keys + "'] '" + csv + "' using (strcol(1) eq m ? $2 : NaN)";
  plot_png(csv, "set xlabel 'epoch'\nset grid\nset key outside\n"
                "plot " + each_model + ":3 with linespoints title m.' loss', \\\n"
                "     " + each_model + ":4 with linespoints title m.' train acc', \\\n"
                "     " + each_model + ":5 with linespoints title m.' test acc'\n");
}

// Trains each model that o.model selects, in the order of `models`; returns the exit code.
inline int train(const Options& o, const std::vector<Model>& models) {
  std::printf("training on");
  for (mx::Context ctx : o.ctxs) {
    std::printf(" %s%s", ctx.str().c_str(), ctx.is_gpu() ? (" (" + mx::gpu_name(ctx.device_id()) + ")").c_str() : "");
  }
  if (o.dist) std::printf(", rank 0 of %d processes (dist_sync)", mx::dist::world_size());
  std::printf("%s\n", o.ctxs.size() > 1 ? ", data-parallel" : "");
  gdata::FashionMNIST train_set(true, o.data_dir, o.subset), test_set(false, o.data_dir, o.subset);
  std::FILE* csv = open_csv(o.csv, "model,epoch,loss,train_acc,test_acc,seconds");
  if (!csv) return 1;
  std::vector<std::pair<std::string, double>> final_test_acc;  // {Model::report, accuracy}
  for (const Model& model : models) {
    if (o.model != "both" && o.model != "all" && o.model != model.key) continue;
    const std::int64_t batch_size = o.batch_size.value_or(model.batch_size), resize = o.resize.value_or(model.resize);
    // Each model from the seed with loaders of its own: trained alone or after another, the same.
    mx::random::seed(o.seed);
    gdata::DataLoader train(train_set, batch_size, true, "keep", gdata::to_tensor);
    gdata::DataLoader test(test_set, batch_size, false, "keep", gdata::to_tensor);
    if (o.dist) train.shard(mx::dist::world_size(), mx::dist::rank());
    nn::Sequential net = model.make();
    net.initialize(*model.init, o.ctxs);
    const double lr = o.lr.value_or(model.lr);
    mx::gluon::Trainer trainer(net.collect_params(), "sgd", {{"learning_rate", lr}}, o.dist ? "dist_sync" : "device");
    const std::optional<mx::DType> amp = o.dtype == "bfloat16"  ? std::optional(mx::DType::bfloat16)
                                         : o.dtype == "float16" ? std::optional(mx::DType::float16)
                                                                : std::nullopt;
    if (amp == mx::DType::float16) mx::amp::init_trainer(trainer);
    const std::string size = resize > 0 ? ", " + std::to_string(resize) + "x" + std::to_string(resize) + " images" : "";
    std::printf("\n%s, lr %g, batch %lld, %d epochs%s%s\n", model.title.c_str(), lr, static_cast<long long>(batch_size),
                o.epochs, size.c_str(), amp ? (", " + o.dtype + " (amp)").c_str() : "");
    std::printf("%6s %9s %10s %9s %9s %12s\n", "epoch", "loss", "train acc", "test acc", "time (s)", "samples/s");
    double test_acc = 0;
    for (int epoch = 1; epoch <= o.epochs; ++epoch) {
      const EpochResult r = train_epoch(net, train, test, trainer, o.ctxs, amp, resize);
      std::printf("%6d %9.4f %10.4f %9.4f %9.2f %12.0f\n", epoch, r.loss, r.train_acc, r.test_acc, r.seconds,
                  static_cast<double>(train_set.size()) / r.seconds);
      std::fflush(stdout);
      std::fprintf(csv, "%s,%d,%g,%g,%g,%g\n", model.key.c_str(), epoch, r.loss, r.train_acc, r.test_acc, r.seconds);
      test_acc = r.test_acc;
    }
    if (!model.report.empty()) final_test_acc.emplace_back(model.report, test_acc);
  }
  const std::optional<std::string> write_failed = close_csv(csv);
  if (!write_failed) {
    std::printf("\ncurves written to %s\n", o.csv.c_str());
    plot(o.csv, models);
  }
  for (const auto& [name, accuracy] : final_test_acc) {
    std::printf("%s test accuracy after %d epochs: %.4f\n", name.c_str(), o.epochs, accuracy);
  }
  if (write_failed) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: writing the curves to %s failed: %s\n", o.csv.c_str(), write_failed->c_str());
    return 1;
  }
  return 0;
}

}  // namespace detail

// The whole program: parses the command line into `app` (its description and footer set by the
// caller; `defaults` holds the defaults of --model and --csv, lr_default describes each model's rate
// for --help), then trains. Returns the exit code: 2 for a bad command line, 1 for an error.
inline int train_on_fashion_mnist(CLI::App& app, int argc, char** argv, const std::vector<Model>& models,
                                  Options defaults, const std::string& lr_default) {
  try {
    if (const std::optional<int> exit_code = detail::parse(app, argc, argv, models, lr_default, defaults)) {
      return *exit_code;
    }
    const int status = detail::train(defaults, models);
    if (defaults.dist) mx::dist::shutdown();
    return status;
  } catch (const mx::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

}  // namespace tutorial
