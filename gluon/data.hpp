#pragma once
// Everything of mx::gluon::data: #include <gluon/data.hpp>.
#include "gluon/data/data_loader.hpp"
#include "gluon/data/dataset.hpp"
#include "gluon/data/fashion_mnist.hpp"
#include "gluon/data/sample_random.hpp"
#include "gluon/data/sampler.hpp"
#include "gluon/data/text.hpp"
#include "gluon/data/transforms.hpp"
#include "gluon/data/vision/cifar.hpp"
#include "gluon/data/vision/image_datasets.hpp"
#include "gluon/data/vision/transforms.hpp"
#include "ndarray/ndarray.hpp"
