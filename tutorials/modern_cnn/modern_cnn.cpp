// D2L's modern convolutional networks (MXNet edition 0.17, chapter "Modern Convolutional Neural
// Networks") in C++: AlexNet, VGG, NiN, GoogLeNet, ResNet and DenseNet of
// tutorials/modern_cnn/models.hpp on Fashion-MNIST, with the book's learning rates, batch sizes
// and image sizes, 10 epochs, SGD and Xavier initialisation, as its train_ch6 trains them.
//
//   modern_cnn [--gpus N | --ctx cpu|gpu|gpu:N] [--model alexnet|vgg|nin|googlenet|resnet|densenet|all]
//              [--epochs 10] [--lr LR] [--batch-size N] [--resize N] [--subset N] [--csv FILE] [--data DIR]
//
// --help lists them with their defaults; NDG_TRAIN_EPOCHS, when set, is the default of --epochs.
// The images are resized on the device (224x224 for AlexNet, VGG and NiN, 96x96 for the others).
// Per epoch it prints the loss, train and test accuracy and time, writes the curves to CSV and,
// when gnuplot is installed, draws them into a PNG next to the CSV; at the end, each model's final
// test accuracy. The training loop is tutorials/training.hpp, shared with the other tutorials.
#include <vector>

#include "tutorials/modern_cnn/models.hpp"
#include "tutorials/training.hpp"

int main(int argc, char** argv) {
  namespace modern = tutorial::modern;
  const mx::init::InitializerRef xavier = mx::init::Xavier();
  // {key, title, report, lr, init, make, batch size, image size}: the book's settings.
  const std::vector<tutorial::Model> models = {
      {"alexnet", "AlexNet", "AlexNet", 0.01, xavier, modern::alexnet, 128, 224},
      {"vgg", "VGG-11 (a quarter of the channels)", "VGG", 0.05, xavier, [] { return modern::vgg(4); }, 128, 224},
      {"nin", "NiN", "NiN", 0.1, xavier, modern::nin, 128, 224},
      {"googlenet", "GoogLeNet", "GoogLeNet", 0.1, xavier, modern::googlenet, 128, 96},
      {"resnet", "ResNet-18", "ResNet", 0.05, xavier, modern::resnet, 256, 96},
      {"densenet", "DenseNet", "DenseNet", 0.1, xavier, modern::densenet, 256, 96},
  };
  CLI::App app{"D2L's modern convolutional networks (AlexNet, VGG, NiN, GoogLeNet, ResNet, DenseNet) trained with "
               "SGD on Fashion-MNIST with the book's settings, on every GPU (data-parallel) or on cpu(0)."};
  app.footer("Quick check: modern_cnn --ctx cpu --model all --resize 67 --subset 256 --epochs 1");
  return tutorial::train_on_fashion_mnist(app, argc, argv, models, {.model = "resnet", .csv = "modern_cnn.csv"},
                                          "the book's: alexnet 0.01, vgg 0.05, nin 0.1, googlenet 0.1, resnet 0.05, "
                                          "densenet 0.1");
}
