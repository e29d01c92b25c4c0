// ResNet-18 on CIFAR-10, as D2L (MXNet edition, "Training on Multiple GPUs" and the Kaggle CIFAR-10
// chapter) trains it: the CIFAR-style ResNet-18 (a 3x3 stem, no max-pool), the standard
// augmentation (pad 4 and a random 32x32 crop, a left-right flip, per-channel normalisation), SGD
// with momentum 0.9 and weight decay 5e-4 on a cosine schedule, mixed precision on GPUs, on every
// GPU (data-parallel) or on cpu(0).
//
//   cifar10 [--data DIR] [--gpus N | --ctx cpu|gpu|gpu:N] [--epochs 30] [--lr 0.1] [--batch-size 256]
//           [--dtype bfloat16|float16|float32] [--augment-on device|workers] [--workers N] [--subset N]
//           [--csv FILE] [--seed S]
//
// The data: the binary version of CIFAR-10 (cifar-10-binary.tar.gz from
// https://www.cs.toronto.edu/~kriz/cifar.html, unpacked: data_batch_1.bin ... data_batch_5.bin and
// test_batch.bin), from --data, else $CIFAR10_DIR, else ~/.mxnet/datasets/cifar10 (where MXNet
// keeps it); nothing is downloaded. The augmentation runs per batch on the first GPU
// (--augment-on device, the default with a GPU: one op per transform over the batch) or per
// sample on worker threads (--augment-on workers); one seed gives the same epoch either way.
// Per epoch it prints the loss, train and test accuracy, time and images/s, writes the curves to
// CSV and, when gnuplot is installed, a PNG next to it; at the end the final test accuracy.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gluon/amp.hpp>
#include <gluon/data.hpp>
#include <gluon/loss.hpp>
#include <gluon/lr_scheduler.hpp>
#include <gluon/metric.hpp>
#include <gluon/nn.hpp>
#include <gluon/trainer.hpp>
#include <gluon/utils.hpp>

#include "tutorials/modern_cnn/models.hpp"
#include "tutorials/training.hpp"

