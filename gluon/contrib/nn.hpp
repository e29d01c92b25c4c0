#pragma once
// mx::gluon::contrib::nn, as mx.gluon.contrib.nn: #include <gluon/contrib/nn.hpp>.
#include "gluon/contrib/nn/sync_batch_norm.hpp"
