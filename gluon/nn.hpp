#pragma once
// Everything of mx::gluon::nn: #include <gluon/nn.hpp>.
#include "gluon/block.hpp"
#include "gluon/init.hpp"
#include "gluon/nn/activation.hpp"
#include "gluon/nn/batch_norm.hpp"
#include "gluon/nn/conv.hpp"
#include "gluon/nn/dense.hpp"
#include "gluon/nn/dropout.hpp"
#include "gluon/nn/flatten.hpp"
#include "gluon/nn/sequential.hpp"
#include "gluon/parameter.hpp"
#include "gluon/parameter_dict.hpp"
#include "ndarray/ndarray.hpp"
