// D2L chapter 3-4 in C++: softmax regression and the concise MLP (784-256-10, ReLU) on
// Fashion-MNIST, batch 256, SGD, trained with autograd and a Trainer.
//
//   train_fashion_mnist [--gpus N | --ctx cpu|gpu|gpu:N] [--model softmax|mlp|both] [--epochs 10]
//                       [--lr LR] [--batch-size 256] [--subset N] [--csv FILE] [--data DIR]
//
// --help lists them with their defaults; NDG_TRAIN_EPOCHS, when set, is the default of --epochs
// (NDG_TRAIN_EPOCHS=1 for a quick check). By default it trains on every GPU (cpu(0) when there is
// none). With several GPUs it is data-parallel, as D2L's multi-GPU chapter: each batch is split
// over the GPUs with split_and_load, each GPU runs forward and backward on its slice, and
// trainer.step sums the gradients across them (NCCL) before the identical update on every copy.
//
// Per epoch it prints the loss, train accuracy, test accuracy and time, writes the curves to CSV
// and, when gnuplot is installed, draws them into a PNG next to the CSV. The training loop is
// tutorials/training.hpp, shared with tutorials/lenet.
#include <vector>

#include <gluon/nn.hpp>

#include "tutorials/training.hpp"

namespace nn = mx::gluon::nn;

int main(int argc, char** argv) {
  const std::vector<tutorial::Model> models = {
      {"softmax", "softmax regression", "", 0.1, mx::init::Normal(0.01), [] {
         nn::Sequential net;
         net.add(nn::Flatten(), nn::Dense(10));
         return net;
       }},
      {"mlp", "MLP 784-256-10", "MLP", 0.5, mx::init::Normal(0.01), [] {
         nn::Sequential net;
         net.add(nn::Flatten(), nn::Dense(256, "relu"), nn::Dense(10));
         return net;
       }},
  };
  CLI::App app{"D2L chapters 3-4: softmax regression and an MLP (784-256-10, ReLU) trained with SGD on "
               "Fashion-MNIST, on every GPU (data-parallel) or on cpu(0)."};
  app.footer("Quick check: NDG_TRAIN_EPOCHS=1 train_fashion_mnist --ctx cpu --subset 2048");
  return tutorial::train_on_fashion_mnist(app, argc, argv, models,
                                          {.model = "both", .csv = "train_fashion_mnist.csv"},
                                          "0.1 for softmax regression, 0.5 for the MLP");
}
