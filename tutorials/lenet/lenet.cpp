// D2L 7.6 (LeNet) and 8.5 (LeNet with batch normalization, the concise version) in C++: the
// convolutional networks of tutorials/lenet/models.hpp on Fashion-MNIST, batch 256, SGD, Xavier
// initialisation, as D2L's train_ch6 trains them.
//
//   lenet [--gpus N | --ctx cpu|gpu|gpu:N] [--model lenet|bn-lenet|both] [--epochs 10] [--lr LR]
//         [--batch-size 256] [--subset N] [--csv FILE] [--data DIR]
//
// --help lists them with their defaults; NDG_TRAIN_EPOCHS, when set, is the default of --epochs.
// By default it trains LeNet (lr 0.9) on every GPU, data-parallel (cpu(0) when there is none);
// --model bn-lenet trains BN-LeNet (lr 1.0) instead. Per epoch it prints the loss, train and test
// accuracy and time, writes the curves to CSV and, when gnuplot is installed, draws them into a
// PNG next to the CSV; at the end, the final test accuracy. The training loop is
// tutorials/training.hpp, shared with tutorials/train_fashion_mnist.
#include <vector>

#include "tutorials/lenet/models.hpp"
#include "tutorials/training.hpp"

int main(int argc, char** argv) {
  const std::vector<tutorial::Model> models = {
      {"lenet", "LeNet", "LeNet", 0.9, mx::init::Xavier(), [] { return tutorial::lenet(); }},
      {"bn-lenet", "BN-LeNet", "BN-LeNet", 1.0, mx::init::Xavier(), [] { return tutorial::lenet(true); }},
  };
  CLI::App app{"D2L 7.6 and 8.5: LeNet and LeNet with batch normalization trained with SGD on Fashion-MNIST, "
               "on every GPU (data-parallel) or on cpu(0)."};
  app.footer("Quick check: lenet --ctx cpu --subset 2048 --epochs 1");
  return tutorial::train_on_fashion_mnist(app, argc, argv, models, {.model = "lenet", .csv = "lenet.csv"},
                                          "0.9 for LeNet, 1.0 for BN-LeNet");
}