namespace {

namespace nd = mx::nd;
namespace nn = mx::gluon::nn;
namespace gdata = mx::gluon::data;
namespace T = mx::gluon::data::vision::transforms;

// D2L's resnet18 for 32x32 images: a 3x3 stem of 64 channels, four stages of two residual blocks
// (64, 128, 256, 512 channels), global average pooling, a dense layer per class.
nn::Sequential resnet18(std::int64_t classes) {
  namespace modern = tutorial::modern;
  nn::Sequential net;
  net.add(nn::Conv2D(64, 3, {.padding = 1}), nn::BatchNorm(), nn::Activation("relu"));
  net.add(modern::resnet_block(64, 2, true), modern::resnet_block(128, 2), modern::resnet_block(256, 2),
          modern::resnet_block(512, 2));
  net.add(nn::GlobalAvgPool2D(), nn::Dense(classes));
  return net;
}

// CIFAR-10's per-channel mean and deviation (of the training images, on [0, 1]).
const std::vector<float> kMean{0.4914f, 0.4822f, 0.4465f}, kStd{0.2023f, 0.1994f, 0.2010f};

struct Options {
  std::vector<mx::Context> ctxs;
  std::string data_dir;
  int epochs = 30;
  double lr = 0.1;
  std::int64_t batch_size = 256;
  std::string dtype;  // default: bfloat16 on GPUs, float32 on cpu(0)
  std::string augment_on;  // default: device with a GPU, workers on cpu(0)
  int workers = 4;
  std::int64_t subset = -1;
  std::string csv = "cifar10.csv";
  std::uint64_t seed = 0;
};

// A loader of the training or test images, transformed per batch on ctx or per sample on workers.
gdata::DataLoader make_loader(const gdata::vision::CIFAR10& set, const Options& o, bool train) {
  const T::Compose normalize(T::ToTensor(), T::Normalize(kMean, kStd));
  const T::Compose augment(T::RandomCrop(32, 4), T::RandomFlipLeftRight(), T::ToTensor(), T::Normalize(kMean, kStd));
  const T::Compose& transform = train ? augment : normalize;
  const std::string last = train ? "discard" : "keep";
  if (o.augment_on == "workers") {
    return gdata::DataLoader(gdata::transform_first(set, transform), o.batch_size, train, last, {}, o.workers);
  }
  gdata::DataLoader loader(set, o.batch_size, train, last);
  loader.transform_on(o.ctxs[0], transform);
  return loader;
}

double evaluate(mx::gluon::Block& net, gdata::DataLoader& test, const Options& o, std::optional<mx::DType> amp) {
  const auto autocast = mx::amp::autocast(amp);
  mx::metric::Accuracy accuracy;
  for (auto& [X, y] : test) {
    const std::vector<nd::NDArray> xs = tutorial::detail::split(X, o.ctxs), ys = tutorial::detail::split(y, o.ctxs);
    for (std::size_t k = 0; k < xs.size(); ++k) accuracy.update(ys[k], net(xs[k]));
  }
  return accuracy.get().second;
}

int run(const Options& o) {
  std::printf("training on");
  for (const mx::Context ctx : o.ctxs) {
    std::printf(" %s%s", ctx.str().c_str(), ctx.is_gpu() ? (" (" + mx::gpu_name(ctx.device_id()) + ")").c_str() : "");
  }
  std::printf("%s\n", o.ctxs.size() > 1 ? ", data-parallel" : "");
  const gdata::vision::CIFAR10 train_set(true, o.data_dir, o.subset), test_set(false, o.data_dir, o.subset);
  std::printf("CIFAR-10 from %s: %lld training and %lld test images\n", train_set.root().c_str(),
              static_cast<long long>(train_set.size()), static_cast<long long>(test_set.size()));
  mx::random::seed(o.seed);
  gdata::DataLoader train = make_loader(train_set, o, true), test = make_loader(test_set, o, false);
  if (train.size() == 0) {
    std::fprintf(stderr, "error: %lld training images make no batch of %lld\n", static_cast<long long>(train_set.size()),
                 static_cast<long long>(o.batch_size));
    return 1;
  }
  nn::Sequential net = resnet18(10);
  net.initialize(mx::init::Xavier(), o.ctxs);
  const auto schedule = std::make_shared<mx::lr_scheduler::CosineScheduler>(o.epochs * train.size(), o.lr);
  mx::gluon::Trainer trainer(net.collect_params(), "sgd", {{"momentum", 0.9}, {"wd", 5e-4}}, schedule);
  const std::optional<mx::DType> amp = o.dtype == "bfloat16"  ? std::optional(mx::DType::bfloat16)
                                       : o.dtype == "float16" ? std::optional(mx::DType::float16)
                                                              : std::nullopt;
  if (amp == mx::DType::float16) mx::amp::init_trainer(trainer);
  std::printf("\nResNet-18, lr %g (cosine), batch %lld, %d epochs, %s, augmentation on %s\n", o.lr,
              static_cast<long long>(o.batch_size), o.epochs, o.dtype.c_str(),
              o.augment_on == "workers" ? ("cpu(0), " + std::to_string(o.workers) + " workers").c_str()
                                        : o.ctxs[0].str().c_str());
  std::printf("%6s %9s %10s %9s %9s %12s\n", "epoch", "loss", "train acc", "test acc", "time (s)", "images/s");
  std::FILE* csv = tutorial::open_csv(o.csv, "model,epoch,loss,train_acc,test_acc,seconds");
  if (!csv) return 1;
  mx::gluon::loss::SoftmaxCrossEntropyLoss loss;
  double test_acc = 0;
  for (int epoch = 1; epoch <= o.epochs; ++epoch) {
    const auto start = std::chrono::steady_clock::now();
    mx::metric::Accuracy accuracy;
    nd::NDArray loss_sum = nd::zeros({1}, o.ctxs[0]);
    std::int64_t images = 0, step = 0;
    for (auto& [X, y] : train) {
      const std::vector<nd::NDArray> xs = tutorial::detail::split(X, o.ctxs), ys = tutorial::detail::split(y, o.ctxs);
      std::vector<nd::NDArray> y_hats, losses, heads;
      {
        auto recording = mx::autograd::record();
        const auto autocast = mx::amp::autocast(amp);
        for (std::size_t k = 0; k < xs.size(); ++k) {
          y_hats.push_back(net(xs[k]));
          losses.push_back(loss(y_hats.back(), ys[k]));
          heads.push_back(trainer.loss_scaler() ? mx::amp::scale_loss(losses.back(), trainer) : losses.back());
        }
      }
      for (const nd::NDArray& h : heads) h.backward();
      trainer.step(X.shape()[0]);
      for (std::size_t k = 0; k < xs.size(); ++k) {
        loss_sum += losses[k].sum().as_in_context(o.ctxs[0]);
        accuracy.update(ys[k], y_hats[k]);
      }
      images += X.shape()[0];
      tutorial::detail::progress(++step, train.size());
    }
    const double train_loss = loss_sum.asscalar<float>() / static_cast<double>(images);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    test_acc = evaluate(net, test, o, amp);
    std::printf("%6d %9.4f %10.4f %9.4f %9.2f %12.0f\n", epoch, train_loss, accuracy.get().second, test_acc, seconds,
                static_cast<double>(images) / seconds);
    std::fflush(stdout);
    std::fprintf(csv, "resnet18,%d,%g,%g,%g,%g\n", epoch, train_loss, accuracy.get().second, test_acc, seconds);
  }
  if (const std::optional<std::string> failed = tutorial::close_csv(csv)) {
    std::fprintf(stderr, "error: writing the curves to %s failed: %s\n", o.csv.c_str(), failed->c_str());
    return 1;
  }
  std::printf("\ncurves written to %s\n", o.csv.c_str());
  tutorial::plot_png(o.csv, "set xlabel 'epoch'\nset grid\nset key outside\nplot '" + o.csv +
                                "' using 2:3 with linespoints title 'loss', '' using 2:4 with linespoints title "
                                "'train acc', '' using 2:5 with linespoints title 'test acc'\n");
  std::printf("ResNet-18 test accuracy after %d epochs: %.4f\n", o.epochs, test_acc);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ResNet-18 trained on CIFAR-10 with the standard augmentation (pad 4 + random crop 32, flip, "
               "normalize), SGD with momentum on a cosine schedule, mixed precision, on every GPU or cpu(0)."};
  app.footer("Quick check: cifar10 --ctx cpu --subset 512 --epochs 1");
  Options o;
  std::string ctx;
  int gpus = 0;
  app.add_option("--ctx", ctx, "train on this one context: cpu, gpu (that is gpu:0) or gpu:N")
      ->type_name("CTX")
      ->default_str("every GPU, else cpu")
      ->check(tutorial::existing_context());
  app.add_option("--gpus", gpus, "train data-parallel on gpu:0 .. gpu:N-1")
      ->default_str("every GPU, else cpu")
      ->check(tutorial::detail::gpu_count())
      ->excludes("--ctx");
  const char* root_variable = std::getenv("CIFAR10_DIR");
  const std::string where = gdata::vision::CIFAR10::default_root() +
                            (root_variable && *root_variable ? " ($CIFAR10_DIR)" : ", or $CIFAR10_DIR when set");
  app.add_option("--data", o.data_dir, "the folder of CIFAR-10's binary files (data_batch_1.bin ... test_batch.bin)")
      ->type_name("DIR")
      ->default_str(where)
      ->check(cli::existing_folder("without --data the data set is read from " + where));
  app.add_option("--epochs", o.epochs, "epochs")->capture_default_str()->check(cli::integer(1, 1'000'000));
  app.add_option("--lr", o.lr, "the SGD learning rate the cosine schedule starts from")
      ->capture_default_str()
      ->check(cli::positive_number());
  app.add_option("--batch-size", o.batch_size, "images per batch (split over the GPUs)")
      ->capture_default_str()
      ->check(cli::integer(1));
  app.add_option("--dtype", o.dtype, "compute in bfloat16 / float16 under amp (float32 parameters), or float32")
      ->default_str("bfloat16 on GPUs, float32 on cpu")
      ->check(CLI::IsMember({"float32", "bfloat16", "float16"}));
  app.add_option("--augment-on", o.augment_on,
                 "augment per batch on the first context (device) or per sample on worker threads (workers)")
      ->default_str("device with a GPU, else workers")
      ->check(CLI::IsMember({"device", "workers"}));
  app.add_option("--workers", o.workers, "worker threads for --augment-on workers")
      ->capture_default_str()
      ->check(cli::integer(1, 256));
  app.add_option("--subset", o.subset, "use only the first N images of each split")
      ->default_str("all")
      ->check(cli::integer(1));
  app.add_option("--csv", o.csv, "where to write the curves; a PNG of them goes next to it")
      ->type_name("FILE")
      ->capture_default_str()
      ->check(cli::file_to_write());
  app.add_option("--seed", o.seed, "the random seed of the initial values, the shuffling and the augmentation")
      ->capture_default_str()
      ->check(cli::integer(0));
  if (std::optional<int> exit_code = cli::parse(app, argc, argv)) return *exit_code;
  try {
    if (!ctx.empty()) {
      o.ctxs = {*tutorial::context_named(ctx)};
    } else if (gpus > 0) {
      for (int i = 0; i < gpus; ++i) o.ctxs.push_back(mx::gpu(i));
    } else {
      o.ctxs = mx::try_all_gpus();
    }
    const bool gpu = o.ctxs[0].is_gpu();
    if (o.dtype.empty()) o.dtype = gpu ? "bfloat16" : "float32";
    if (o.augment_on.empty()) o.augment_on = gpu ? "device" : "workers";
    return run(o);
  } catch (const mx::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
